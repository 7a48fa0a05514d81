"""Cheap features of a (passage, text) pair for the learned verifier — no model pass over the passage.

The features look where the answer would be: the sentence (or two adjacent sentences) of the passage that holds
most of the question's content terms, and ask of it what a careful reader would — does it hold the question's
constraints (the year, the ordinal, the number, the quoted title) or another value of the same kind; does it
hold something of the asked type (a date for "when", a number for "how many"); does it say anything beyond the
question's own words; does it carry the question's names; does its negation agree with the claim's.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from ragclinic.text.lang import is_cjk
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, numbers, weighted_coverage
from ragclinic.verify.constraints import answer_type, check_all, has_answer_of_type

NAMES = (
    "bias", "cov_passage", "cov_window", "cov_sentence", "cov_weighted", "names_window", "names_passage",
    "n_constraints", "constraint_found", "constraint_missing", "constraint_contradicted",
    "window_constraint_found", "window_constraint_contradicted", "type_date", "type_number", "type_in_window",
    "type_in_passage", "novel_window", "novel_count", "numbers_in_passage", "numbers_in_window",
    "negation_mismatch", "new_name_window", "log_passage_terms", "log_text_terms", "zh",
    "cov_window_sq", "cov_x_contradicted", "e5_window", "e5_sentence", "e5_gap",
)
# Given the question's and the two best windows' e5 vectors: cosine similarity (e5 was trained to rank the
# passage that answers a query first, which word overlap cannot see). ~45 ms a window on 2 cores.
Embed = Callable[[Sequence[str]], np.ndarray]

_NEG = re.compile(r"\b(not|no|never|none|neither|nor|without|n't|cannot|failed to)\b|不|没有|未|非|无|否", re.I)
_CAP = re.compile(r"\b[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)*")
_LATIN_OR_QUOTED = re.compile(r"[A-Za-z][A-Za-z0-9\-]+|《[^》]+》")


@dataclass(frozen=True)
class Features:
    vector: np.ndarray  # float32, len(NAMES)
    window: str  # the passage text the features rest on
    sentence: str  # the single sentence with most of the question's terms
    checks: tuple  # the question's constraint checks against the window (verify.constraints.Check)
    missing_terms: tuple[str, ...]  # the question's content terms the window lacks
    answer_type: str | None
    type_in_window: bool


@lru_cache(maxsize=2048)
def _sentences(passage: str) -> tuple[str, ...]:
    spans = split_sentences(passage)
    out = tuple(passage[a:b].strip() for a, b in spans if passage[a:b].strip())
    return out or (passage,)


def _windows(passage: str) -> list[str]:
    sents = _sentences(passage)
    return list(sents) + [f"{a} {b}" if not (a and is_cjk(a[-1])) else a + b for a, b in zip(sents, sents[1:])]


def _names(text: str) -> set[str]:
    """Proper-name-like strings: capitalised runs not at a sentence start (EN), Latin words and 《titles》 (ZH)."""
    t = unicodedata.normalize("NFKC", text)
    out = {m.group().lower() for m in _CAP.finditer(t) if m.start() > 0}
    if any(is_cjk(c) for c in t):
        out |= {m.group().lower() for m in _LATIN_OR_QUOTED.finditer(t)}
    return {n for n in out if content_terms(n)}


def _negated(text: str) -> bool:
    return bool(_NEG.search(text))


def _e5(text: str, window: str, sentence: str, embed_query: Embed | None, embed_passage: Embed | None
        ) -> tuple[float, float, float]:
    if embed_query is None or embed_passage is None:
        return 0.0, 0.0, 0.0
    q = embed_query([text])[0]
    texts = [window] if sentence == window else [window, sentence]
    v = embed_passage(texts)
    w, s = float(v[0] @ q), float(v[-1] @ q)
    return w, s, w - s


def extract(passage: str, text: str, embed_query: Embed | None = None, embed_passage: Embed | None = None
            ) -> Features:
    q = content_terms(text)
    wins = _windows(passage)
    n_sent = len(_sentences(passage))
    # most of the text's terms; on a tie a single sentence over a pair, then the fuller sentence (not a heading)
    covs = [(len(q & content_terms(w)) / len(q) if q else 0.0, i < n_sent, len(content_terms(w)), i)
            for i, w in enumerate(wins)]
    best_cov, _, _, best_i = max(covs)
    window = wins[best_i]
    sent_cov, _, _, sent_i = max(c for c in covs if c[3] < n_sent)
    e5 = _e5(text, window, wins[sent_i], embed_query, embed_passage)
    w_terms = content_terms(window)
    p_terms = content_terms(passage)
    cov_weighted = weighted_coverage(q, window)
    names = _names(text)
    names_w = sum(1 for n in names if n in window.lower()) / len(names) if names else 1.0
    names_p = sum(1 for n in names if n in passage.lower()) / len(names) if names else 1.0
    checks_p = check_all(text, passage)
    checks_w = check_all(text, window)
    n_c = len(checks_p)
    share = lambda cs, v: (sum(c.verdict == v for c in cs) / len(cs)) if cs else 0.0  # noqa: E731
    atype = answer_type(text)
    type_w = bool(atype and has_answer_of_type(atype, window))
    type_p = bool(atype and has_answer_of_type(atype, passage))
    novel = w_terms - q
    t_nums = numbers(text)
    nums_p = (len(t_nums & numbers(passage)) / len(t_nums)) if t_nums else 1.0
    nums_w = (len(t_nums & numbers(window)) / len(t_nums)) if t_nums else 1.0
    neg_mismatch = float(_negated(text) != _negated(window))
    low = text.lower()
    new_name = float(any(n not in low for n in _names(window)))  # a name the window has and the text lacks
    contradicted_w = share(checks_w, "contradicted")
    vec = np.array([
        1.0, (len(q & p_terms) / len(q)) if q else 0.0, best_cov, sent_cov, cov_weighted, names_w, names_p,
        min(n_c, 3) / 3, share(checks_p, "found"), share(checks_p, "missing"), share(checks_p, "contradicted"),
        share(checks_w, "found"), contradicted_w, float(atype == "date"), float(atype == "number"),
        float(type_w) if atype else 0.0, float(type_p) if atype else 0.0,
        len(novel) / max(1, len(w_terms)), math.log1p(len(novel)), nums_p, nums_w, neg_mismatch, new_name,
        math.log1p(len(p_terms)), math.log1p(len(q)), float(any(is_cjk(c) for c in text)),
        best_cov ** 2, best_cov * contradicted_w, *e5,
    ], dtype=np.float32)
    missing = tuple(sorted(q - w_terms))
    return Features(vec, window, wins[sent_i], checks_w, missing, atype, type_w)
