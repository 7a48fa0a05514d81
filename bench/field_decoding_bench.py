"""Field-by-field decoding vs one grammar over the whole answer schema (models/fields.py, issue 33), side by side on
the same prompts, same process: wall seconds, sampled tokens, and whether the answers agree.

    python bench/field_decoding_bench.py --items 8      # RGB zh_fact items 60.., one positive + three negatives each
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "rgb" / "zh_fact.json")
    a = ap.parse_args()
    from ragclinic.config import Settings
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS
    from ragclinic.pipeline.generate.base import GenerateInput
    from ragclinic.pipeline.generate.prompt import build_messages
    from ragclinic.pipeline.generate.structured import SCHEMAS, parse_reply
    from ragclinic.types import Chunk, DocInfo, GateDecision, Hit, Passage

    items = [json.loads(x) for x in a.data.read_text(encoding="utf-8").splitlines() if x.strip()][60:60 + a.items]
    models = {"fields": LlamaModel(WEIGHTS["local"], Settings(llm_field_decoding=True)),
              "grammar": LlamaModel(WEIGHTS["local"], Settings(llm_field_decoding=False))}
    rows = {k: [] for k in models}
    same = 0
    for it in items:
        texts = [it["positive"][0][:300]] + [p[:300] for p in it["negative"][:3]]
        ps = tuple(Passage(n, Hit(Chunk(f"c{n}", f"d{n}", t, 0, len(t), (), None, "zh", 80, 0), 1.0, (), n),
                           DocInfo(f"d{n}", f"/d{n}.txt", ""), support=0.9) for n, t in enumerate(texts, start=1))
        msgs = build_messages(GenerateInput(it["query"], ps, GateDecision("answer", "factual", 0.9, "")))
        answers = {}
        for name, m in models.items():
            t0 = time.perf_counter()
            done = m.chat(msgs, max_tokens=96, schema=SCHEMAS["short"])
            rows[name].append((time.perf_counter() - t0, done.completion_tokens))
            answers[name] = parse_reply(done.text, "short").items[0].text if parse_reply(done.text, "short").items else ""
        same += answers["fields"] == answers["grammar"]
        print(json.dumps({"q": it["query"], **answers}, ensure_ascii=False), flush=True)
    out = {name: {"total_s": round(sum(s for s, _ in r), 2), "p50_s": round(statistics.median(s for s, _ in r), 2),
                  "p50_sampled_tokens": statistics.median(n for _, n in r)} for name, r in rows.items()}
    out["same_answer"] = f"{same}/{len(items)}"
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
