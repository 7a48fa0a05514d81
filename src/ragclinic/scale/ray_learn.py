"""`kb learn --ray`: the questions of a batch of chunks written by the model on each Ray worker (issue 53).

Each worker is an actor holding its own model (loaded once, ``llm_threads`` = its one CPU) that writes one chunk's
questions and keywords at a time; the driver hands out a batch of chunks (two a worker), takes the completions
back in ingest order and ranks, embeds and stores each as it comes (learn/run.py) — so the knowledge base, its
lock and its one-transaction-per-chunk resumability stay on this machine, and a ``kill -9`` loses at most the
batch in flight. A worker that dies is restarted and its chunk written again by Ray (``max_task_retries``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ragclinic.learn.run import write_one
from ragclinic.scale.runtime import cluster_cpus, connected, require_ray, worker_env

RETRIES = 2
PER_WORKER = 2  # chunks a worker is handed per batch: one writing, one waiting


class _Writer:
    def __init__(self, make_model: Callable) -> None:
        self.lm = make_model()

    def model_id(self) -> str:
        return getattr(self.lm, "model_id", "model")

    def write(self, text: str, language: str, n: int, max_tokens: int) -> tuple:
        done, seconds = write_one(self.lm, text, language, n, max_tokens)
        return done, seconds


@contextmanager
def on_ray(address: str, llm: str, workers: int = 0, make_model: Callable | None = None) -> Iterator["RayWriter"]:
    """A RayWriter on the cluster at ``address`` (``auto``: a local runtime for the run), its workers each with the
    model ``llm`` names (or ``make_model()``), killed afterwards."""
    with connected(address):
        writer = RayWriter(make_model or local_model(llm), workers)
        try:
            yield writer
        finally:
            writer.close()


def local_model(llm: str) -> Callable:
    """How a worker makes the model named by ``llm`` (the settings' ``llm``: local, local-small, openai …)."""

    def make():
        from ragclinic import wiring  # on use: in the worker process
        from ragclinic.config import Settings  # on use: in the worker process

        lm, flags = wiring.language_model(Settings.load(None, llm=llm, llm_threads=1))
        if lm is None:
            raise RuntimeError(f"kb learn --ray: the worker has no language model for llm={llm!r} ({flags})")
        return lm

    return make


class RayWriter:
    """``learn/run.py``'s Writer over the cluster Ray is connected to: ``workers`` actors (0: one per CPU)."""

    def __init__(self, make_model: Callable, workers: int = 0) -> None:
        self.ray = ray = require_ray()
        self.workers = workers or cluster_cpus(ray)
        self.batch = self.workers * PER_WORKER
        cls = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Writer)
        self.actors = [cls.options(runtime_env=worker_env()).remote(make_model) for _ in range(self.workers)]
        self.model_id = ray.get(self.actors[0].model_id.remote())  # waits for a model: a worker's error shows here

    def write(self, chunks: Sequence[tuple[str, str]], n: int, max_tokens: int) -> Iterator[tuple]:
        from ray.util import ActorPool  # on use: ray, the ray extra

        pool = ActorPool(self.actors)
        yield from pool.map(lambda a, c: a.write.remote(c[0], c[1], n, max_tokens), list(chunks))

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
