"""``kb learn``: each chunk not learned yet gets the model's questions and keywords, filtered by the knowledge base's
own retrieval, stored in one transaction per chunk (store/learned.py).

- **Resumable**: a chunk is marked learned in the transaction that stores its questions — a ``kill -9`` loses at
  most the chunk being written, and a re-run starts at the next chunk: nothing is generated twice.
- **Incremental**: only chunks without a record are learned; the records of chunks that are gone are deleted.
- **Bounded**: ``learn_max_tokens`` a chunk, ``budget_s`` seconds and ``max_chunks`` chunks a run (what is left
  is learned by the next run), and ``should_stop()`` between chunks (the server's shutdown, a cancelled job).
- **Filtered** (doc2query--, Gospodinov et al. 2023): a question is kept only when its own chunk ranks within
  ``learn_keep_rank`` for it by the KB's hybrid retrieval *without* the learned index — a question its chunk does
  not answer, or one that any chunk answers as well, teaches retrieval the wrong thing. Every question is
  recorded with its rank, kept or not (``kb learn --json`` counts both).

The knowledge base answers throughout: the run writes only its own tables, one short transaction per chunk, and
the learned index is read anew by retrieval when ``learned_version`` moves.

Who writes the questions is a ``Writer``: the local model, one chunk at a time (``LocalWriter``), or the model on
each worker of a Ray cluster, a batch of chunks at a time (scale/ray_learn.py, ``kb learn --ray``). Ranking,
embedding and storing stay here, in the order the chunks were ingested.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ragclinic.errors import KnowledgeBaseLocked
from ragclinic.learn import adapter
from ragclinic.learn import questions as ask
from ragclinic.store import learned as store

STOPS = ("done", "budget", "max_chunks", "stopped")


@dataclass
class LearnResult:
    model: str
    learned: int = 0  # chunks learned this run
    dropped: int = 0  # chunks whose records were deleted (gone from the KB)
    remaining: int = 0  # chunks still to learn (a next run does them)
    questions: int = 0
    kept: int = 0
    keywords: int = 0
    seconds: float = 0.0
    stopped: str = "done"  # done | budget | max_chunks | stopped
    adapter: dict | None = None  # the query adapter's fit (learn/adapter.py), when this run changed the pairs
    gate: dict | None = None  # the gate's threshold fitted on the KB's own questions (learn/gate_fit.py)

    def to_json(self) -> dict:
        return {**self.__dict__, "seconds": round(self.seconds, 2),
                "seconds_per_chunk": round(self.seconds / self.learned, 2) if self.learned else None}


class Writer(Protocol):
    """Writes the questions and keywords of chunks: ``write`` yields each chunk's (completion, seconds), in order."""

    model_id: str
    batch: int  # chunks handed over at once

    def write(self, chunks: Sequence[tuple[str, str]], n: int, max_tokens: int) -> Iterator[tuple]: ...


class LocalWriter:
    """The model in this process, one chunk after the other."""

    batch = 1

    def __init__(self, model) -> None:
        self.model, self.model_id = model, getattr(model, "model_id", "model")

    def write(self, chunks: Sequence[tuple[str, str]], n: int, max_tokens: int) -> Iterator[tuple]:
        for text, language in chunks:
            yield write_one(self.model, text, language, n, max_tokens)


def write_one(model, text: str, language: str, n: int, max_tokens: int) -> tuple:
    """One chunk's completion from ``model`` and the seconds it took."""
    t0 = time.perf_counter()
    done = model.chat(ask.messages(text, language, n), max_tokens=max_tokens, temperature=0.0, schema=ask.SCHEMA)
    return done, time.perf_counter() - t0


