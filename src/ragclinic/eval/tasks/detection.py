"""The ``detection`` task: the doctor's faithfulness check as a classifier over (context, answer) pairs.

Each item's risk comes from ``claim_risk`` (rules, then the judge when a calibrated model is loaded);
"hallucinated" is predicted at risk ≥ 0.5. Reported: precision, recall, F1, balanced accuracy, and the
expected calibration error of the risk read as P(hallucinated).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragclinic.doctor.detectors.faithfulness import claim_risk
from ragclinic.eval.datasets import Loaded
from ragclinic.eval.metrics import classification, expected_calibration_error


def run_detection(data: Loaded, *, judge=None, limit: int = 0,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    items = data.data[:limit] if limit else data.data
    risks, rows = [], []
    for i, it in enumerate(items, start=1):
        r = claim_risk(it.answer, [it.context], it.question, judge=judge)
        risks.append(r.score)
        rows.append({"id": it.id, "hallucinated": it.hallucinated, "risk": r.score, "tier": r.tier, "why": r.why})
        if progress:
            progress(i, len(items))
    gold = [it.hallucinated for it in items]
    m = classification([r >= 0.5 for r in risks], gold)
    m["ece"] = expected_calibration_error(risks, gold)
    m = {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()}
    return {"task": "detection", "n": len(items), "metrics": {"unsupported_claim": m}, "items": rows}
