"""Embedding cache shared by every knowledge base of a user: (model id, sha256 of text) → vector.

Embedding is the ingest bottleneck (~3 SciFact abstracts/s with e5 on 2 cores), so the same content
is never embedded twice: not on re-ingest, not in another knowledge base, not in an evaluation run.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
  model TEXT NOT NULL,
  key BLOB NOT NULL,
  vec BLOB NOT NULL,
  PRIMARY KEY (model, key)
) WITHOUT ROWID;
"""


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    def __init__(self, cache_dir: Path) -> None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / "embeddings.sqlite3"
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def get_many(self, model: str, keys: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = list(keys[i:i + 500])
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT key, vec FROM embeddings WHERE model = ? AND key IN ({marks})", [model, *part])
            for key, vec in rows:
                v = np.frombuffer(vec, dtype=np.float32)
                if v.shape[0] == dim:
                    found[bytes(key)] = v
        return found

    def put_many(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings (model, key, vec) VALUES (?, ?, ?)",
                [(model, k, np.asarray(v, np.float32).tobytes()) for k, v in items])

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", [model]).fetchone()[0]

    def close(self) -> None:
        self._db.close()


def embed_with_cache(embedder, cache: EmbeddingCache | None, texts: Sequence[str],
                     batch_size: int) -> tuple[np.ndarray, int]:
    """Vectors for ``texts`` (passages); returns (matrix, number actually embedded).

    Texts missing from the cache are embedded in batches of similar length (padding inside a batch
    costs compute), and each distinct text once.
    """
    keys = [text_key(t) for t in texts]
    cached = cache.get_many(embedder.model_id, keys, embedder.dim) if cache else {}
    todo: dict[bytes, str] = {}
    for k, t in zip(keys, texts):
        if k not in cached and k not in todo:
            todo[k] = t
    order = sorted(todo, key=lambda k: len(todo[k]))
    fresh: dict[bytes, np.ndarray] = {}
    step = getattr(embedder, "texts_per_call", 0) or batch_size  # an embedder over workers takes more at once
    for i in range(0, len(order), step):
        batch = order[i:i + step]
        vecs = embedder.embed_passages([todo[k] for k in batch])
        fresh.update(zip(batch, vecs))
    if cache and fresh:
        cache.put_many(embedder.model_id, fresh.items())
    cached.update(fresh)
    out = np.stack([cached[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)
    return out.astype(np.float32, copy=False), len(fresh)
