"""Answer matching (the evaluation harness's rule, and the debugger's test of an expected answer): answers are
normalised (NFKC — full-width to half-width —, lower case, punctuation and spaces removed, thousands separators and
trailing decimal zeros dropped) and an answer is correct when every required part has one accepted alternative
inside the normalised response (RGB's rule), a number not being part of a longer one ("70" is not in "170"). An
alternative that normalising reduces to one or two characters by taking out its marks ("+t", "%p", "-j": a manual's
flags and placeholders) must appear as written (NFKC, lower case): else "t" would be found in almost any answer.

``locate`` finds an expected answer in a long text (a document, a chunk, an answer: the debugger's every comparison)
by the same rule, and says where, in the text's own offsets: "September 23 2013" is found in "September 23, 2013",
"1200万元" in "１，２００万元". A long text holds many words, so there a Latin word is found only whole ("Paris" is
not in "Parisian"); a number, as in eval, not inside a longer one ("23" is not in "2023", "200" not in "1,200")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ragclinic.text.support import NUMBER_WORDS

_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)
_ASCII_PUNCT = bytes(c for c in range(128) if not chr(c).isalnum())  # _PUNCT's ASCII characters
# Each pattern starts with a character, not a look-behind, so that re skips quickly to where it may match (a long
# document is normalised whole). "1,200" and "3.50" are numbers before a letter or a CJK character too ("１，２００万元").
_THOUSANDS = re.compile(r"[,，](?<=\d[,，])(?=\d{3}(?!\d))")
_DECIMAL_ZEROS = re.compile(r"\.(?<=\d\.)(\d*?)0+(?!\d)")  # "3.50" → "3.5", "3.0" → "3"
_SPACE_THOUSANDS = re.compile(r"[ \u00a0\u202f](?<=\d.)(?=\d{3}(?!\d))")  # "1 200" (a thousands space)
# letters and marks only: a flag or placeholder ("+t", "%p", "-j", "~i!~m"), a name ("c#", "c++", "a+"), a dotted
# abbreviation ("u.s."); not "5%" or "1.50", which keep the number rules
_FLAG = re.compile(r"[^\w\s]*[a-z](?:[^\w\s]*[a-z])?[^\w\s]*")
_DOTTED = re.compile(r"[a-z](?:\.[a-z])+\.?")
_LIGHT_SEP = re.compile(r"(?:[\W_](?<!(?<=\d)\.(?=\d)))+")  # separators, but not a decimal point
_SPACE_KEPT = re.compile(r" (?:(?<=\D )|(?=\D))")  # in _light, one space stays only between two digits


def _zeros(m: re.Match[str]) -> str:
    return ("." + m.group(1)).rstrip(".")


def _unpunct(t: str) -> str:
    return t.encode().translate(None, _ASCII_PUNCT).decode() if t.isascii() else _PUNCT.sub("", t)


def normalise(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).lower()
    t = _DECIMAL_ZEROS.sub(_zeros, _THOUSANDS.sub("", t))
    return _unpunct(t)


def answer_correct(response: str, answers: Sequence[Sequence[str]]) -> bool:
    """Every part has an alternative found in the response (after normalisation); no parts → False.

    An alternative that starts or ends with a digit must not continue a longer number there: "70" is not in
    "170 seats" (the counterfactual passages of RGB change 70 into 170)."""
    resp, light = normalise(response), _light(response)
    raw = unicodedata.normalize("NFKC", response).lower()
    return bool(answers) and all(any(_found(a, resp, light, raw) for a in alts) or _spelled(alts, light, raw)
                                 for alts in answers)


_BY_VALUE = {v: w for w, v in NUMBER_WORDS.items()}


def _spelled(alts: Sequence[str], light: str, raw: str) -> bool:
    """A small number (2 to 99) expected in one spelling, found in the other: a short answer's "2" to "how many
    Golden Globes" is the expected "two", and "two" the expected "2". The digit as a number of its own, the word
    as a whole word ("network" does not hold "two"); 0 and 1 stay as written ("[1]" is a citation mark)."""
    for a in alts:
        t = a.strip().lower()
        if (v := NUMBER_WORDS.get(t)) is not None and v >= 2:
            if re.search(rf"(?<![\d.]){v}(?!\.?\d)", light):
                return True
        elif t.isdigit() and 2 <= int(t) < 100 and int(t) in _BY_VALUE:
            if re.search(rf"(?<![a-z]){_BY_VALUE[int(t)]}(?![a-z])", raw):
                return True
    return False


def _light(text: str) -> str:
    """Normalised like ``normalise`` (separators removed), except that one space stays between two digit runs
    ("70 170" stays apart; "9 月 4 日" → "9月4日"; "COVID-19" → "covid19"); decimal points are kept."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _THOUSANDS.sub("", _SPACE_THOUSANDS.sub("", t))
    t = _DECIMAL_ZEROS.sub(_zeros, t)
    t = " ".join(_LIGHT_SEP.sub(" ", t).split())
    return _SPACE_KEPT.sub("", t)


