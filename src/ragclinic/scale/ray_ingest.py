"""`ingest --ray`: parsing, chunking and embedding on Ray workers, the commit on the driver (issue 18 §1).

The driver discovers and reads the files (their bytes travel to the workers through Ray's object store, so the
workers need no shared file system), skips unchanged ones as a local ingest does, and hands each changed file to
an ``IngestWorker`` actor — one per worker, each loading the embedder once — which parses and chunks it with the
same code as the local producer (``ingest.runner.file_events``). Results come back in file order. The driver's
writer then embeds the new chunks through ``RayEmbedder`` (the embedding cache is consulted first and filled
with what the workers return) and commits whole documents in the same SQLite transactions as a local ingest, so
the knowledge base is the same — document ids, chunk ids and texts; embeddings within float tolerance — and a
``kill -9`` of the driver leaves what the local path leaves: a knowledge base that opens, and a re-run that
finishes the rest.

A worker that dies mid-call is restarted by Ray and the call retried (``max_restarts`` / ``max_task_retries``);
nothing is committed twice because only the driver commits, after every result of a batch is in.
"""

from __future__ import annotations

import os
import queue
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragclinic import wiring
from ragclinic.ingest.runner import END, Producer, failure_of, file_events, ingest
from ragclinic.native import in_layer
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker
from ragclinic.scale.runtime import cluster_cpus, connected, require_ray, worker_env

RETRIES = 3  # restarts of a dead worker, and retries of the call it was running
IN_FLIGHT = 2  # files being parsed per worker (one running, one queued)
DIE_ONCE = "RAGCLINIC_RAY_TEST_DIE_ONCE"  # tests: a marker path; the first embed call that finds none exits


class _Worker:
    """One Ray worker: the parser, chunker and embedder of a knowledge base's settings, loaded once."""

    def __init__(self, settings) -> None:
        self.settings = settings
        self.chunker = Chunker(settings, TOKEN_COUNTERS.create("e5"))
        self.embedder = wiring.embedder(settings)

    def info(self) -> tuple[str, int]:
        e = self.embedder
        return (e.model_id if e else "", e.dim if e else 0)

    def parse(self, source, tags: dict[str, str], known_docs: dict[str, str]) -> list:
        try:
            with in_layer("parse"):
                return list(file_events(source, tags, self.settings, self.chunker, known_docs))
        except Exception as e:  # reported for the file, as the local producer does
            return [failure_of(source.path, e)]

    def embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        marker = os.environ.get(DIE_ONCE)
        if marker and not Path(marker).exists():
            Path(marker).write_text(str(os.getpid()))
            os._exit(1)  # a worker killed mid-batch (the retry test)
        out = [self.embedder.embed_passages(list(texts[i:i + batch_size])) for i in range(0, len(texts), batch_size)]
        return np.concatenate(out) if out else np.zeros((0, self.embedder.dim), np.float32)


class RayBackend:
    """The ``backend`` of ``ingest.runner.ingest``: ``workers`` IngestWorker actors on the cluster Ray is
    connected to (0: one per CPU of the cluster)."""

    def __init__(self, settings, workers: int = 0) -> None:
        self.ray = ray = require_ray()
        n = workers or cluster_cpus(ray)
        cls = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Worker)
        self.actors = [cls.options(runtime_env=worker_env()).remote(settings) for _ in range(n)]
        self.model_id, self.dim = ray.get(self.actors[0].info.remote())
        self.settings = settings

    @property
    def workers(self) -> int:
        return len(self.actors)

    def producer(self, kb, files, q, tags, reparse) -> "_RayProducer":
        return _RayProducer(self, kb, files, q, tags, reparse)

    def embedder(self, kb):
        return RayEmbedder(self) if self.model_id else None

    def batch_chunks(self, kb) -> int:
        return max(64, 4 * self.workers * kb.settings.embed_batch_size)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)


class RayEmbedder:
    """The Embedder Protocol over the backend's workers: a call's texts are cut into one contiguous share per
    worker (the writer sorts them by length, so each share pads little) and embedded in parallel."""

    def __init__(self, backend: RayBackend) -> None:
        self.backend = backend
        self.model_id, self.dim = backend.model_id, backend.dim
        self.texts_per_call = backend.workers * 4 * backend.settings.embed_batch_size

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        actors, bs = self.backend.actors, self.backend.settings.embed_batch_size
        share = -(-len(texts) // len(actors))
        refs = [a.embed.remote(list(texts[i * share:(i + 1) * share]), bs)
                for i, a in enumerate(actors) if texts[i * share:(i + 1) * share]]
        return np.concatenate(self.backend.ray.get(refs)).astype(np.float32, copy=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - ingest embeds passages
        raise NotImplementedError("the Ray embedder embeds passages for ingest; queries are embedded locally")


class _RayProducer(Producer):
    """The local producer's reading and skipping, with parsing and chunking on the workers, results in file order."""

    def __init__(self, backend: RayBackend, kb, files, q: queue.Queue, tags, reparse) -> None:
        super().__init__(kb, files, q, tags, reparse)
        self.backend = backend
        self.name = "ragclinic-ray-parse"

    def run(self) -> None:
        ray = self.backend.ray
        try:
            known = ray.put(self.known_docs)
            pending: deque = deque()
            limit = IN_FLIGHT * self.backend.workers
            turn = 0
            for path in self.files:
                if self.stop.is_set():
                    return
                try:
                    read = self.read(path)  # unchanged: its _FileDone is put now, in order
                except Exception as e:
                    self.put(failure_of(path, e))
                    continue
                if read is None:
                    continue
                actor = self.backend.actors[turn % self.backend.workers]
                turn += 1
                pending.append(actor.parse.remote(read[0], read[1], known))
                self._drain(pending, limit - 1)
            self._drain(pending, 0)
        except BaseException as e:  # surfaced by the consumer
            self.error = e
        finally:
            self.put(END)

    def _drain(self, pending: deque, keep: int) -> None:
        """Put the oldest files' results until at most ``keep`` are in flight (so the order stays the files')."""
        while len(pending) > keep and not self.stop.is_set():
            for item in self.backend.ray.get(pending.popleft()):
                self.put(item)


def ingest_on_ray(kb, paths: Sequence[Path], address: str, workers: int = 0, **kwargs):
    """``ingest.runner.ingest`` with the Ray backend, on the cluster at ``address`` (``auto``: a local runtime
    with ``workers`` CPUs)."""
    with connected(address, workers if address == "auto" else 0):
        backend = RayBackend(kb.settings, workers)
        try:
            return ingest(kb, list(paths), backend=backend, **kwargs)
        finally:
            backend.close()

