"""WordLlama static embeddings: the fast mode for large corpora (~100x faster than e5, lower quality)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

from ragclinic.errors import ModelError
from ragclinic.models.embedder import EMBEDDERS, normalise

_lock = threading.Lock()


@EMBEDDERS.register("wordllama")
class WordLlamaEmbedder:
    model_id = "wordllama-0.4.0.post1:l2_supercat_256"
    dim = 256

    def __init__(self) -> None:
        self._wl = None

    def _load(self):
        with _lock:
            if self._wl is None:
                try:
                    import wordllama  # on use: ~0.3 s, only for the fast embedder
                    from wordllama import WordLlama  # on use: as above
                except ImportError as e:  # pragma: no cover - core dependency
                    raise ModelError("wordllama is not installed: pip install wordllama==0.4.0.post1") from e
                # The default loader looks for weights under a folder name that does not match the
                # package's own and then tries a hub download; point it at the package folder instead.
                folder = os.path.dirname(wordllama.__file__)
                self._wl = WordLlama.load(cache_dir=folder, disable_download=True)
        return self._wl

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return normalise(self._load().embed(list(texts)))

    embed_passages = _embed
    embed_queries = _embed
