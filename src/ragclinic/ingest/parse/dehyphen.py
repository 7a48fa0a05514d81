"""Undo end-of-line hyphenation: "retrie-\\nval" -> "retrieval", but "risk-\\nfree" -> "risk-free".

A pure function over one text. Callers apply it to each block *before* the document text and its
offsets are assembled, so every offset refers to the final text.

Whether a line-break hyphen is a typesetting break or part of a compound is decided by evidence
first, word lists second:
1. the hyphenated form occurs elsewhere in the document (not at a line break) -> keep the hyphen;
2. the joined form occurs elsewhere in the document -> join;
3. a known compound (``risk-free``, ``long-term``, prefixes such as ``self-``/``non-``, suffixes
   such as ``-based``/``-free``, any part already hyphenated such as ``state-of-the-\\nart``)
   -> keep;
4. otherwise join.
Only a lowercase letter + hyphen + newline + lowercase letter is ever joined; a hyphen followed by
an uppercase letter or a digit ("COVID-\\n19", "pre-\\nBERT") is always kept, with the newline removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_W = r"[^\W_]"  # a letter or digit, any script
_HYPHEN = "-\u00ad\u2010"  # ASCII hyphen-minus, soft hyphen, Unicode hyphen
# The look-behind makes a match start only at the start of a word: without it the regex retries from
# every position inside a long run of letters (a gene sequence, a hash), which is quadratic.
_BREAK = re.compile(
    rf"(?<![^\W_])(?<!-)(?P<left>(?:{_W}+-)*{_W}+)(?P<hyphen>[{_HYPHEN}])[ \t]*\r?\n[ \t]*"
    rf"(?P<right>{_W}+(?:-{_W}+)*)")
_BREAK_HINT = re.compile(rf"[{_HYPHEN}][ \t]*\r?\n")  # cheap pre-check before the expensive _BREAK
_HYPHENATED = re.compile(rf"(?<![^\W_]){_W}+(?:-{_W}+)+")  # word-start anchored, as _BREAK
_WORD = re.compile(rf"{_W}+")

# Prefixes that usually form *hyphenated* compounds in technical English. Latinate prefixes
# (pre-, sub-, inter-, super-) are left out on purpose: their compounds are mostly closed
# ("interaction", "supervised") and typesetters break exactly there.
COMPOUND_PREFIXES = frozenset("""
self non cross multi semi pseudo quasi well ill high low first second third long short open real
anti so x one two three four five six seven eight nine ten half
""".split())
# Second parts that form hyphenated compounds ("risk-free", "model-based").
COMPOUND_SUFFIXES = frozenset("""
free based like aware specific oriented driven related dependent independent friendly level
scale grained tuned trained
""".split())
# Whole compounds, including the parts of longer ones ("state-of-the-art", "end-to-end").
COMPOUND_WORDS = frozenset("""
risk-free well-known state-of the-art of-the end-to to-end long-term short-term real-time
first-order second-order co-author co-occurrence co-occur co-founder co-worker co-training
trade-off follow-up one-shot few-shot zero-shot top-k day-to day-to-day peer-reviewed
""".split())
# Closed compounds the prefix/suffix rules would wrongly hyphenate ("multi-\\nple").
CLOSED_WORDS = frozenset("""
multiple multiply multiplied multiplier multiplex highlight highlights highlighted highlighting
highland highway lowland selfish selfless wellness realize realized realizes realization
realistic realism reality shortcoming shortcomings shortcut shortcuts openness dislike unlike
""".split())


@dataclass(frozen=True)
class DehyphenResult:
    text: str
    joins: int  # line-break hyphens removed ("retrie-\nval" -> "retrieval")
    kept: int  # line-break hyphens kept ("risk-\nfree" -> "risk-free")


@dataclass(frozen=True)
class HyphenEvidence:
    """What the whole document says about hyphenation, gathered once for all its blocks."""

    hyphenated: frozenset[str]  # "risk-free", "state-of-the-art" (lowercased)
    pairs: frozenset[str]  # adjacent parts of those: "state-of", "of-the", "the-art"
    words: frozenset[str]  # every word (lowercased), for "the joined form occurs elsewhere"


def has_line_break_hyphen(text: str) -> bool:
    return _BREAK_HINT.search(text) is not None


def gather_evidence(texts: Iterable[str], keep: Iterable[str] = ()) -> HyphenEvidence:
    """``keep``: compounds whose hyphen is always kept (the ``keep_hyphens`` setting), as if written
    hyphenated elsewhere in the document."""
    hyphenated: set[str] = {k.lower() for k in keep}
    pairs: set[str] = {f"{a}-{b}" for k in hyphenated for a, b in zip(k.split("-"), k.split("-")[1:])}
    words: set[str] = set()
    for text in texts:
        # Remove the line-break hyphens first: they are the question, not evidence.
        clean = _BREAK.sub(" ", text) if has_line_break_hyphen(text) else text
        for m in _HYPHENATED.finditer(clean):
            form = m.group().lower()
            hyphenated.add(form)
            parts = form.split("-")
            pairs.update(f"{a}-{b}" for a, b in zip(parts, parts[1:]))
        words.update(w.lower() for w in _WORD.findall(clean))
    return HyphenEvidence(frozenset(hyphenated), frozenset(pairs), frozenset(words))


def dehyphenate(text: str, evidence: HyphenEvidence | None = None) -> DehyphenResult:
    """Join or keep every hyphen at a line break in ``text`` (see the module docstring)."""
    if not has_line_break_hyphen(text):
        return DehyphenResult(text, 0, 0)
    ev = evidence if evidence is not None else gather_evidence([text])
    joins = kept = 0

    def fix(m: re.Match[str]) -> str:
        nonlocal joins, kept
        left, right = m.group("left"), m.group("right")
        if m.group("hyphen") == "\u00ad":  # a soft hyphen marks a typesetting break by definition
            joins += 1
            return left + right
        if _keep_hyphen(left, right, ev):
            kept += 1
            return f"{left}-{right}"
        joins += 1
        return left + right

    out = _BREAK.sub(fix, text)
    return DehyphenResult(out, joins, kept)


def _keep_hyphen(left: str, right: str, ev: HyphenEvidence) -> bool:
    if not (left[-1].isalpha() and left[-1].islower() and right[0].isalpha() and right[0].islower()):
        return True  # "COVID-\n19", "pre-\nBERT": never a typesetting break to join
    if "-" in left or "-" in right:
        return True  # already part of a hyphenated compound: "state-of-the-\nart"
    a, b = left.lower(), right.lower()
    joined, form = a + b, f"{a}-{b}"
    if form in ev.hyphenated or form in ev.pairs:
        return True
    if joined in ev.words:
        return False
    if form in COMPOUND_WORDS:
        return True
    if len(a) == 1:  # typesetters never leave one letter before a break: "x-\nray" is "x-ray"
        return True
    if joined in CLOSED_WORDS:
        return False
    # Short second parts are usually word endings ("multi-\nple", "self-\nish"), not words.
    return len(b) >= 4 and (a in COMPOUND_PREFIXES or (b in COMPOUND_SUFFIXES and len(a) >= 3))
