"""Answer matching (the evaluation harness's rule, and the debugger's test of an expected answer): answers are
normalised (NFKC — full-width to half-width —, lower case, punctuation and spaces removed, thousands separators and
trailing decimal zeros dropped) and an answer is correct when every required part has one accepted alternative
inside the normalised response (RGB's rule), a number not being part of a longer one ("70" is not in "170"). An
alternative that normalising reduces to one or two characters by taking out its marks ("+t", "%p", "-j": a manual's
flags and placeholders) must appear as written (NFKC, lower case): else "t" would be found in almost any answer."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)
_THOUSANDS = re.compile(r"(?<=\d)[,，](?=\d{3}\b)")
_DECIMAL_ZEROS = re.compile(r"(\d+\.\d*?)0+\b")
_SPACE_THOUSANDS = re.compile(r"(?<=\d)[ \u00a0\u202f](?=\d{3}(?!\d))")  # "1 200" (a thousands space)
# letters and marks only: a flag or placeholder ("+t", "%p", "-j", "~i!~m"), a name ("c#", "c++", "a+"), a dotted
# abbreviation ("u.s."); not "5%" or "1.50", which keep the number rules
_FLAG = re.compile(r"[^\w\s]*[a-z](?:[^\w\s]*[a-z])?[^\w\s]*")
_DOTTED = re.compile(r"[a-z](?:\.[a-z])+\.?")
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
    raw = unicodedata.normalize("NFKC", response).lower()
    return bool(answers) and all(any(_found(a, resp, light, raw) for a in alts) for alts in answers)


def _light(text: str) -> str:
    """Normalised like ``normalise`` (separators removed), except that one space stays between two digit runs
    ("70 170" stays apart; "9 月 4 日" → "9月4日"; "COVID-19" → "covid19"); decimal points are kept."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _THOUSANDS.sub("", _SPACE_THOUSANDS.sub("", t))
    t = _DECIMAL_ZEROS.sub(lambda m: m.group(1).rstrip("."), t)
    t = " ".join(_LIGHT_SEP.sub(" ", t).split())
    return re.sub(r"(?<=\D) | (?=\D)", "", t)


def _found(alt: str, resp: str, light: str, raw: str) -> bool:
    a = normalise(alt)
    written = unicodedata.normalize("NFKC", alt).strip().lower()
    if 0 < len(a) <= 2 and a != written and _FLAG.fullmatch(written):  # "+t" → "t": the marks are the answer
        if _DOTTED.fullmatch(written):  # "u.s.": the letters as a word ("US", "U.S.", not "because")
            return re.search(rf"(?<![a-z0-9]){re.escape(a)}(?![a-z0-9])", raw.replace(".", "")) is not None
        head = "(?<![a-z0-9])" if written[0].isalnum() else ""
        tail = "(?![a-z0-9])" if written[-1].isalnum() else ""
        return re.search(head + re.escape(written) + tail, raw) is not None
    if not a or a not in resp:
        return False
    if not (a[0].isdigit() or a[-1].isdigit()):
        return True
    pattern = (r"(?<![\d.])" if a[0].isdigit() else "") + re.escape(_light(alt)) + \
        (r"(?!\.?\d)" if a[-1].isdigit() else "")
    return re.search(pattern, light) is not None
