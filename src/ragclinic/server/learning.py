"""``kb learn`` in the server's background (issue 53): ``POST /v1/kb/learn`` (admin keys) starts it, ``GET
/v1/kb/learn`` says where it stands, and with ``learn_after_ingest`` every ingest starts it. One run at a time, in
one thread with a clinic of its own; its model calls are background calls (server/pool.py), so a question's call
always goes first and the knowledge base answers throughout. Stopped between chunks when the server shuts down; the
next run goes on where it stopped (learn/run.py)."""

from __future__ import annotations

import logging
import threading
import time

from fastapi import APIRouter, Request

from ragclinic.clinic import Clinic
from ragclinic.server.deps import Caller, state
from ragclinic.server.errors import ApiError
from ragclinic.server.pool import BACKGROUND

log = logging.getLogger("ragclinic.server")
router = APIRouter(prefix="/v1")


class Learner:
    def __init__(self, pool, settings) -> None:
        self.pool, self.settings = pool, settings
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread: threading.Thread | None = None
        self._clinic: Clinic | None = None
        self.status: dict = {"state": "idle", "done": 0, "total": None, "started": None, "finished": None,
                             "result": None, "error": None}

    def start(self) -> dict:
        """Start a run unless one is running; → the status (``started``: whether this call started it)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return {**self.status, "started_now": False}
            if self.pool.model is None:
                raise ApiError(409, "no_model", "kb learn needs a language model: start the server with --llm local "
                                                "(or openai)")
            self.status = {"state": "running", "done": 0, "total": None, "started": time.time(), "finished": None,
                           "result": None, "error": None}
            self._thread = threading.Thread(target=self._run, name="ragclinic-learn", daemon=True)
            self._thread.start()
            return {**self.status, "started_now": True}

    def _run(self) -> None:
        BACKGROUND.set(True)  # questions' model calls go first
        try:
            if self._clinic is None:
                self._clinic = Clinic(self.settings, model=self.pool.model, sync_indexes=False)
            res = self._clinic.learn(on_progress=self._progress, should_stop=self._stop.is_set)
            self.status.update(state="done", result=res.to_json())
        except Exception as e:  # noqa: BLE001 - reported on GET /v1/kb/learn and in the log
            log.exception("kb learn failed")
            self.status.update(state="failed", error=str(e))
        finally:
            self.status["finished"] = time.time()

    def _progress(self, done: int, total: int) -> None:
        self.status.update(done=done, total=total)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        if self._clinic is not None:
            self._clinic.close()


def _admin(request: Request, who) -> None:
    if who.tenant:
        raise ApiError(403, "forbidden", "kb learn reads every tenant's chunks: it needs a key without a tenant")


@router.post("/kb/learn", tags=["documents"], status_code=202)
def learn(request: Request, who=Caller) -> dict:
    """Start `kb learn` in the background (admin keys): the model writes each new chunk's questions and keywords;
    the gate is fitted on them (retrieval ranks by them with learned_retrieval on). → where it stands
    (`started_now`: false when a run was already going)."""
    _admin(request, who)
    return state(request).learner.start()


@router.get("/kb/learn", tags=["documents"])
def learn_status(request: Request, who=Caller) -> dict:
    """Where the background `kb learn` stands: state (idle, running, done, failed), done / total chunks, the last
    run's result (the `kb learn --json` object)."""
    _admin(request, who)
    return state(request).learner.status
