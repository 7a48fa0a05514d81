"""An in-process stand-in for :class:`~ragclinic.models.service.ModelService`, for tests of code that shares a
model service (the coming HTTP server): no worker process, the same request protocol and the same failure
behaviour. ``crash_next(signal)`` makes the next request fail the way a worker death does (ModelCrashed, the
"worker" forgotten), and the request after it "starts" a new one."""

from __future__ import annotations

import threading

from ragclinic.errors import ModelCrashed, ModelError
from ragclinic.models.llm import TokenCallback
from ragclinic.models.worker import answer, load


class FakeModelService:
    def __init__(self, name: str = "fake", settings: dict | None = None, *, options: dict | None = None,
                 label: str | None = None) -> None:
        self.name, self.settings, self.options = name, dict(settings or {}), dict(options or {})
        self.label = label or f"the {name} model"
        self.starts = 0
        self.crashes: list[str] = []
        self.info: dict = {}
        self._model = None
        self._crash = ""
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.starts if self._model is not None else None  # a stand-in id, new per "worker"

    def start(self) -> dict:
        with self._lock:
            self._ensure()
            return dict(self.info)

    def close(self) -> None:
        with self._lock:
            self._model = None

    def crash_next(self, signal_name: str = "SIGSEGV") -> None:
        self._crash = signal_name

    def call(self, request: dict, on_token: TokenCallback | None = None):
        with self._lock:
            self._ensure()
            if self._crash:
                reason, self._crash, self._model = f"{self.label} crashed: {self._crash}", "", None
                self.crashes.append(reason)
                raise ModelCrashed(reason)
            try:
                return answer(self._model, request, on_token)
            except Exception as e:  # noqa: BLE001 - what the worker would reply
                raise ModelError(f"{self.label}: {type(e).__name__}: {e}") from None

    def _ensure(self) -> None:
        if self._model is not None:
            return
        try:
            self._model, backend = load(self.name, self.settings, self.options)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{self.label}: {type(e).__name__}: {e}") from None
        self.starts += 1
        self.info = {"model_id": self._model.model_id, "backend": backend, "seconds": 0.0, "pid": self.starts}