def _found(alt: str, resp: str, light: str, raw: str) -> bool:
    a = normalise(alt)
    written = unicodedata.normalize("NFKC", alt).strip().lower()
    if 0 < len(a) <= 2 and a != written and _FLAG.fullmatch(written):  # "+t" → "t": the marks are the answer
        if _DOTTED.fullmatch(written):  # "u.s.": the letters as a word ("US", "U.S.", not "because")
            return re.search(rf"(?<![a-z0-9]){re.escape(a)}(?![a-z0-9])", raw.replace(".", "")) is not None
        return _flag_pattern(a, written).search(raw) is not None
    if not a or a not in resp:
        return False
    if not (a[0].isdigit() or a[-1].isdigit()):
        return True
    return _number_pattern(a, alt).search(light) is not None


def _flag_pattern(a: str, written: str) -> re.Pattern[str]:
    """A flag or abbreviation as written, in NFKC lower-case text ("u.s." also as "us", "U.S", not in "because")."""
    if _DOTTED.fullmatch(written):  # the letters as a word, its dots optional
        return re.compile(r"(?<![a-z0-9])(?<![a-z0-9]\.)" + r"\.?".join(map(re.escape, a)) + r"(?!\.?[a-z0-9])")
    head = "(?<![a-z0-9])" if written[0].isalnum() else ""
    tail = "(?![a-z0-9])" if written[-1].isalnum() else ""
    return re.compile(head + re.escape(written) + tail)


def _number_pattern(a: str, alt: str) -> re.Pattern[str]:
    """``alt`` in ``_light`` form; where it starts or ends with a digit, not continuing a longer number there."""
    return re.compile((r"(?<![\d.])" if a[0].isdigit() else "") + re.escape(_light(alt)) +
                      (r"(?!\.?\d)" if a[-1].isdigit() else ""))


# ---------------------------------------------------------------- where an answer is in a long text
_LATIN = re.compile(r"[a-z0-9\u00c0-\u024f]")  # a Latin word's characters: such a word is found only whole
# A long text is searched a window at a time, so that only a window that holds the answer has its offsets worked
# out (a Python loop); windows overlap, and a match within _MARGIN of a window's cut (where the context that decides
# "23" in "2023" may be cut off) is left to the next window: an answer spanning more than 1,900 characters of a
# text longer than a window is not found.
_WINDOW, _OVERLAP, _MARGIN = 1 << 15, 1 << 11, 64


def locate(answer: str, text: str) -> tuple[int, int] | None:
    """The span of ``answer`` in ``text`` (``text``'s own offsets), matched as ``answer_correct`` matches it;
    a Latin word only whole. None when it is not there."""
    hit = locate_any([answer], text)
    return None if hit is None else hit[1]


def locate_any(answers: Sequence[str], text: str) -> tuple[str, tuple[int, int]] | None:
    """The first of ``answers`` found in ``text`` (the longest first) and its span; None when none is."""
    searched = _Searched(text)
    for a in sorted(answers, key=len, reverse=True):
        if (span := searched.find(a)) is not None:
            return a, span
    return None


