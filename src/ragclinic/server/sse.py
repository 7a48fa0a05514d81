"""Running a question in a worker thread while its events stream out: layer results as they finish, the
answer's tokens, then citations, the doctor's symptoms and repairs, and the final ``ask --json`` object.

``Job`` bridges the pipeline's callbacks (called in the worker thread) to an asyncio queue the response
reads; a client that disconnects sets the job's ``cancelled`` event, which drops its queued model calls, stops
the one running at its next token and the pipeline before its next layer (ragclinic/cancel.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import StreamingResponse

from ragclinic.server.admission import Asks
from ragclinic.server.pool import ClientGone

log = logging.getLogger("ragclinic.server")
KEEPALIVE_S = 10.0
WATCH_S = 0.25  # while no event comes, how often the stream looks whether its client is still there
_DONE = object()


class Job:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: asyncio.Queue = asyncio.Queue()
        self.cancelled = threading.Event()

    def emit(self, event: str, data: Any) -> None:
        """Thread-safe: queue one event for the response."""
        self.loop.call_soon_threadsafe(self.events.put_nowait, (event, data))

    def start(self, asks: Asks, holder: str, work: Callable[["Job"], Any]) -> "Job":
        """``work(job)`` on the server's pool of question threads, in a slot of ``holder``'s (admission.py: 429
        when they are all taken — raised here, before the response starts); its result (or error) ends the
        stream, and the slot is free as soon as it returns."""
        asks.admit(holder)

        def target() -> None:
            try:
                work(self)
            except Exception as e:  # noqa: BLE001 - reported to the client as an `error` event
                self.emit("error", failed(e))
            finally:
                self.loop.call_soon_threadsafe(self.events.put_nowait, _DONE)

        asks.submit(holder, self.cancelled, target)
        return self

    async def stream(self, is_disconnected: Callable[[], Any]) -> AsyncIterator[tuple[str, Any] | None]:
        """(event, data) pairs, None for a keep-alive; stops at the end of the work or when the client left. However
        the stream ends — the work done, the client gone, the response cancelled — the job's queued model calls
        are dropped."""
        try:
            quiet = 0.0
            while True:
                try:
                    item = await asyncio.wait_for(self.events.get(), timeout=WATCH_S)
                except asyncio.TimeoutError:
                    if await is_disconnected():  # looked at often: the work stops soon after its client left
                        return
                    quiet += WATCH_S
                    if quiet >= KEEPALIVE_S:
                        quiet = 0.0
                        yield None
                    continue
                quiet = 0.0
                if item is _DONE:
                    return
                yield item
        finally:
            self.cancelled.set()


class JobResponse(StreamingResponse):
    """A job's event stream as the response: whenever the response ends — sent in full, its client gone, the
    request cancelled — the job is cancelled. ``Job.stream``'s own ``finally`` is not enough: a response cancelled
    while its body generator waits at a ``yield`` (its last chunk not yet taken by a client that left) never closes
    the generator, and the work then ran to its end and saved its trace (a CI flake of test_abandoned.py)."""

    def __init__(self, job: Job, body: AsyncIterator[str], headers: dict[str, str] | None = None) -> None:
        super().__init__(body, media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})})
        self.job = job

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.job.cancelled.set()


def failed(e: BaseException) -> dict:
    """The `error` event for a request that failed after its stream began: an error id, the detail (paths, SQL,
    other tenants' names) in the server's log under that id, never in the event."""
    error_id = secrets.token_hex(6)
    if isinstance(e, ClientGone):  # nobody is reading: not a server fault
        log.info("a streamed request ended: its client left (error id %s)", error_id)
    else:
        log.error("a streamed request failed (error id %s)", error_id, exc_info=e)
    return {"error": {"code": "internal_error", "error_id": error_id,
                      "message": f"the request failed (error id {error_id}); the server log has the details"}}


def sse_event(n: int, event: str, data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    lines = "".join(f"data: {line}\n" for line in payload.split("\n"))
    return f"id: {n}\nevent: {event}\n{lines}\n"


def span_event(span, state) -> tuple[str, dict] | None:
    """The streamed summary of a finished layer (retrieval, scope, gate); None for the others."""
    if span.layer == "retrieve":
        return "retrieval", {"hits": [{"rank": i, "chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id,
                                       "score": round(h.score, 6),
                                       "sources": [{"retriever": s.retriever, "rank": s.rank, "score": s.score}
                                                   for s in h.sources]}
                                      for i, h in enumerate(state.hits, start=1)],
                             "ms": span.duration_ms}
    if span.layer == "scope":
        return "scope", {"passages": [{"n": p.n, "chunk_id": p.chunk.id, "doc_id": p.chunk.doc_id, "path": p.doc.path,
                                       "title": p.doc.title} for p in state.passages],
                         "excluded": [{"doc_id": e.doc_id, "chunk_id": e.chunk_id, "rule": e.rule, "reason": e.reason}
                                      for e in state.excluded],
                         "ms": span.duration_ms}
    if span.layer == "gate" and state.decision is not None:
        d = state.decision
        return "gate", {"route": d.route, "question_type": d.question_type, "evidence_score": d.evidence_score,
                        "reason": d.reason, "ms": span.duration_ms}
    return None


async def sse_body(job: Job, is_disconnected: Callable[[], Any], done: bool = False) -> AsyncIterator[str]:
    """The response body of a job's stream: numbered events, keep-alive comments, and (``done``) a closing
    ``done`` event for clients such as htmx's SSE extension that wait for one."""
    n = 0
    async for item in job.stream(is_disconnected):
        if item is None:
            yield ": keep-alive\n\n"
            continue
        n += 1
        yield sse_event(n, *item)
    if done:
        yield sse_event(n + 1, "done", "")
