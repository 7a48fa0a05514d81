"""Each claim's token confidence, from the answer call's token log-probabilities (models/llm.py ``logprobs``): its
least likely token, and its text with the uncertain words masked — what active retrieval (active.py) searches with.
The generator fills it (llm.py); nothing here searches."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_VALUE = re.compile(r'"(?:answer|text)"\s*:\s*"((?:[^"\\]|\\.)*)"', re.S)  # a claim's value in the JSON reply
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'.-]*")  # a word-spaced language's word (CJK has none to widen to)


@dataclass(frozen=True)
class Confidence:
    """One claim of a draft as the model wrote it: its least likely token's probability, and its text with the
    tokens below the threshold masked (whole words, for a word-spaced language)."""
    lowest: float
    masked: str
    tokens: int  # the claim's tokens that were read


def claim_confidence(raw: str, marks, threshold: float) -> tuple[Confidence, ...]:
    """Per claim of the model's raw reply (the ``answer`` / ``text`` values of a JSON reply, else the whole reply),
    from the sampled tokens' (offset, log-probability) ``marks``; () without marks."""
    if not marks:
        return ()
    spans = [(m.start(1), m.end(1)) for m in _VALUE.finditer(raw) if m.group(1).strip()]
    if not spans and not raw.lstrip().startswith("{"):
        spans = [(0, len(raw))]
    ends = [at for at, _ in marks[1:]] + [len(raw)]
    out = []
    for lo, hi in spans:  # a token that overlaps the value counts ('"Paris' opens it in a whole-schema grammar)
        inside = [(at, end, lp) for (at, lp), end in zip(marks, ends) if at < hi and end > lo]
        if not inside:
            continue
        low_chars = [(max(at, lo), min(end, hi)) for at, end, lp in inside if math.exp(lp) < threshold]
        lowest = min(math.exp(lp) for _, _, lp in inside)
        out.append(Confidence(round(lowest, 4), _masked(raw, lo, hi, low_chars), len(inside)))
    return tuple(out)


def _masked(raw: str, lo: int, hi: int, low: list[tuple[int, int]]) -> str:
    """``raw[lo:hi]`` without the low-confidence spans, each widened to the word it falls in."""
    drop = [False] * (hi - lo)
    words = [(m.start() + lo, m.end() + lo) for m in _WORD.finditer(raw[lo:hi])]
    for a, b in low:
        for wa, wb in words:  # a guessed piece of a word takes the whole word with it
            if wa < b and a < wb:
                a, b = min(a, wa), max(b, wb)
        for k in range(max(a, lo), min(b, hi)):
            drop[k - lo] = True
    text = "".join(ch if not gone else " " for ch, gone in zip(raw[lo:hi], drop))
    return " ".join(text.replace("\\n", " ").replace('\\"', '"').split())