class _Searched:
    """A text to search for one answer's alternatives: normalised once, by C-speed regexes, so a document without
    the answer costs little; the offsets back to the text are worked out only for a window that holds it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._normalised: str | None = None
        self._raw: str | None = None
        self._windows: dict[int, _Window] = {}

    def find(self, alt: str) -> tuple[int, int] | None:
        a = normalise(alt)
        written = unicodedata.normalize("NFKC", alt).strip().lower()
        if 0 < len(a) <= 2 and a != written and _FLAG.fullmatch(written):  # as answer_correct's _found
            pattern = _flag_pattern(a, written)
            if self._raw is None:
                self._raw = unicodedata.normalize("NFKC", self.text).lower()
            return self._first(lambda w: w.flags(pattern)) if pattern.search(self._raw) else None
        if self._normalised is None:
            self._normalised = normalise(self.text)
        if not a or a not in self._normalised:  # most documents stop here
            return None
        pattern = _number_pattern(a, alt)
        head = a[0].isalpha() and _LATIN.match(a[0]) is not None  # a number's edges are the pattern's
        tail = a[-1].isalpha() and _LATIN.match(a[-1]) is not None
        return self._first(lambda w: w.matches(a, pattern, head, tail))

    def _first(self, spans) -> tuple[int, int] | None:
        n, start = len(self.text), 0
        while True:
            end = min(n, start + _WINDOW)
            window = self._windows.get(start) or self._windows.setdefault(start, _Window(self.text, start, end))
            lo, hi = (start + _MARGIN if start else 0), (end - _MARGIN if end < n else n)
            for s, e in spans(window):
                if lo <= s and e <= hi:
                    return s, e
            if end >= n:
                return None
            start += _WINDOW - _OVERLAP


class _Window:
    """``text[start:end]``: normalised, folded (NFKC, lower case) and in ``_light`` form with each character's
    offset in ``text``, each on first use."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start = text[start:end], start
        self._normalised: str | None = None
        self._folded: tuple[str, Sequence[int], Sequence[int]] | None = None
        self._light: tuple[str, list[int]] | None = None

    def matches(self, a: str, pattern: re.Pattern[str], head: bool, tail: bool):
        """Spans of ``pattern`` in the ``_light`` form; a Latin word's edge (``head``, ``tail``) not inside a word."""
        if self._normalised is None:
            self._normalised = normalise(self.text)
        if a not in self._normalised:
            return
        light, pos = self.light
        folded, starts, ends = self.folded
        m = pattern.search(light)
        while m is not None:
            i, j = pos[m.start()], pos[m.end() - 1]
            if not (head and i > 0 and _LATIN.match(folded[i - 1])) and \
                    not (tail and j + 1 < len(folded) and _LATIN.match(folded[j + 1])):
                yield self.start + starts[i], self.start + ends[j]
            m = pattern.search(light, m.start() + 1)

    def flags(self, pattern: re.Pattern[str]):
        folded, starts, ends = self.folded
        for m in pattern.finditer(folded):
            yield self.start + starts[m.start()], self.start + ends[m.end() - 1]

    @property
    def folded(self) -> tuple[str, Sequence[int], Sequence[int]]:
        if self._folded is None:
            self._folded = _fold(self.text)
        return self._folded

    @property
    def light(self) -> tuple[str, list[int]]:
        """``_light`` of the folded text, step by step, with each character's offset in the folded text."""
        if self._light is None:
            s = self.folded[0]
            pos: list[int] = list(range(len(s)))
            s, pos = _edit(s, pos, _SPACE_THOUSANDS, lambda m: (m.start(), ""))
            s, pos = _edit(s, pos, _THOUSANDS, lambda m: (m.start(), ""))
            s, pos = _edit(s, pos, _DECIMAL_ZEROS, lambda m: (m.start() + len(_zeros(m)), ""))
            s, pos = _edit(s, pos, _LIGHT_SEP, lambda m: (m.start(), " "))
            self._light = _edit(s, pos, _SPACE_KEPT, lambda m: (m.start(), ""))
        return self._light


def _fold(text: str) -> tuple[str, Sequence[int], Sequence[int]]:
    """NFKC + lower case, a base character with its combining marks at a time, and where each folded character
    starts and ends in ``text``."""
    low = text.lower()
    if len(low) == len(text) and (text.isascii() or unicodedata.is_normalized("NFKC", text)):
        return low, range(len(text)), range(1, len(text) + 1)
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        piece = unicodedata.normalize("NFKC", text[i:j]).lower()
        out.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    return "".join(out), starts, ends


def _edit(s: str, pos: list[int], pattern: re.Pattern[str], how) -> tuple[str, list[int]]:
    """``pattern.sub`` keeping each character's offset: ``how(match)`` gives where the kept part of the match
    ends and what replaces the rest (its offset: the match's start)."""
    out: list[str] = []
    where: list[int] = []
    last = 0
    for m in pattern.finditer(s):
        keep, put = how(m)
        out.append(s[last:keep])
        where.extend(pos[last:keep])
        if put:
            out.append(put)
            where.extend([pos[m.start()]] * len(put))
        last = m.end()
    out.append(s[last:])
    where.extend(pos[last:])
    return "".join(out), where
