"""What the answerability probe costs an answer, and whether it changes one: the 1.5B model loaded twice in one
process (without the eval callback, and with it), the same structured short-answer prompts through both,
alternating, each call from a cleared result memo. Reports the median time of each, the median extra per answer
(the callback's asks during the prompt and the generated tokens, the copy of one row, the probe's dot product),
and whether every greedy answer is identical.

    PYTHONPATH=training .venv/bin/python bench/probe_overhead.py --n 12
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from ragclinic.config import Settings  # noqa: E402
from ragclinic.models.llama import LlamaModel  # noqa: E402
from ragclinic.models.weights import WEIGHTS  # noqa: E402
from ragclinic.pipeline.generate.structured import SCHEMAS  # noqa: E402
from ragclinic.verify.probe import SHIPPED, AnswerabilityProbe, weights_path  # noqa: E402
from ragclinic_training.probe_data import messages_for  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--set", type=Path, default=Path("bench/out/halueval-test-rgb-heldout.jsonl"))
    a = ap.parse_args()
    items = [json.loads(x) for x in a.set.read_text().splitlines() if x.strip()][:a.n]
    prompts = [messages_for(it["query"], [it["positive"][0][:400]] + [p[:400] for p in it["negative"][:2]])
               for it in items]
    base = Settings.load(Path("/tmp/probe-overhead-kb"), llm="local", llm_isolation="inline")
    plain = LlamaModel(WEIGHTS["local"], base)
    capturing = LlamaModel(WEIGHTS["local"], base.model_copy(update={"llm_hidden_capture": True}))
    probe = AnswerabilityProbe(weights_path("local"), SHIPPED["local"][1] or None, capturing.model_id)
    t_plain, t_probe, same = [], [], 0
    for i, msgs in enumerate(prompts):
        order = (("plain", "probe") if i % 2 == 0 else ("probe", "plain"))
        out = {}
        for arm in order:
            m = plain if arm == "plain" else capturing
            m._memo.clear()
            t0 = time.perf_counter()
            if arm == "plain":
                out[arm] = m.chat(msgs, max_tokens=64, schema=SCHEMAS["short"])
            else:
                done = m.chat(msgs, max_tokens=64, schema=SCHEMAS["short"], hidden_layers=probe.layers)
                probe.score(done.hidden)
                out[arm] = done
            (t_plain if arm == "plain" else t_probe).append(time.perf_counter() - t0)
        same += out["plain"].text == out["probe"].text
        print(i, round(t_plain[-1], 2), round(t_probe[-1], 2), out["plain"].text[:60], flush=True)
    extra = [b - a for a, b in zip(t_plain, t_probe)]
    print(json.dumps({"prompts": len(prompts), "identical_answers": same,
                      "median_s_plain": round(statistics.median(t_plain), 3),
                      "median_s_probe": round(statistics.median(t_probe), 3),
                      "median_extra_ms": round(1000 * statistics.median(extra), 1),
                      "ratio_of_medians": round(statistics.median(t_probe) / statistics.median(t_plain), 3)}, indent=1))


if __name__ == "__main__":
    main()
