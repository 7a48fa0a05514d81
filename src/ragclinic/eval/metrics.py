"""Metrics of the evaluation harness, each small enough to check by hand.

- Answer matching: text/answers.py (``answer_correct``; the debugger tests expected answers with it too).
- Classification: precision, recall, F1, balanced accuracy; expected calibration error of a confidence.
- A/B: bootstrap confidence interval of a paired difference of means (resampling items).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

def classification(pred: Sequence[bool], gold: Sequence[bool]) -> dict[str, float]:
    """Precision, recall and F1 of the positive class, balanced accuracy, and counts."""
    if len(pred) != len(gold):
        raise ValueError(f"{len(pred)} predictions for {len(gold)} labels")
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum(g and not p for p, g in zip(pred, gold))
    tn = len(gold) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "balanced_accuracy": (recall + specificity) / 2,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """Σ over equal-width bins of (bin share) × |mean confidence − accuracy| (confidence 1.0 in the last bin)."""
    if not confidence:
        return 0.0
    groups: dict[int, list[tuple[float, bool]]] = {}
    for c, ok in zip(confidence, correct):
        groups.setdefault(min(int(c * bins), bins - 1), []).append((c, ok))
    n = len(confidence)
    return sum(len(g) / n * abs(sum(c for c, _ in g) / len(g) - sum(ok for _, ok in g) / len(g))
               for g in groups.values())


def bootstrap_delta(a: Sequence[float], b: Sequence[float], *, rounds: int = 2000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float, float]:
    """Mean of b − a over paired items, with a percentile bootstrap interval (items resampled together)."""
    if len(a) != len(b) or not a:
        raise ValueError("bootstrap needs two equally long, non-empty paired samples")
    diffs = [y - x for x, y in zip(a, b)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    lo = means[int(math.floor((1 - level) / 2 * rounds))]
    hi = means[min(rounds - 1, int(math.ceil((1 + level) / 2 * rounds)) - 1)]
    return sum(diffs) / n, lo, hi
