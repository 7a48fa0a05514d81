"""Work a client no longer waits for (issue 51): the server gives each request an event that it sets when the
client leaves (``CURRENT``, a context variable: each worker thread sees its own request's); the pipeline checks
it between layers, the model between tokens (a model in a worker process is asked to stop, and the worker stays
in step: models/service.py), and ``Withdrawn`` ends the work — nothing more is computed or saved for nobody."""

from __future__ import annotations

import threading
from contextvars import ContextVar

from ragclinic.errors import ModelError

CURRENT: ContextVar[threading.Event | None] = ContextVar("ragclinic_cancelled", default=None)


class Withdrawn(ModelError):
    """The request's client disconnected: the work for it was stopped."""


def requested() -> bool:
    """Has the client of the request this thread works for gone?"""
    gone = CURRENT.get()
    return gone is not None and gone.is_set()


def check(where: str) -> None:
    """Raise ``Withdrawn`` when the client of this thread's request has gone (``where``: what was about to run)."""
    if requested():
        raise Withdrawn(f"the client disconnected: {where} was not run")
