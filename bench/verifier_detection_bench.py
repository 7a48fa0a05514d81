"""HaluEval QA hallucination detection on the records the learned verifier never trained on (its test split: the
sha256 of the question, training/ragclinic_training/pairs.py), with the doctor's tiered faithfulness check (``eval detection``:
rules, then the judge where the rules are unsure): rules alone, the learned verifier as the judge, and the
learned verifier's support head alone (P(supported) < its threshold = hallucinated). Both HaluEval files hold
the same 500 questions with different hallucinated answers; the test split is 20% of the questions.

    PYTHONPATH=training python bench/verifier_detection_bench.py --halueval ../shared/data/halueval/qa_one-turn_data.json \
        --halueval ../shared/data/halueval/qa_multi-turn_data.json
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from ragclinic.eval.datasets import load
from ragclinic.eval.metrics import classification, expected_calibration_error
from ragclinic.eval.tasks.detection import run_detection
from ragclinic.verify import create_verifier
from ragclinic.verify.base import judge_text
from ragclinic_training.pairs import split_of

from output import emit  # noqa: E402  (bench/ is on sys.path when a bench runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, action="append", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    items = []
    for i, path in enumerate(a.halueval):
        data = load(f"halueval:{path}")
        items += [replace(it, id=f"{i}:{it.id}") for it in data.data if split_of("halueval:" + it.question) == a.split]
    # the second file repeats the first file's right answers: keep each (question, answer) pair once
    seen, uniq = set(), []
    for it in items:
        if (it.question, it.answer) not in seen:
            seen.add((it.question, it.answer))
            uniq.append(it)
    loaded = replace(data, data=uniq)
    v = create_verifier("learned")
    result = {"split": a.split, "pairs": len(uniq), "hallucinated": sum(it.hallucinated for it in uniq)}
    for name, judge in (("rules", None), ("rules+learned", v)):
        t0 = time.perf_counter()
        r = run_detection(loaded, judge=judge)
        result[name] = r["metrics"]["unsupported_claim"] | {"seconds_per_pair": round(
            (time.perf_counter() - t0) / len(uniq), 4)}
    t0 = time.perf_counter()
    risk = [1 - v.judge("support", it.context, judge_text(it.answer, it.question)) for it in uniq]
    thr = 1 - v.threshold("support")
    gold = [it.hallucinated for it in uniq]
    m = classification([r >= thr for r in risk], gold)
    m["ece"] = expected_calibration_error(risk, gold)
    result["learned_support_head"] = {k: round(x, 4) if isinstance(x, float) else x for k, x in m.items()} | {
        "seconds_per_pair": round((time.perf_counter() - t0) / len(uniq), 4)}
    emit(result, a.out)


if __name__ == "__main__":
    main()
