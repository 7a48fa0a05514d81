"""The shipped failure forecast on sets it was neither fitted nor tuned on: `eval rag --out` folders (items.jsonl
and each item's knowledge base with its traces). Each case's forecast is read off its plain run's trace (the
state after the gate), and scored against what the case was:

- ``insufficient_evidence``: a negative-only case (no passage holds the answer);
- ``noisy_context``: a case with the answer among its passages that the plain pipeline got wrong (reported even
  though no licensed head ships for it; a knowledge base's own `doctor train` can fit one).

RGB's items each have their own five passages, all of which reach the context, so a retrieval miss cannot happen
there (the shared-corpus test split of `make train-forecast` measures that kind).

    .venv/bin/python bench/forecast_eval.py bench/out/probe/e2e-rgb-off bench/out/probe/e2e-en-off \\
        --out bench/out/forecast/third-sets.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from output import emit  # noqa: E402


def cases(folder: Path):
    from ragclinic.config import Settings
    from ragclinic.doctor.forecast import features
    from ragclinic.store.kb import KnowledgeBase
    from ragclinic.trace.store import load_trace

    for line in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        base = item.get("baseline") or {}
        if not base.get("trace_id"):
            continue
        kb = KnowledgeBase.open(Settings.load(ROOT / item["kb"]))
        try:
            trace = load_trace(kb.db, base["trace_id"], exact=True)
            x = features(trace.state_after("gate"))
        finally:
            kb.close()
        yield item, base, x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    import numpy as np

    from ragclinic.doctor import forecast
    from ragclinic.doctor.forecast_fit import auroc

    f = forecast.read(forecast.SHIPPED, forecast.SHIPPED_SHA256)
    result: dict = {"forecast": f.name, "sets": {}}
    for folder in a.folders:
        rows = [(item, base, x) for item, base, x in cases(folder)]
        xs = np.asarray([x for _, _, x in rows])
        neg = np.asarray([int(item["expect_refusal"]) for item, _, _ in rows])
        wrong = np.asarray([int(not item["expect_refusal"] and not base.get("correct")) for item, base, _ in rows])
        out = {"cases": len(rows), "negative_only": int(neg.sum()), "answerable_wrong": int(wrong.sum())}
        if "insufficient_evidence" in f.heads:
            p = f.heads["insufficient_evidence"].prob(xs)
            out["insufficient_evidence_auroc"] = round(auroc(p, neg), 4)
            low = p < 0.1  # doctor_forecast_skip (the fast path needs miss and noise heads too, which do not ship)
            out["answerable_p_below_0.1"] = round(float(low[neg == 0].mean()), 3)
            out["negative_p_below_0.1"] = round(float(low[neg == 1].mean()), 3)
            out["negative_at_absent_0.8"] = round(float((p[neg == 1] >= 0.8).mean()), 3)
            out["answerable_at_absent_0.8"] = round(float((p[neg == 0] >= 0.8).mean()), 3)
        ans = neg == 0
        if "insufficient_evidence" in f.heads and wrong[ans].any():
            out["wrong_answers_p_below_0.1"] = round(float(low[ans & (wrong == 1)].mean()), 3)
        result["sets"][str(folder)] = out
    emit(result, a.out)


if __name__ == "__main__":
    main()
