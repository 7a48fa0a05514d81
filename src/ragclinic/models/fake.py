"""A deterministic fake embedder for tests: hashed bag of analyzer tokens, so overlapping texts are close."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ragclinic.models.embedder import EMBEDDERS, normalise
from ragclinic.text.analyzer import analyze


@EMBEDDERS.register("fake")
class FakeEmbedder:
    model_id = "fake-hash-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0  # number of texts embedded: tests use it to prove the cache works

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for tok in analyze(text) or [""]:
            h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return normalise(np.stack([self._vec(t) for t in texts]))

    embed_passages = _embed
    embed_queries = _embed
