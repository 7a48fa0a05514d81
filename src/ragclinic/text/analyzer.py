"""The lexical analyzer: the same tokens at index and query time, for English and Chinese.

tantivy receives text already tokenized by this module (and splits it on whitespace only), because
its built-in tokenizers cannot segment Chinese. CJK runs go through jieba's search mode, which
emits both words and their sub-words (中华人民共和国 → 中华, 华人, 人民, 共和国, ...) for recall;
Latin runs are lowercased, split on non-alphanumerics and Snowball-stemmed.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

# Han (and kana, which jieba splits into characters) runs go to jieba; any other letters or digits,
# in any script (Latin, Cyrillic, Greek, Hangul, ...), form words.
_CJK_RUN = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")
_WORDS = re.compile(r"[^\W_]+")
_jieba_lock = threading.Lock()

# Function words only: BM25's idf handles the rest, and a short list keeps phrase-like queries intact.
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have if in into is it its of on or such that the their then "
    "there these they this to was were will with which who whom what when where why how do does did not no "
    "we you he she i our your his her them than so can could would should may might also been being".split()
)


@lru_cache(maxsize=1)
def jieba_handle():
    """jieba, initialised once (quietly: its start-up chatter is not the user's business)."""
    import jieba  # on use: ~0.2 s to import, and English-only work never needs it

    jieba.setLogLevel(logging.WARNING)
    with _jieba_lock:
        jieba.initialize()
    return jieba


@lru_cache(maxsize=1)
def _stemmer():
    return Stemmer.Stemmer("english")


def analyze(text: str, stem: bool = True) -> list[str]:
    """Tokens for the lexical index (NFKC, lowercase, stemmed, stopwords dropped; jieba for Chinese)."""
    # NFKC folds full-width forms ("ＧＰＴ－４" → "GPT-4"), common in Chinese text.
    parts = _CJK_RUN.split(unicodedata.normalize("NFKC", text))
    out: list[str] = []
    latin: list[int] = []
    for i, part in enumerate(parts):
        if i % 2:  # the captured CJK runs
            out.extend(t for t in jieba_handle().lcut_for_search(part) if t.strip())
            continue
        for w in _WORDS.findall(part.lower()):
            if w not in STOPWORDS:
                if w.isascii():
                    latin.append(len(out))
                out.append(w)
    if stem and latin:
        stems = _stemmer().stemWords([out[i] for i in latin])
        for i, s in zip(latin, stems):
            out[i] = s
    return out


def analyze_to_string(text: str, stem: bool = True) -> str:
    return " ".join(analyze(text, stem))
