"""A query adapter for one knowledge base (issue 53 item 2): a linear map on e5 query vectors, fitted in seconds
on the learned (question, its chunk) pairs, kept only when it beats no adapter on a held-out part of them.

Like LlamaIndex's embedding adapters, but in numpy: the question vector ``q`` becomes ``normalise(q W)`` and is
searched against the unchanged chunk vectors. W starts at the identity and is fitted by Adam on the InfoNCE
loss over *every* chunk of the KB (the mined hard negatives are all there: a KB of thousands of chunks is one
matrix product), with a pull back towards the identity (``l2``) so a few hundred pairs cannot bend the space far.
The pairs are split by chunk (a hash of its id): a fifth of the chunks' questions stops the fit (the best epoch on
them is kept), another fifth is held out, and the adapter is kept only when their recall@5 of the own chunk rises
by ``MIN_GAIN``. What was measured is in the KB's meta
(``query_adapter``) and ``kb learn --json``; the matrix in ``KB/query_adapter.npy``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragclinic.store.learned import kept_vectors
from ragclinic.store.query_adapter import FILE, adapt, adapter, digest  # noqa: F401  (the reading side lives there)

MIN_PAIRS = 40  # fewer kept questions: nothing to fit on
MIN_GAIN = 0.02  # held-out recall@5 must rise by this much for the adapter to be kept


@dataclass(frozen=True)
class Fit:
    pairs: int
    held_out: int
    recall_before: float
    recall_after: float
    kept: bool
    why: str

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _bucket(chunk_rowid: int) -> int:
    return int(hashlib.sha1(str(chunk_rowid).encode()).hexdigest(), 16) % 5


def _pairs(kb) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(question vectors, own chunk's column, chunk rowids, chunk matrix)."""
    q_rows, q_vecs = kept_vectors(kb.db.conn)
    ids, chunks = kb.db.embeddings(kb.embedder.dim)
    col = {int(r): i for i, r in enumerate(ids)}
    keep = np.array([int(r) in col for r in q_rows], dtype=bool)
    return q_vecs[keep], np.array([col[int(r)] for r in q_rows[keep]], dtype=np.int64), ids, chunks


def _recall(q: np.ndarray, own: np.ndarray, chunks: np.ndarray, w: np.ndarray | None, k: int = 5) -> float:
    if not len(q):
        return 0.0
    x = q @ w if w is not None else q
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    s = x @ chunks.T
    own_s = s[np.arange(len(q)), own]
    return float(np.mean((s > own_s[:, None]).sum(axis=1) < k))


def _steps(tq, town, p, *, epochs, lr, tau, l2, seed):
    """Adam on the InfoNCE loss over every chunk; yields W after each epoch."""
    rng = np.random.default_rng(seed)
    dim = tq.shape[1]
    w, m, v = np.eye(dim, dtype=np.float64), np.zeros((dim, dim)), np.zeros((dim, dim))
    step = 0
    for _ in range(epochs):
        for batch in np.array_split(rng.permutation(len(tq)), max(1, len(tq) // 64)):
            x = tq[batch].astype(np.float64)
            logits = (x @ w) @ p.T / tau
            logits -= logits.max(axis=1, keepdims=True)
            prob = np.exp(logits)
            prob /= prob.sum(axis=1, keepdims=True)
            prob[np.arange(len(batch)), town[batch]] -= 1.0  # d loss / d logits
            grad = x.T @ (prob @ p) / (tau * len(batch)) + l2 * (w - np.eye(dim)) / len(tq)
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            w -= lr * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
        yield w


def fit(kb, *, epochs: int = 60, lr: float = 5e-4, tau: float = 0.05, l2: float = 50.0, seed: int = 0) -> Fit:
    """Fit, measure on the held-out chunks' questions, and keep (write the file, record the meta) or drop.

    A few hundred pairs against a 384×384 matrix overfit fast (on a real manual an unchecked fit took the held-out
    recall from 0.92 to 0.25), so a second fifth of the chunks stops it: the epoch with the best recall on them is
    the one kept (the identity when no epoch beats it). The held-out fifth is read once, at the end."""
    q, own, ids, chunks = _pairs(kb)
    if len(q) < MIN_PAIRS:
        return _record(kb, Fit(len(q), 0, 0.0, 0.0, False, f"{len(q)} kept questions; at least {MIN_PAIRS} needed"), None)
    bucket = np.array([_bucket(int(ids[c])) for c in own])
    held, stop = bucket == 0, bucket == 1
    train = ~held & ~stop
    best_w, best = None, _recall(q[stop], own[stop], chunks, None)
    for w in _steps(q[train], own[train], chunks.astype(np.float64), epochs=epochs, lr=lr, tau=tau, l2=l2, seed=seed):
        r = _recall(q[stop], own[stop], chunks, w.astype(np.float32))
        if r > best:
            best_w, best = w.astype(np.float32), r
    before = _recall(q[held], own[held], chunks, None)
    after = _recall(q[held], own[held], chunks, best_w) if best_w is not None else before
    kept = best_w is not None and after >= before + MIN_GAIN
    verdict = ("kept" if kept else f"not kept (needs +{MIN_GAIN})" if best_w is not None
               else "not kept (no epoch beat no adapter on the stopping questions)")
    why = f"held-out recall@5 {before:.3f} → {after:.3f} on {int(held.sum())} questions: {verdict}"
    return _record(kb, Fit(len(q), int(held.sum()), round(before, 4), round(after, 4), kept, why),
                   best_w if kept else None)


def _record(kb, result: Fit, w: np.ndarray | None) -> Fit:
    path = Path(kb.folder) / FILE
    if w is not None:
        tmp = path.with_name(FILE + ".tmp.npy")
        np.save(tmp, w)
        os.replace(tmp, path)
    elif path.exists():
        path.unlink()
    with kb.db.transaction():
        kb.db.set_meta("query_adapter", json.dumps({**result.to_json(), "digest": digest(w)}))
    return result