@contextmanager
def one_run(folder: Path) -> Iterator[None]:
    """One ``kb learn`` at a time on a knowledge base (two would write the same chunks' questions twice); the
    ingest's write lock is not taken: the KB keeps ingesting and answering while it learns."""
    fd = os.open(Path(folder) / "learn.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KnowledgeBaseLocked(f"another `kb learn` is running on {folder}; wait for it to finish (it "
                                      f"resumes where it stopped when run again)") from None
        yield
    finally:
        os.close(fd)


def learn(kb, model, *, on_progress: Callable[[int, int], None] | None = None, budget_s: float | None = None,
          max_chunks: int | None = None, should_stop: Callable[[], bool] | None = None,
          writer: Writer | None = None) -> LearnResult:
    """Learn the chunks that have no record yet (see the module docstring); ``on_progress(done, total)``;
    ``writer``: who writes the questions (default: ``model`` here, one chunk at a time)."""
    s = kb.settings
    writer = writer or LocalWriter(model)
    res = LearnResult(writer.model_id)
    with kb.db.transaction():
        res.dropped = store.drop_stale(kb.db.conn)
        if res.dropped:
            _bump(kb)
    total = store.count_missing(kb.db.conn)
    if max_chunks is not None:
        total = min(total, max_chunks)
    rank = _ranker(kb)
    t0 = time.perf_counter()
    while res.learned < total:
        if should_stop is not None and should_stop():
            res.stopped = "stopped"
            break
        if budget_s is not None and time.perf_counter() - t0 >= budget_s:
            res.stopped = "budget"
            break
        todo = store.missing(kb.db.conn, min(writer.batch, total - res.learned))
        if not todo:
            break
        written = writer.write([(text, language) for _, _, text, language in todo], s.learn_questions,
                               s.learn_max_tokens)
        for (chunk_id, doc_id, text, _), (done, seconds) in zip(todo, written):  # each stored as it comes back
            rec = record(kb, chunk_id, doc_id, text, done, seconds, writer.model_id, rank=rank,
                         n=s.learn_questions, keep_rank=s.learn_keep_rank)
            with kb.db.transaction():
                store.write(kb.db.conn, rec)
                _bump(kb)
            res.learned += 1
            res.questions += sum(i.kind == "question" for i in rec.items)
            res.kept += sum(i.kind == "question" and i.kept for i in rec.items)
            res.keywords += sum(i.kind == "keyword" for i in rec.items)
            if on_progress:
                on_progress(res.learned, total)
    if res.stopped == "done" and max_chunks is not None and res.learned >= max_chunks:
        res.stopped = "max_chunks"
    res.seconds = time.perf_counter() - t0
    res.remaining = store.count_missing(kb.db.conn)
    if (res.learned or res.dropped) and kb.embedder is not None:
        res.adapter = adapter.fit(kb).to_json()  # seconds; kept only when it beats no adapter (adapter.py)
    return res


def record(kb, chunk_id: str, doc_id: str, text: str, done, seconds: float, model_id: str, *, rank, n: int,
           keep_rank: int) -> store.Learned:
    """The record of a chunk whose completion ``done`` came back: its questions ranked, filtered and embedded."""
    qs, kws = ask.parse(done.text, n)
    ranks = [None if ask.copied(q, text) else rank(q, chunk_id, keep_rank) for q in qs]  # a pasted one: not kept
    keep = [q for q, r in zip(qs, ranks) if r is not None]
    vectors = dict(zip(keep, kb.embedder.embed_queries(keep))) if keep and kb.embedder is not None else {}
    items = tuple(store.Item("question", q, r is not None, r, vectors.get(q)) for q, r in zip(qs, ranks))
    items += tuple(store.Item("keyword", k, True) for k in kws)
    return store.Learned(chunk_id, doc_id, model_id, seconds, done.prompt_tokens, done.completion_tokens,
                         "ok" if qs else "empty", items)


def _ranker(kb) -> Callable[[str, str, int], int | None]:
    """(question, chunk id, depth) → the chunk's rank for the question by the KB's own retrieval (lexical and
    dense fused, the learned index left out), None when it is not within ``depth``."""
    from ragclinic.pipeline.retrieve import RETRIEVERS  # on use: the store-side run does not load the pipeline

    parts = [RETRIEVERS.create("lexical", kb)] + ([RETRIEVERS.create("dense", kb)] if kb.embedder is not None else [])
    hybrid = RETRIEVERS.get("hybrid")(kb, parts)

    def rank(question: str, chunk_id: str, depth: int) -> int | None:
        hits = hybrid.retrieve(question, depth)
        return next((i for i, h in enumerate(hits, start=1) if h.chunk.id == chunk_id), None)

    return rank


def _bump(kb) -> None:
    """Inside the caller's transaction: retrieval reads the learned index anew when this moves."""
    kb.db.set_meta("learned_version", str(int(kb.db.meta("learned_version") or 0) + 1))
