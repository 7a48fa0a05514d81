"""Sentence and clause spans: where a chunk may end.

Every function here returns *cut points* turned into contiguous ``(start, end)`` spans that cover
the given text exactly, so joining the spans reproduces the text. A span starts at the first
character of its sentence; the whitespace after a sentence belongs to that sentence (whitespace
before the first sentence belongs to the first). Whitespace-only text has no spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pysbd
from pysbd.lang.english import English

from ragclinic.text.lang import detect_language

# A whitespace-free run longer than this (no word is: a hash, base64, a 10 MB one-token file) is cut by
# characters without asking the tokenizer, whose cost grows with the run (~2 µs a character for e5).
LONG_RUN = 2000

# Same ranges as ragclinic.text.lang (CJK ideographs); kept as a character-class body for regexes.
CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"

_PARA_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (possibly holding spaces) and what follows
_NON_SPACE = re.compile(r"\S")
_RUN = re.compile(r"\S+")
# pysbd can only cut at one of these (or at a list marker, which needs "." or ")"), so a paragraph
# without them before its last character is one sentence: skips pysbd for most titles and headings.
_MAYBE_CUT = re.compile(r"[.!?)\n\r…。！？]")
# Chinese sentence end: a run of terminators (ASCII !?; only right after a CJK character, where they
# are typos for the full-width forms), then any closing quotes or brackets that belong to it.
_CJK_END = re.compile(rf"(?:[。！？；…]|(?<=[{CJK_RANGES}])[!?;])[。！？；…!?;]*[”’」』）》\"')\]]*")
# Only the full-width forms end a Chinese sentence inside an English paragraph ("…" is English too).
_FULLWIDTH_END = re.compile(r"[。！？；]+[”’」』）》\"')\]]*")
# An English sentence end inside a Chinese paragraph, which sends that piece through pysbd.
_LATIN_END = re.compile(r"[.!?][\"')\]]*\s")
_CLOSERS = "”’」』）》"  # no sentence starts with one
# Clause ends inside an over-long sentence. ASCII , ; : ) only before whitespace, so "1,000" and
# "3:4" stay whole.
_CLAUSE_END = re.compile(r"[，、：；）—]+[”’」』》\"')\]]*|[,;:)](?=\s)")
_WORD_START = re.compile(r"(?<=\s)\S")


class _FastAbbreviationReplacer(English.AbbreviationReplacer):
    """pysbd 0.3.4's abbreviation pass with the same output, without its no-op work.

    For every abbreviation found at a word start (every word beginning with "p", "v", "is", ...)
    pysbd runs a whole-text substitution per occurrence, each of which can only turn the "." right
    after the abbreviation into "∯". So an abbreviation never followed by "." needs no work, and a
    repeat for the same match string finds nothing left to replace. It also scans for a
    look-behind that matches only the literal "{abbr} ". Skipping all three keeps the output
    identical (checked on all 5,183 SciFact abstracts) and makes pysbd ~2x faster there.
    """

    def search_for_abbreviations_in_string(self, text):
        lowered = text.lower()
        # re.IGNORECASE folds "ſ" and "K" as casefold() does, and "ı" and "İ" to "i".
        folded = text.casefold().replace("ı", "i").replace("i\u0307", "i")
        for abbr in self.lang.Abbreviation.ABBREVIATIONS:
            stripped = abbr.strip()
            if stripped not in lowered:
                continue
            if stripped.isalpha() and stripped + "." not in folded:
                continue
            abbrev_match = re.findall(r"(?:^|\s|\r|\n){}".format(stripped), text, flags=re.IGNORECASE)
            if not abbrev_match:
                continue
            next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
            literal = "{" + stripped + "} "
            char_array = re.findall(next_word_start, text) if literal in text else []
            done: set[tuple[str, bool]] = set()
            for ind, match in enumerate(abbrev_match):
                char = char_array[ind] if ind < len(char_array) else ""
                key = (match, str(char).isupper())
                if key not in done:
                    done.add(key)
                    text = self.scan_for_replacements(text, match, ind, char_array)
        return text


class _English(English):
    AbbreviationReplacer = _FastAbbreviationReplacer


# One segmenter per process: building it loads pysbd's language tables.
_SEGMENTER = pysbd.Segmenter(language="en", clean=False, char_span=True)
_SEGMENTER.language_module = _English


def _pysbd_sentences(text: str) -> list[str]:
    # Segmenter.segment() would find each sentence again with a fresh regex per sentence: slow,
    # it evicts pysbd's own patterns from re's cache, and its spans drift on odd whitespace.
    # We take the sentences and align them ourselves.
    if not _MAYBE_CUT.search(text.rstrip()[:-1]):
        return [text]
    return _SEGMENTER.processor(text).process() or []


# pysbd's list passes rewrite the whole text once per list item ("a)", "ii.", "3."): quadratic in the items
# (10,000 characters of "a) one b) two" took 16 s). So it never sees more than PYSBD_MAX characters or
# LIST_MARKS_MAX list-marker candidates at once; prose has a few in a paragraph.
PYSBD_MAX = 10_000
LIST_MARKS_MAX = 32
# What pysbd's list regexes collect: a letter or a number of one or two digits before "." or ")", letters before ")".
_LIST_MARK = re.compile(r"(?<![^\s(])(?:(?:[a-z]|\d{1,2})[.)]|[a-z]+\))", re.I)
# A run is whitespace-free and holds no CJK character or CJK punctuation: Chinese and Japanese prose has no
# spaces, and a long paragraph of it is sentences (split by the CJK rules), not one token to cut by characters.
# CJK text with no sentence end for over LONG_RUN characters is a run all the same (a 10 MB file of ideographs).
_RUN_CHAR = rf"[^\s{CJK_RANGES}\u3000-\u303f\u3040-\u30ff\uff00-\uffef]"
_NO_END_CHAR = r"[^\s。！？；!?．｡]"
_LONG_RUN = re.compile(rf"(?<!{_RUN_CHAR}){_RUN_CHAR}{{{LONG_RUN + 1},}}\s*|"
                       rf"(?<!{_NO_END_CHAR}){_NO_END_CHAR}{{{LONG_RUN + 1},}}\s*")


def long_runs(text: str, s: int = 0, e: int | None = None) -> list[tuple[int, int]]:
    """Spans (offsets into ``text``) of the whitespace-free runs of ``text[s:e]`` over LONG_RUN characters,
    each with the whitespace after it."""
    e = len(text) if e is None else e
    if e - s <= LONG_RUN:
        return []
    return [(s + m.start(), s + m.end()) for m in _LONG_RUN.finditer(text[s:e])]


def _sbd_cuts(piece: str, prepared: str) -> list[int]:
    """Cut points of pysbd's sentences of ``prepared`` (``piece`` with line breaks rewritten, same length),
    aligned to ``piece``, found window by window (``_window_end``)."""
    out: list[int] = []
    a, n = 0, len(piece)
    while a < n:
        b = _window_end(piece, a)
        if a:
            out.append(a)
        out.extend(a + c for c in _align(piece[a:b], _pysbd_sentences(prepared[a:b])))
        a = b
    return out


def _window_end(text: str, a: int) -> int:
    """End of the window from ``a``: the whole rest when it is within the limits, else a cut at a line break,
    else after a full stop, else at a space in the second half of the longest window the limits allow."""
    limit = min(len(text), a + PYSBD_MAX)
    for i, m in enumerate(_LIST_MARK.finditer(text, a, limit)):
        if i == LIST_MARKS_MAX:
            limit = m.start()
            break
    if limit >= len(text):
        return len(text)
    lo = a + (limit - a) // 2
    cut = text.rfind("\n", lo, limit)
    if cut < 0:
        cut = text.rfind(". ", lo, limit)
    if cut < 0:
        cut = max(text.rfind(" ", lo, limit), text.rfind("\t", lo, limit))
    m = _NON_SPACE.search(text, cut + 1) if cut >= 0 else None
    end = m.start() if m is not None else limit
    return end if a < end <= len(text) else limit


def _align(text: str, sentences: list[str]) -> list[int]:
    """Cut points (sentence starts after the first) of ``sentences`` found in ``text``."""
    pieces = ["".join(s.split()) for s in sentences]
    cuts: list[int] = []
    if "".join(pieces) == "".join(text.split()):
        # Same non-space characters: cut after as many of them as the sentences before hold.
        runs = [(m.start(), m.end()) for m in _RUN.finditer(text)]
        r = before = seen = 0  # before: non-space characters in runs[:r]
        for piece in pieces[:-1]:
            seen += len(piece)
            while r < len(runs) and before + runs[r][1] - runs[r][0] <= seen:
                before += runs[r][1] - runs[r][0]
                r += 1
            if r == len(runs):
                break
            cuts.append(runs[r][0] + seen - before)
        return cuts
    # pysbd changed some character (it rewrites a few symbols it uses internally): find each
    # sentence in order and drop the cuts that cannot be placed; fewer cuts never lose text.
    cursor = 0
    for s in sentences:
        s = s.replace("\r", "\n").strip()
        at = text.find(s, cursor) if s else -1
        if at >= 0:
            if at > 0:
                cuts.append(at)
            cursor = at + len(s)
    return cuts


def _cut_after(text: str, ends: list[int]) -> list[int]:
    """Cut points at the first non-space character after each end offset."""
    cuts = []
    for end in ends:
        m = _NON_SPACE.search(text, end)
        if m is not None:
            cuts.append(m.start())
    return cuts


def _chinese_cuts(text: str) -> list[int]:
    cuts = _cut_after(text, [m.end() for m in _CJK_END.finditer(text)])
    bounds = [0, *cuts, len(text)]
    out: list[int] = []
    for a, b in zip(bounds, bounds[1:]):
        if a:
            out.append(a)
        piece = text[a:b]
        # English sentences inside a Chinese paragraph ("我们用 BERT. The model ...") get pysbd too,
        # with newlines hidden from it: they are line wraps here, not sentence ends.
        if _LATIN_END.search(piece) or detect_language(piece) == "en":
            out.extend(a + c for c in _sbd_cuts(piece, piece.replace("\n", " ")))
    return out


# A newline followed by a lowercase letter continues the sentence (hard-wrapped plain text); pysbd
# would end a sentence at every line. Same length, so the spans still fit the original text.
_WRAP = re.compile(r"\n(?=[ \t]*[a-z(])")


def _english_cuts(text: str) -> list[int]:
    # Full-width terminators are unambiguous, so a Chinese sentence inside an English paragraph
    # still ends at its 。; pysbd then splits each piece.
    bounds = [0, *_cut_after(text, [m.end() for m in _FULLWIDTH_END.finditer(text)]), len(text)]
    out: list[int] = []
    for a, b in zip(bounds, bounds[1:]):
        if a:
            out.append(a)
        piece = text[a:b]
        out.extend(a + c for c in _sbd_cuts(piece, _WRAP.sub(" ", piece)))
    return out


def _spans(text: str, cuts: list[int], start: int) -> list[tuple[int, int]]:
    if not text.strip():
        return []
    # No sentence starts with a closing quote; pysbd knows "。" and "？" but cuts before a "”".
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(text) and text[c] not in _CLOSERS), len(text)]
    return [(start + a, start + b) for a, b in zip(bounds, bounds[1:])]


def paragraphs(text: str) -> list[tuple[int, int]]:
    """Non-blank blocks separated by blank lines, as (start, end) without surrounding whitespace."""
    out = []
    pos = 0
    for m in [*_PARA_BREAK.finditer(text), None]:
        stop = m.start() if m else len(text)
        chunk = text[pos:stop]
        if chunk.strip():
            lead = len(chunk) - len(chunk.lstrip())
            out.append((pos + lead, pos + len(chunk.rstrip())))
        if m:
            pos = m.end()
    return out


def split_sentences(text: str, start: int = 0, language: str | None = None) -> list[tuple[int, int]]:
    """Contiguous sentence spans (offsets + ``start``) covering ``text``.

    The language is detected per paragraph unless given: "zh" uses the punctuation rules (a
    single newline does not end a Chinese sentence, since PDF text wraps lines mid-sentence),
    anything else uses pysbd, which also ends a sentence at a newline.
    """
    cuts: list[int] = []
    for i, (a, b) in enumerate(paragraphs(text)):
        if i:  # whitespace before the first paragraph stays with its first sentence
            cuts.append(a)
        para = text[a:b]
        lang = language or detect_language(para)
        cuts.extend(a + c for c in _paragraph_cuts(para, lang))
    return _spans(text, cuts, start)


def _paragraph_cuts(para: str, lang: str) -> list[int]:
    """Sentence starts in ``para``; a run over LONG_RUN characters is a sentence of its own, never searched
    for sentence ends (the chunker cuts it by characters)."""
    cuts: list[int] = []
    pos = 0
    for ra, rb in [*long_runs(para), (len(para), len(para))]:
        if pos < ra:
            piece = para[pos:ra]
            cuts.extend(pos + c for c in (_chinese_cuts(piece) if lang == "zh" else _english_cuts(piece)))
        cuts.extend(c for c in (ra, rb) if 0 < c < len(para))
        pos = rb
    return cuts


def split_clauses(text: str, start: int = 0, max_tokens: int | None = None,
                  count: Callable[[str], int] | None = None) -> list[tuple[int, int]]:
    """Contiguous clause spans of one over-long sentence.

    Cuts after ， 、 ： ； ） — and after , ; : ) that precede whitespace. With ``max_tokens`` and
    ``count``, a clause still over the limit is cut at every whitespace, and a word still over it
    (a long CJK run, a hash) into the longest character windows that fit.
    """
    cuts = _cut_after(text, [m.end() for m in _CLAUSE_END.finditer(text)])
    spans = _spans(text, cuts, 0)
    if max_tokens is None or count is None:
        return [(start + a, start + b) for a, b in spans]
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if count(text[a:b]) <= max_tokens:
            out.append((a, b))
            continue
        piece = text[a:b]
        for wa, wb in _spans(piece, [m.start() for m in _WORD_START.finditer(piece)], a):
            if count(text[wa:wb]) <= max_tokens:
                out.append((wa, wb))
            else:
                out.extend(_char_windows(text, wa, wb, max_tokens, count))
    return [(start + a, start + b) for a, b in out]


def _char_windows(text: str, a: int, b: int, max_tokens: int,
                  count: Callable[[str], int]) -> list[tuple[int, int]]:
    """Longest prefixes that fit (rare: only words over the whole limit).

    Each search gallops out from the last window's length and then bisects, so what it counts stays near
    the window's own size; a bisection over the whole rest of the word made a 1 MB word cost minutes.
    """
    out = []
    guess = max(1, max_tokens)  # a piece covers at least one character
    while a < b:
        lo, hi = _bracket(text, a, b, guess, max_tokens, count)
        while lo < hi:  # the longest end in [lo, hi] with a fitting window; lo fits (one char always goes)
            mid = (lo + hi + 1) // 2
            if count(text[a:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        # Trailing whitespace of the word stays with its last window.
        end = b if not text[lo:b].strip() else lo
        out.append((a, end))
        guess = max(1, end - a)
        a = end
    return out


def _bracket(text: str, a: int, b: int, guess: int, max_tokens: int,
             count: Callable[[str], int]) -> tuple[int, int]:
    """(lo, hi): the window ``[a, lo)`` fits (or is one character), ``[a, hi + 1)`` does not (or hi == b)."""
    probe = min(b, a + guess)
    if count(text[a:probe]) > max_tokens:
        return a + 1, probe - 1
    lo = probe
    while lo < b:
        guess *= 2
        probe = min(b, a + guess)
        if count(text[a:probe]) > max_tokens:
            return lo, probe - 1
        lo = probe
    return b, b
