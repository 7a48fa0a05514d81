"""The model service: a language model in a worker process that ragclinic owns, behind the LanguageModel role.

One :class:`ModelService` per (model, context size, threads) per process, shared by every caller (the CLI's
pipeline and doctor, the coming HTTP server's requests). Requests are queued: one runs in the worker at a
time, in arrival order. The worker loads the model once and answers with the same code an in-process model
runs (``LlamaModel``), so results are identical.

If the worker dies — a signal (SIGSEGV in llama.cpp, SIGKILL from the OOM killer), a native assertion
(SIGABRT), or it stops answering for ``llm_call_timeout`` seconds — the call in flight raises
:class:`~ragclinic.errors.ModelCrashed` with the reason, the service forgets the worker, and the next call
starts a new one. The pipeline answers that question extractively and says why.

A service given a :class:`~ragclinic.models.warm.WarmSpec` (the CLI's one-shot commands, ``llm_warm_seconds`` > 0)
first connects to the user's warm worker for this model (models/warm.py: one per user and configuration, on a
Unix socket, alive between commands) and starts a private worker only when that fails.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragclinic import cancel
from ragclinic.errors import ModelCrashed, ModelError
from ragclinic.models import warm
from ragclinic.models.hidden import wants_hidden
from ragclinic.models.llm import Completion, Message, TokenCallback
from ragclinic.models.process import EOF, describe_exit, drain, pump, worker_env

log = logging.getLogger("ragclinic.models.service")


# a worker's start (a Python process importing its backend, then loading the weights) is never given less than this,
# however short llm_call_timeout is: on a loaded machine the import alone can take seconds
LOAD_FLOOR_S = 30.0

POLL_S = 0.25  # how often a call waiting on its worker looks whether its client has left


def _withdraw(w) -> None:
    """Ask the worker to stop the reply it is writing (SIGUSR1, models/worker.py); it replies ``Withdrawn`` at
    its next token and keeps the model. A worker that cannot be signalled (a warm one, shared) finishes it."""
    interrupt = getattr(w, "interrupt", None)
    try:
        if interrupt is not None:
            interrupt()
    except OSError:  # already gone: its end is read next
        pass


class StartFailed(ModelError):
    """The worker could not load the model (it died loading it, or answered that it cannot)."""


@dataclass
class _Worker:
    proc: subprocess.Popen
    replies: "queue.Queue"
    stderr_tail: deque = field(default_factory=lambda: deque(maxlen=30))
    info: dict = field(default_factory=dict)

    # what ModelService asks of a worker; models/warm.py's WarmWorker answers the same for a warm one
    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, line: str) -> None:
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.kill()

    def interrupt(self) -> None:
        """Withdraw the request being answered (the worker stops at its next token, and stays in step)."""
        os.kill(self.proc.pid, signal.SIGUSR1)

    def ended(self) -> str:
        """Why it ended (waits for the exit status; kills it if it does not exit)."""
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return describe_exit(code)

    def stop(self, kill: bool = False) -> None:
        try:
            if self.alive() and not kill:
                self.send(json.dumps({"op": "quit"}) + "\n")
                self.proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except (OSError, ValueError):
                pass


class ModelService:
    """Owns at most one worker process at a time; starts one on demand, replaces it after a crash."""

    def __init__(self, name: str, settings: dict, *, options: dict | None = None, timeout: float = 900.0,
                 label: str | None = None, warm=None) -> None:
        """``warm``: a :class:`~ragclinic.models.warm.WarmSpec` to use the user's warm worker (None: private ones)."""
        self.name, self.settings, self.options = name, dict(settings), dict(options or {})
        self.timeout = timeout
        self.label = label or f"the {name} model"
        self.warm = warm
        self.warm_skipped: str | None = None  # why the last start did not use a warm worker
        self._worker = None  # a _Worker, or a warm.WarmWorker
        self._lock = threading.Lock()  # the queue: one request in the worker at a time
        self.starts = 0  # workers started so far (1 + restarts); a warm worker counts where this service started it
        self.crashes: list[str] = []

    # ------------------------------------------------------------------ lifecycle
    @property
    def pid(self) -> int | None:
        w = self._worker
        return w.pid if w is not None and w.alive() else None

    @property
    def info(self) -> dict:
        """What the worker reported when it loaded: model_id, backend (CPU variant), seconds, pid."""
        return dict(self._worker.info) if self._worker else {}

    def start(self) -> dict:
        with self._lock:
            return self._ensure().info

    def start_soon(self) -> None:
        """Start the worker on a thread (the command goes on to retrieval meanwhile); the first call waits for it on
        the queue's lock, and a start that failed is tried again there, where its error is raised."""
        def run() -> None:
            try:
                self.start()
            except BaseException:  # noqa: BLE001 - the first call starts it again and raises the error
                pass

        threading.Thread(target=run, daemon=True, name="ragclinic-model-start").start()

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _load_request(self) -> dict:
        return {"op": "load", "name": self.name, "settings": self.settings, "options": self.options}

    def _ensure(self) -> _Worker:
        if self._worker is not None and self._worker.alive():
            return self._worker
        self._worker = None
        if self.warm is not None and (w := self._connect_warm()) is not None:
            return w
        return self._start_private()

    def _start_private(self) -> _Worker:
        proc = subprocess.Popen([sys.executable, "-m", "ragclinic.models.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env(),
                                start_new_session=True, text=True, encoding="utf-8", bufsize=1)
        w = _Worker(proc, queue.Queue())
        threading.Thread(target=pump, args=(proc.stdout, w.replies), daemon=True).start()
        threading.Thread(target=drain, args=(proc.stderr, w.stderr_tail), daemon=True).start()
        self.starts += 1
        self._worker = w
        try:
            reply = self._request(self._load_request(), timeout=max(self.timeout, LOAD_FLOOR_S))
        except ModelCrashed as e:
            raise StartFailed(f"{self.label} could not start: {e.reason}") from None
        except ModelError as e:  # the worker answered that it cannot load the model
            self._stop(kill=True)
            raise StartFailed(str(e)) from None
        except BaseException:  # interrupted: no half-started worker stays
            self._stop(kill=True)
            raise
        w.info = {k: reply[k] for k in ("model_id", "backend", "seconds", "pid")}
        return w

    def _connect_warm(self):
        """The user's warm worker (started if there is none), or None — with the reason in a debug log."""
        try:
            w, started = warm.connect(self.warm, self._load_request(), load_timeout=self.timeout)
        except warm.Unavailable as e:
            self.warm_skipped = str(e)
            log.debug("%s: no warm worker (%s); starting a private one", self.label, e)
            return None
        self.warm_skipped = None
        self.starts += started
        self._worker = w
        return w

    def _stop(self, kill: bool = False) -> None:
        """Stop this service's worker; a warm worker is only disconnected from (it serves the next command)."""
        w, self._worker = self._worker, None
        if w is not None:
            w.stop(kill)

    # ------------------------------------------------------------------ requests
    def call(self, request: dict, on_token: TokenCallback | None = None):
        """Send one request (queued behind any running one); the worker's result, or ModelCrashed."""
        with self._lock:
            self._ensure()
            try:
                return self._request(request, on_token)["result"]
            except ModelError:
                raise  # the worker replied (an error) or is gone: the protocol is in step
            except BaseException:
                self._stop(kill=True)  # interrupted mid-reply (Ctrl-C, a failing on_token): its replies are stale
                raise

    def _request(self, request: dict, on_token: TokenCallback | None = None, timeout: float | None = None) -> dict:
        w = self._worker
        timeout = self.timeout if timeout is None else timeout
        try:
            w.send(json.dumps(request) + "\n")  # ASCII: any str, lone surrogates included
        except (BrokenPipeError, OSError, ValueError):
            raise self._crashed(w, "") from None
        deadline, withdrawn = time.monotonic() + timeout, False
        while True:
            if not withdrawn and request.get("op") != "load" and cancel.requested():  # the client left: the
                # worker (loaded, so listening for the signal) stops at its next token
                withdrawn = True
                _withdraw(w)
            try:
                line = w.replies.get(timeout=min(POLL_S, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                w.kill()
                raise self._crashed(w, f"no reply within llm_call_timeout={timeout:g} s") from None
            if line is EOF:
                raise self._crashed(w, "")
            try:
                reply = json.loads(line)
            except ValueError:  # cut off mid-line: the worker died while writing
                w.kill()
                raise self._crashed(w, "") from None
            if "token" in reply:
                if on_token:
                    on_token(reply["token"])
                continue
            if not reply.get("ok"):
                if reply.get("kind") == "Withdrawn":
                    raise cancel.Withdrawn(f"the client disconnected: {self.label} stopped its reply")
                raise ModelError(f"{self.label}: {reply.get('error', 'failed')}")
            return reply

    def _crashed(self, w: _Worker, why: str) -> ModelCrashed:
        ended = w.ended()
        self._worker = None
        w.close()
        reason = f"{self.label} crashed: {why or ended}"
        self.crashes.append(reason)
        err = ModelCrashed(reason)
        err.stderr = "\n".join(w.stderr_tail)
        return err


class ServiceModel:
    """The LanguageModel that runs in a :class:`ModelService` worker."""

    def __init__(self, service: ModelService, model_id: str | None = None) -> None:
        """``model_id`` known beforehand (from the weights' spec): the worker starts on a thread and the first call
        waits for it — a cold ``ragclinic ask`` retrieves while the model loads. A start that fails then surfaces
        at that call as a crash (the question is answered without the model, and says so) rather than here."""
        self.service = service
        self.deferred = model_id is not None
        self.start_error = ""  # a deferred start's load failure (later calls fail at once)
        if model_id is None:
            self.model_id = service.start()["model_id"]
        else:
            self.model_id = model_id
            service.start_soon()

    def _call(self, request: dict, on_token: TokenCallback | None = None):
        if self.start_error:  # the model cannot load: do not start a worker again for every call
            raise ModelCrashed(self.start_error)
        try:
            return self.service.call(request, on_token)
        except StartFailed as e:
            if self.deferred:
                self.start_error = str(e)
                raise ModelCrashed(str(e)) from None
            raise

    def wait_started(self) -> dict:
        """Wait for the worker (a deferred start included); its load error as the ModelError it is."""
        return self.service.start()

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        request = {"op": "chat", "messages": _dump(messages), "max_tokens": max_tokens, "temperature": temperature,
                   "stream": on_token is not None, "schema": schema}
        if hidden_layers:
            request["hidden_layers"] = list(hidden_layers)
        if logprobs:
            request["logprobs"] = True
        text, prompt, completion, finish, *rest = self._call(request, on_token)
        hidden = {int(k): np.asarray(v, dtype=np.float32) for k, v in (rest[1] if len(rest) > 1 else {}).items()}
        marks = tuple((int(at), float(lp)) for at, lp in (rest[2] if len(rest) > 2 else ()))
        return Completion(text, prompt, completion, finish, rest[0] if rest else 0, hidden=hidden, logprobs=marks)

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        return self._call({"op": "probs", "messages": _dump(messages), "candidates": list(candidates)})

    def count_tokens(self, text: str) -> int:
        return self._call({"op": "count", "text": text})


def _dump(messages: Sequence[Message]) -> list[list[str]]:
    return [[m.role, m.content] for m in messages]


_SERVICES: dict[tuple, ModelService] = {}
_SERVICES_LOCK = threading.Lock()


def shared_service(name: str, settings) -> ModelService:
    """The process's service for this model (one worker however many pipelines use it). In a process that opted in
    (``warm.opt_in()``: the CLI's one-shot commands) with ``llm_warm_seconds`` > 0, its worker is the user's warm
    one; ``serve``, ``eval`` and library callers keep private workers."""
    key = (name, settings.llm_n_ctx, settings.llm_threads, str(settings.cache_dir), settings.llm_cpu_variant,
           settings.llm_prefix_cache, settings.llm_field_decoding, wants_hidden(settings))
    with _SERVICES_LOCK:
        svc = _SERVICES.get(key)
        if svc is None:
            payload = {"cache_dir": str(settings.cache_dir), "llm_n_ctx": settings.llm_n_ctx,
                       "llm_threads": settings.llm_threads, "seed": settings.seed,
                       "llm_prefix_cache": settings.llm_prefix_cache,
                       "llm_field_decoding": settings.llm_field_decoding,
                       "llm_hidden_capture": wants_hidden(settings)}
            svc = ModelService(name, payload, options={"cpu_variant": settings.llm_cpu_variant},
                               timeout=settings.llm_call_timeout, label=f"the {name} model",
                               warm=warm.spec_for(settings))
            _SERVICES[key] = svc
        return svc


@atexit.register
def _close_all() -> None:
    for svc in list(_SERVICES.values()):
        svc.close()
    _SERVICES.clear()
