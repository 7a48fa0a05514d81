"""Metrics of the evaluation harness, each small enough to check by hand.

- Answer matching: answers are normalised (NFKC — full-width to half-width —, lower case, punctuation and
  spaces removed, thousands separators and trailing decimal zeros dropped) and an answer is correct when
  every required part has one accepted alternative inside the normalised response (RGB's rule), a number not
  being part of a longer one ("70" is not in "170").
- Classification: precision, recall, F1, balanced accuracy; expected calibration error of a confidence.
- A/B: bootstrap confidence interval of a paired difference of means (resampling items).
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from collections.abc import Sequence

_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)
_THOUSANDS = re.compile(r"(?<=\d)[,，](?=\d{3}\b)")
_DECIMAL_ZEROS = re.compile(r"(\d+\.\d*?)0+\b")
_SPACE_THOUSANDS = re.compile(r"(?<=\d)[ \u00a0\u202f](?=\d{3}(?!\d))")  # "1 200" (a thousands space)
_LIGHT_SEP = re.compile(r"(?:[^\w.]|_|(?<!\d)\.|\.(?!\d))+")  # separators, but not a decimal point


def normalise(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).lower()
    t = _THOUSANDS.sub("", t)
    t = _DECIMAL_ZEROS.sub(lambda m: m.group(1).rstrip("."), t)
    return _PUNCT.sub("", t)


def answer_correct(response: str, answers: Sequence[Sequence[str]]) -> bool:
    """Every part has an alternative found in the response (after normalisation); no parts → False.

    An alternative that starts or ends with a digit must not continue a longer number there: "70" is not in
    "170 seats" (the counterfactual passages of RGB change 70 into 170)."""
    resp, light = normalise(response), _light(response)
    return bool(answers) and all(any(_found(a, resp, light) for a in alts) for alts in answers)


def _light(text: str) -> str:
    """Normalised like ``normalise`` (separators removed), except that one space stays between two digit runs
    ("70 170" stays apart; "9 月 4 日" → "9月4日"; "COVID-19" → "covid19"); decimal points are kept."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _THOUSANDS.sub("", _SPACE_THOUSANDS.sub("", t))
    t = _DECIMAL_ZEROS.sub(lambda m: m.group(1).rstrip("."), t)
    t = " ".join(_LIGHT_SEP.sub(" ", t).split())
    return re.sub(r"(?<=\D) | (?=\D)", "", t)


def _found(alt: str, resp: str, light: str) -> bool:
    a = normalise(alt)
    if not a or a not in resp:
        return False
    if not (a[0].isdigit() or a[-1].isdigit()):
        return True
    pattern = (r"(?<![\d.])" if a[0].isdigit() else "") + re.escape(_light(alt)) + \
        (r"(?!\.?\d)" if a[-1].isdigit() else "")
    return re.search(pattern, light) is not None


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
