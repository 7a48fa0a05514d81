"""Issue 17's causal figure: causal-chain coverage and wrong-direction answers on the 32 questions of
bench/reason/causal_set.py (EN and ZH), plain RAG (a knowledge base without `--causal`) vs causal-aware (the same
documents ingested with `--causal`), side by side in one run, the doctor off in both. Also the question-type rules'
rate of `causal` on causal questions and on non-causal ones (the tools and ambiguity sets, RGB zh questions).

    python bench/causal_bench.py --out bench/out/causal [--limit N]

Coverage: the share of a gold chain's nodes the answer mentions (any of the node's key words). Wrong direction: a
sentence that states a gold effect before a causal cue and its cause after it ("shortages led to the closure").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).parent))

from reason import ambiguity_set, tools_set  # noqa: E402
from reason.causal_set import questions, write_corpus  # noqa: E402

from ragclinic import Clinic  # noqa: E402
from ragclinic.pipeline.gate.qtype import classify_rules  # noqa: E402

# forward cues only: "B was caused by A" / "B because of A" / "B是因为A" state A → B and are not wrong
_CUE = (r"(led to|leads to|lead to|(?<!was )(?<!were )(?<!is )(?<!are )caused(?! by)|causes(?! by)|resulted in|"
        r"triggered(?! by)|drove|→|导致|造成|引发|使得|引起)")


def coverage(answer: str, chain: list[list[str]]) -> float:
    low = answer.lower()
    return sum(any(k.lower() in low for k in node) for node in chain) / len(chain)


def wrong_direction(answer: str, pairs: list[list[str]]) -> bool:
    for sent in re.split(r"(?<=[.!?。！？\n])", answer.lower()):
        for cause, effect in pairs:
            if re.search(re.escape(effect.lower()) + r"[^.。]*?" + _CUE + r"[^.。]*?" + re.escape(cause.lower()), sent):
                return True
    return False


def qtype_rates() -> dict:
    causal = [q["question"] for q in questions()]
    other = [q["question"] for q in tools_set.questions()] + [q["question"] for q in ambiguity_set.questions()]
    rgb = Path(__file__).resolve().parents[2] / "shared/data/rgb/zh_fact.json"
    if rgb.exists():
        other += [json.loads(x)["query"] for x in rgb.read_text(encoding="utf-8").splitlines()[:200] if x.strip()]
    hit = lambda qs: round(sum(classify_rules(q)[0] == "causal" for q in qs) / len(qs), 3)  # noqa: E731
    return {"causal_recall": hit(causal), "n_causal": len(causal), "false_causal_rate": hit(other), "n_other": len(other)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--llm", default="local")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    docs = a.out / "docs"
    if not docs.exists():
        write_corpus(docs)
    for name, extra in (("kb-plain", {}), ("kb-causal", {"causal_links": True})):
        if not (a.out / name).exists():
            with Clinic.open(a.out / name, llm="none", **extra) as c:
                c.ingest([docs])
    rows_path = a.out / "rows.jsonl"
    done = {(r["id"], r["arm"]) for r in map(json.loads, rows_path.read_text().splitlines())} if rows_path.exists() else set()
    with Clinic.open(a.out / "kb-causal", llm=a.llm) as causal:
        plain = Clinic.open(a.out / "kb-plain", llm=a.llm, model=causal.lm)
        with rows_path.open("a") as f:
            for q in questions()[: a.limit or None]:
                for arm, clinic in (("plain", plain), ("causal", causal)):
                    if (q["id"], arm) in done:
                        continue
                    t0 = time.perf_counter()
                    ans = clinic.ask(q["question"], doctor=False, cache=False)
                    row = {"id": q["id"], "lang": q["lang"], "arm": arm, "question": q["question"], "answer": ans.text,
                           "coverage": coverage(ans.text, q["chain"]), "wrong_direction": wrong_direction(ans.text, q["pairs"]),
                           "evidence_strength": ans.evidence_strength, "chain": [dict(c) for c in ans.causal_chain],
                           "seconds": round(time.perf_counter() - t0, 2), "refused": ans.refused}
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                    f.flush()
                    print(arm, q["id"], round(row["coverage"], 2), row["wrong_direction"], row["seconds"],
                          ans.text.replace("\n", " / ")[:120], flush=True)
        plain.close()
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
    pairs = {q["id"]: q["pairs"] for q in questions()}
    for r in rows:  # from the answer text, so a re-run of the summary uses the current rule
        r["wrong_direction"] = wrong_direction(r["answer"], pairs[r["id"]])
    out = {"qtype": qtype_rates()}
    for arm in ("plain", "causal"):
        sub = [r for r in rows if r["arm"] == arm]
        out[arm] = {"n": len(sub), "coverage": round(statistics.mean(r["coverage"] for r in sub), 3),
                    "coverage_en": round(statistics.mean([r["coverage"] for r in sub if r["lang"] == "en"] or [0]), 3),
                    "coverage_zh": round(statistics.mean([r["coverage"] for r in sub if r["lang"] == "zh"] or [0]), 3),
                    "wrong_direction": sum(r["wrong_direction"] for r in sub), "refused": sum(r["refused"] for r in sub),
                    "p50_s": round(statistics.median(r["seconds"] for r in sub), 1),
                    "strength": {s: sum(r["evidence_strength"] == s for r in sub) for s in
                                 ("strong", "limited", "conflicting", "none", "")}}
    (a.out / "summary.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
