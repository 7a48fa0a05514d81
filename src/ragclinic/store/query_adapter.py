"""The reading side of a knowledge base's query adapter (learn/adapter.py fits it): the kept matrix, read again
when the KB's ``query_adapter`` meta moves, and a query vector mapped through it. Here, below the pipeline, so
dense retrieval can use it without importing the learning code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

FILE = "query_adapter.npy"
_CACHE: dict[str, tuple[str, np.ndarray | None]] = {}


def digest(w: np.ndarray | None) -> str:
    return hashlib.sha256(w.tobytes()).hexdigest()[:16] if w is not None else ""


def adapter(kb) -> np.ndarray | None:
    """The kept adapter of ``kb`` (None: none kept, or ``query_adapter`` off), read again when the meta moves."""
    if not kb.settings.query_adapter:
        return None
    meta = kb.db.meta("query_adapter") or ""
    key = str(kb.folder)
    if key in _CACHE and _CACHE[key][0] == meta:
        return _CACHE[key][1]
    info = json.loads(meta) if meta else {}
    w = None
    if info.get("kept") and (Path(kb.folder) / FILE).exists():
        w = np.load(Path(kb.folder) / FILE)
        if digest(w) != info.get("digest"):
            w = None  # a file from another fit (a kill between the file and the meta): unused until the next fit
    _CACHE[key] = (meta, w)
    return w


def adapt(kb, vector: np.ndarray) -> np.ndarray:
    """``vector`` through the KB's adapter, normalised; unchanged without one."""
    w = adapter(kb)
    if w is None:
        return vector
    x = np.asarray(vector, dtype=np.float32) @ w
    return x / (np.linalg.norm(x) or 1.0)
