"""The Embedder role: text → L2-normalised float32 vectors, passages and queries embedded separately."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragclinic.config.names import accept_from
from ragclinic.registry import Registry


@runtime_checkable
class Embedder(Protocol):
    model_id: str  # names the model and its version: cached vectors are keyed by it
    dim: int

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised."""
        ...


EMBEDDERS: Registry[Embedder] = Registry("embedder")
accept_from("embedder", EMBEDDERS.names)  # the settings accept the names plugins register


def normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms
