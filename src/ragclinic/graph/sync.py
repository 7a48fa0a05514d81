"""Keep the knowledge graph in step with the chunks (after every ingest of a KB with ``--graph``).

1. Rows of chunks that are gone (a changed or removed document) are deleted; their entities become dirty.
2. Chunks without graph rows (new chunks; every chunk when the graph is first asked for, or when the mode
   changed) are extracted — ``fast`` by rules (graph/extract.py), ``model`` by the language model
   (graph/model.py) — in batches, each batch one transaction: a killed run resumes where it stopped.
3. The communities the dirty entities touch are recomputed (graph/communities.py).

The mode is a knowledge-base setting (meta ``graph_mode``): once set, every later ingest keeps the graph current.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ragclinic.errors import ConfigError
from ragclinic.graph import communities
from ragclinic.graph.extract import extract_chunks
from ragclinic.graph.model import ModelExtractor, summarizer
from ragclinic.store import graph as store

MODES = ("fast", "model")


@dataclass
class GraphSyncResult:
    mode: str
    extracted: int = 0  # chunks extracted this run
    dropped: int = 0  # chunks whose rows were deleted
    mentions: int = 0
    relations: int = 0
    seconds_extract: float = 0.0
    seconds_communities: float = 0.0
    communities: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {**self.__dict__, "seconds_extract": round(self.seconds_extract, 3),
                "seconds_communities": round(self.seconds_communities, 3)}


def mode_of(kb) -> str:
    """The KB's graph mode: "" (no graph), "fast" or "model"."""
    return kb.db.meta("graph_mode") or ""


def enabled(kb) -> bool:
    return bool(mode_of(kb))


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"--graph {mode!r} is not a graph mode; use one of: {', '.join(MODES)}")
    return mode


def sync(kb, mode: str | None = None, *, model=None, on_progress: Callable[[int, int], None] | None = None,
         batch: int | None = None) -> GraphSyncResult:
    """Bring the graph up to date (the caller holds the KB's write lock). ``mode`` sets or changes the KB's graph
    mode; None keeps it. ``model``: the language model for ``model`` mode. ``on_progress(done, total)``."""
    db = kb.db
    current = mode_of(kb)
    mode = check_mode(mode) if mode else current
    if not mode:
        return GraphSyncResult("")
    if mode == "model" and model is None:
        raise ConfigError("--graph model needs the language model; install it (pip install -e '.[local]') or "
                          "use --graph fast")
    res = GraphSyncResult(mode)
    with db.transaction():
        if mode != current:
            db.set_meta("graph_mode", mode)
            # chunks extracted by the other mode are extracted again
            redo = [r[0] for r in db.conn.execute("SELECT chunk_id FROM graph_chunks WHERE mode != ?", [mode])]
            store.drop_chunks(db.conn, redo)
        stale = store.stale_chunks(db.conn)
        store.drop_chunks(db.conn, stale)
        res.dropped = len(stale)
    t0 = time.perf_counter()
    extract = _extractor(mode, model)
    size = batch or (64 if mode == "fast" else 4)
    total, done = store.count_missing(db.conn), 0
    while True:
        todo = store.missing_chunks(db.conn, size)
        if not todo:
            break
        graphs = extract(todo)
        with db.transaction():
            store.write_chunk_graphs(db.conn, graphs, mode)
        done += len(todo)
        res.mentions += sum(len(g.mentions) for g in graphs)
        res.relations += sum(len(g.relations) for g in graphs)
        if on_progress:
            on_progress(done, total)
    res.extracted = done
    res.seconds_extract = time.perf_counter() - t0
    t1 = time.perf_counter()
    summarize = None
    if mode == "model":
        summarize = summarizer(model)
    res.communities = communities.refresh(db, embed=_embedder(kb), summarize=summarize).to_json()
    res.seconds_communities = time.perf_counter() - t1
    return res


def _extractor(mode: str, model):
    if mode == "fast":
        return extract_chunks
    return ModelExtractor(model).extract_chunks


def _embedder(kb):
    if kb.embedder is None:
        return None
    return lambda texts: kb.embedder.embed_passages(texts)
