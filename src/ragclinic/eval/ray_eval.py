"""`eval ... --ray`: evaluation items shared out among Ray workers (issue 18 §2).

- retrieval: the corpus is ingested through the Ray backend (scale/ray_ingest.py), then each worker opens the
  knowledge base (its folder must be readable from every node: shared storage, or the same path on each) and
  ranks its share of the queries; the driver computes the metrics, so they are those of a local run.
- rag / doctor: each worker is an actor with its own model service (loaded once, ``llm_threads`` = its CPUs); a
  case runs wholly on one worker (its knowledge base under the run's ``kbs/``, as locally); rows come back as
  they finish and the driver appends them to ``items.jsonl``, so a killed run resumes from its checkpoint and a
  dead worker's case is retried by Ray (``max_task_retries``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from ragclinic import wiring
from ragclinic.config import Settings
from ragclinic.eval.tasks.rag import run_case
from ragclinic.eval.tasks.retrieval import rank_queries
from ragclinic.scale.ray_ingest import RayBackend
from ragclinic.scale.runtime import cluster_cpus, require_ray, worker_env

RETRIES = 2


class _Ranker:
    def __init__(self, settings) -> None:
        self.kb = wiring.open_kb(settings)

    def rank(self, names: list[str], queries: dict[str, str], depth: int) -> dict:
        return rank_queries(self.kb, names, queries, depth)


class _CaseWorker:
    def __init__(self, llm: str, threads: int) -> None:
        self.lm = wiring.language_model(Settings.load(None, llm=llm, llm_threads=threads))[0] if llm != "none" \
            else None

    def run(self, case, base_settings: dict, doctor: bool, shared_kb: str | None, kb_root: str | None,
            arms: tuple[str, ...]) -> dict:
        shared = wiring.open_kb(Settings.load(Path(shared_kb), llm=base_settings.get("llm"))) if shared_kb else None
        try:
            return run_case(case, self.lm, base_settings, doctor, shared, Path(kb_root) if kb_root else None, arms)
        finally:
            if shared is not None:
                shared.close()


class RayEval:
    """The ``ray`` of run_retrieval / run_rag, over the cluster Ray is connected to: ``workers`` actors (0: one
    per CPU), each ``cpus`` CPUs."""

    def __init__(self, workers: int = 0, llm: str = "none") -> None:
        self.ray = ray = require_ray()
        self.workers = workers or cluster_cpus(ray)
        self.llm = llm

    def ingest_backend(self, kb):
        return RayBackend(kb.settings, self.workers)

    def rank(self, settings, names: list[str], queries: dict[str, str], depth: int) -> dict[str, tuple[dict, float]]:
        ray = self.ray
        cls = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_Ranker)
        actors = [cls.options(runtime_env=worker_env()).remote(settings) for _ in range(self.workers)]
        try:
            ids = list(queries)
            shares = [ids[i::len(actors)] for i in range(len(actors))]
            t0 = time.perf_counter()
            parts = ray.get([a.rank.remote(names, {q: queries[q] for q in share}, depth)
                             for a, share in zip(actors, shares) if share])
            wall = time.perf_counter() - t0
        finally:
            for a in actors:
                ray.kill(a)
        out = {}
        for name in names:
            best: dict = {}
            for part in parts:
                best.update(part[name][0])
            out[name] = (best, wall)  # the wall time: what a user waits for
        return out

    def cases(self, todo: list, base_settings: dict, doctor: bool, shared_kb, kb_root: Path | None,
              arms: tuple[str, ...]) -> Iterator[dict]:
        """Each case's row as soon as it is done (in the order they finish)."""
        if not todo:
            return
        ray = self.ray
        n = min(self.workers, len(todo))
        cls = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_CaseWorker)
        actors = [cls.options(runtime_env=worker_env()).remote(self.llm, 1) for _ in range(n)]
        shared = str(shared_kb.folder) if shared_kb is not None else None
        root = str(kb_root) if kb_root is not None else None
        try:
            from ray.util import ActorPool  # on use: ray, the ray extra

            pool = ActorPool(actors)
            yield from pool.map_unordered(
                lambda a, c: a.run.remote(c, base_settings, doctor, shared, root, arms), todo)
        finally:
            for a in actors:
                ray.kill(a)
