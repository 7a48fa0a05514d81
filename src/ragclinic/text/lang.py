"""Language detection by script: enough to choose a sentence splitter and a lexical analyzer."""

from __future__ import annotations

import re
from functools import lru_cache

import opencc

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CJK_RUN = re.compile(_CJK.pattern + "+")
_LATIN_RUN = re.compile(_LATIN.pattern + "+")
_WORD = re.compile(r"[A-Za-z][\w.+/~-]*")  # a Latin token: "pg_hba.conf" is one word, not three
_KANA = re.compile(r"[\u3040-\u30ff]")


@lru_cache(maxsize=1)
def _t2s():
    return opencc.OpenCC("t2s")


def simplified(text: str) -> str:
    """``text`` with traditional Chinese characters in simplified form ("行政長官" → "行政长官"; OpenCC's t2s),
    so that a question in one script finds its words in a document in the other. Text without CJK is returned
    as it is (~3 µs a call otherwise)."""
    return _t2s().convert(text) if _CJK.search(text) else text


def is_cjk(ch: str) -> bool:
    return bool(_CJK.match(ch))


def detect_language(text: str) -> str:
    """'zh' when CJK characters make up at least 30% of the letters, 'en' when there are letters, else 'und'.

    Chinese text carries one character per word where English carries ~5 letters per word,
    so a 30% character share already means Chinese dominates the words.
    """
    # Counted by what a substitution removes: no list of every letter (80 MB for a 10 MB text).
    cjk = len(text) - len(_CJK_RUN.sub("", text))
    latin = len(text) - len(_LATIN_RUN.sub("", text))
    if cjk + latin == 0:
        return "und"
    return "zh" if cjk / (cjk + latin) >= 0.3 else "en"


def language_of(text: str) -> str:
    """The language to answer ``text`` in: "zh" for Chinese, else "en" (templates and prompts exist in both). A
    question that mixes Chinese with Latin identifiers ("CentOS 里 SELinux 一直报 avc denied，该怎么排查？": 9 Chinese
    characters, 22 Latin letters) is Chinese when it has over 1.5 Chinese characters for each Latin word (a Chinese
    word is ~1.5 characters); "What does 中国 mean?" stays English."""
    if detect_language(text) == "zh":
        return "zh"
    if _KANA.search(text):  # Japanese: not answered in Chinese
        return "en"
    cjk = len(text) - len(_CJK_RUN.sub("", text))
    return "zh" if cjk and cjk > 1.5 * len(_WORD.findall(text)) else "en"
