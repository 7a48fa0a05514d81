"""The doctor in the background (``"repair": "async"``): the plain answer is sent at once, and its trace waits
here for the doctor. One worker thread takes the waiting answers in order, with a clinic of its own, and runs
``Clinic.repair``; a repair that a re-run won (the doctor kept another run's answer) is published as "improved"
with what changed and why, any other outcome changes nothing the caller sees.

Bounded: at most ``repair_queue_max`` answers wait (one more is answered without the doctor: "skipped"); an
answer whose knowledge base changed before or while it was repaired is "dropped" (the repair would describe
documents that are no longer there); the last ``KEEP`` outcomes are kept in memory for ``GET /v1/repairs/{id}``
(the repaired answer itself stays in the trace and the answer cache). The worker's model calls give way to
questions being answered (pool.BACKGROUND), so a background repair never delays a first answer by more than the
model call it is in.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ragclinic.clinic import Question
from ragclinic.errors import RagclinicError
from ragclinic.pipeline.generate import CITE
from ragclinic.text.sentences import split_sentences
from ragclinic.server.pool import BACKGROUND, CANCELLED

log = logging.getLogger("ragclinic.server")
KEEP = 1000  # finished outcomes kept for GET /v1/repairs/{trace_id}
FINISHED = ("improved", "unchanged", "dropped", "skipped", "failed")


@dataclass(frozen=True)
class Outcome:
    """Where one answer's background repair stands; ``to_json`` is the `repair` object of `/v1/ask` and
    `GET /v1/repairs/{trace_id}`."""

    trace_id: str
    status: str  # pending | running | improved | unchanged | dropped | skipped | failed
    reason: str = ""
    changes: tuple[dict[str, Any], ...] = ()  # the accepted repairs: treatment, symptom, layer, what changed, why
    answer: dict[str, Any] | None = None  # the improved `ask --json` object ("improved" only)
    queued_at: float = field(default_factory=time.time)
    seconds: float | None = None  # the doctor's wall time, once it ran
    enforced: tuple[tuple[str, str], ...] = ()  # the asking key's tenant tags (who may read this outcome)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def to_json(self) -> dict[str, Any]:
        out = {"trace_id": self.trace_id, "status": self.status, "reason": self.reason,
               "changes": list(self.changes), "url": f"/v1/repairs/{self.trace_id}", "seconds": self.seconds}
        if self.answer is not None:
            out["answer"] = self.answer
        return out


@dataclass
class _Job:
    question: Question
    trace_id: str
    kb_version: int
    done: threading.Event = field(default_factory=threading.Event)


class RepairQueue:
    """Answers waiting for the doctor, one worker thread repairing them (``start`` / ``close``)."""

    def __init__(self, pool, settings, metrics=None, *, on_outcome=None) -> None:
        self.pool, self.settings, self.metrics = pool, settings, metrics
        self.on_outcome = on_outcome  # called with each finished Outcome (telemetry, tests)
        self._lock = threading.Condition()
        self._waiting: collections.deque[_Job] = collections.deque()
        self._outcomes: collections.OrderedDict[str, Outcome] = collections.OrderedDict()
        self._events: dict[str, threading.Event] = {}
        self._closed = False
        self._stop = threading.Event()  # set by close(): the running repair's next model call is refused
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ callers
    def submit(self, q: Question, trace_id: str, kb_version: int) -> Outcome:
        """Queue the plain answer ``trace_id`` (to ``q``) for the doctor → its pending Outcome, or "skipped"
        when the queue is full, background repair is off or the server is stopping."""
        limit = self.settings.repair_queue_max
        with self._lock:
            why = ("background repair is off (repair_queue_max is 0)" if limit == 0 else
                   "the server is stopping" if self._closed else
                   f"{limit} answers were already waiting for the doctor (repair_queue_max); this one was answered "
                   "without it" if len(self._waiting) >= limit else "")
            if why:
                skipped = self._finish(Outcome(trace_id, "skipped", why, enforced=q.enforced))
            else:
                job = _Job(q, trace_id, kb_version)
                self._waiting.append(job)
                self._events[trace_id] = job.done
                pending = self._keep(Outcome(trace_id, "pending", "waiting for the doctor", enforced=q.enforced))
                self._gauge()
                self._lock.notify()
        if why:
            self._announce([skipped])
            return skipped
        self._start()
        return pending

    def get(self, trace_id: str) -> Outcome | None:
        with self._lock:
            return self._outcomes.get(trace_id)

    def wait(self, trace_id: str, timeout: float, cancelled: threading.Event | None = None) -> Outcome | None:
        """The outcome once finished, or as it stands after ``timeout`` seconds (or when ``cancelled`` is set)."""
        with self._lock:
            done = self._events.get(trace_id)
        deadline = time.monotonic() + timeout
        while done is not None and not done.is_set() and time.monotonic() < deadline:
            if cancelled is not None and cancelled.is_set():
                break
            done.wait(min(0.25, max(0.0, deadline - time.monotonic())))
        return self.get(trace_id)

    def depth(self) -> int:
        with self._lock:
            return len(self._waiting)

    def close(self) -> None:
        """Stop taking answers; those still waiting are dropped, and the running repair's next model call is
        refused (the server is stopping: its clinics are about to close)."""
        with self._lock:
            self._closed = True
            dropped = self._drop_waiting("the server stopped before the doctor reached this answer")
            self._stop.set()
            self._lock.notify_all()
        self._announce(dropped)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def kb_changed(self, version: int | None) -> None:
        """An ingest ended with the knowledge base at ``version``: every waiting repair of an answer given at
        another version is dropped (None: all of them)."""
        with self._lock:
            dropped = self._drop_waiting("the knowledge base changed before the doctor reached this answer",
                                         lambda job: version is None or job.kb_version != version)
        self._announce(dropped)

    # ------------------------------------------------------------------ the worker
    def _start(self) -> None:
        with self._lock:
            if (self._thread is None or not self._thread.is_alive()) and not self._closed:
                self._thread = threading.Thread(target=self._work, name="ragclinic-repairs", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        BACKGROUND.set(True)  # this thread's model calls give way to questions being answered
        CANCELLED.set(self._stop)  # and are refused once the server stops
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                job = self._waiting.popleft()
                self._gauge()
                self._keep(Outcome(job.trace_id, "running", "the doctor is examining it",
                                   enforced=job.question.enforced))
            try:
                outcome = self._repair(job)
            except Exception as e:  # noqa: BLE001 - a failed repair changes nothing the caller sees
                log.error("the background repair of trace %s failed", job.trace_id, exc_info=e)
                outcome = Outcome(job.trace_id, "failed", f"the repair failed ({type(e).__name__}); the answer "
                                  "stands as it was sent", enforced=job.question.enforced)
            with self._lock:
                self._finish(outcome)
            self._announce([outcome])

    def _repair(self, job: _Job) -> Outcome:
        q, tid = job.question, job.trace_id
        t0 = time.perf_counter()
        with self.pool.background() as clinic:
            if clinic.kb.db.version != job.kb_version:
                return Outcome(tid, "dropped", "the knowledge base changed before the doctor reached this answer",
                               enforced=q.enforced)
            try:
                seen = clinic.repair(q, tid)
            except RagclinicError as e:
                return Outcome(tid, "failed", str(e), enforced=q.enforced)
            changed = clinic.kb.db.version != job.kb_version
        seconds = round(time.perf_counter() - t0, 3)
        if changed:
            return Outcome(tid, "dropped", "the knowledge base changed while the doctor worked on this answer",
                           seconds=seconds, enforced=q.enforced)
        result = seen.result
        if self.metrics is not None:
            self.metrics.observe_doctor(seen.answer)
        kept = [r for r in result.repairs if r.accepted]
        if result.summary.get("answer_trace_id", tid) == tid or not kept:
            why = result.summary.get("outcome", "")
            return Outcome(tid, "unchanged", _unchanged_reason(why, result.repairs), seconds=seconds,
                           enforced=q.enforced)
        if not _visibly_changed(result.initial, result.answer, kept):  # a re-run won; the user would read the same
            return Outcome(tid, "unchanged", f"the doctor's re-run ({', '.join(r.treatment for r in kept)}) gave the "
                           "same answer; it stands", seconds=seconds, enforced=q.enforced)
        changes = tuple({"treatment": r.treatment, "symptom": r.symptom, "layer": r.layer, "change": r.change,
                         "why": r.reason} for r in kept)
        return Outcome(tid, "improved", "; ".join(f"{r.treatment} ({r.symptom}): {r.reason}" for r in kept),
                       changes, seen.to_json(), seconds=seconds, enforced=q.enforced)

    # ------------------------------------------------------------------ bookkeeping (under the lock)
    def _keep(self, outcome: Outcome) -> Outcome:
        """Record ``outcome``; beyond KEEP the oldest *finished* ones are forgotten (an answer still waiting or
        being repaired is never: the queue bounds those)."""
        self._outcomes[outcome.trace_id] = outcome
        self._outcomes.move_to_end(outcome.trace_id)
        if len(self._outcomes) > KEEP:
            for old in [k for k, o in self._outcomes.items()
                        if o.finished and k != outcome.trace_id][:len(self._outcomes) - KEEP]:
                del self._outcomes[old]
                self._events.pop(old, None)
        return outcome

    def _finish(self, outcome: Outcome) -> Outcome:
        self._keep(outcome)
        done = self._events.get(outcome.trace_id)
        if done is not None:
            done.set()
        return outcome

    def _drop_waiting(self, reason: str, which=lambda job: True) -> list[Outcome]:
        kept: collections.deque[_Job] = collections.deque()
        dropped = []
        while self._waiting:
            job = self._waiting.popleft()
            if which(job):
                dropped.append(self._finish(Outcome(job.trace_id, "dropped", reason, enforced=job.question.enforced)))
            else:
                kept.append(job)
        self._waiting = kept
        self._gauge()
        return dropped

    # ------------------------------------------------------------------ outside the lock
    def _announce(self, outcomes) -> None:
        """Metrics and the ``on_outcome`` hook for finished outcomes; a hook that fails is logged, never the
        worker's or an ingest's end."""
        for outcome in outcomes:
            try:
                if self.metrics is not None:
                    self.metrics.background.labels(outcome.status).inc()
                if self.on_outcome is not None:
                    self.on_outcome(outcome)
            except Exception as e:  # noqa: BLE001 - observers never break the queue
                log.warning("a background repair's observer failed: %s", e)

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.repair_queue.set(len(self._waiting))


_CITATION_SYMPTOMS = ("citation_error", "unsupported_citation")


def _visibly_changed(before, after, kept) -> bool:
    """Whether the user reads another answer: other sentences (citation markers and their order aside), a refusal
    given or taken back,
    or — when a repair was for its citations — other passages cited. Citations renumbered or moved to a
    neighbouring passage of the same text, and the doctor's notes beside an answer whose words did not change
    ("may be incomplete"), are not worth interrupting anyone for: they stay in the trace and the answer cache."""
    def words(a) -> list[str]:  # its sentences without citation markers, in any order (a reordering says nothing new)
        text = CITE.sub("", a.text)
        return sorted(" ".join(text[i:j].split()) for i, j in split_sentences(text) if text[i:j].strip())

    if words(before) != words(after) or before.refused != after.refused:
        return True
    cited = [tuple(sorted({c.chunk_id for c in a.citations})) for a in (before, after)]
    return any(r.symptom in _CITATION_SYMPTOMS for r in kept) and cited[0] != cited[1]


def _unchanged_reason(outcome: str, repairs) -> str:
    if outcome == "healthy":
        return "the doctor found nothing to repair"
    tried = [r for r in repairs if r.after is not None]
    if tried:
        return (f"{len(tried)} repair(s) tried, none verifiably better ({tried[-1].treatment}: {tried[-1].reason}); "
                "the answer stands")
    return f"the doctor repaired nothing ({outcome or 'no treatment applied'}); the answer stands"
