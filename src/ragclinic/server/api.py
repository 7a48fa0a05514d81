"""The native API: ask (JSON or server-sent events), retrieval, ingest, traces, replay, diagnose, feedback.

Every route takes the caller's key (deps.principal); a tenant's key sees only its tenant: its tag is enforced
in the scope layer of every question and search, its uploads are tagged with it, and traces of other tenants
are answered as if they did not exist.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from ragclinic.clinic import Question
from ragclinic.errors import OutsideScope, StoreError
from ragclinic.limits import check_question, check_scope, check_text
from ragclinic.server import telemetry, uploads
from ragclinic.server.admission import holder_of
from ragclinic.server.auth import Principal
from ragclinic.server.deps import Caller, state
from ragclinic.server.errors import ApiError, no_trace
from ragclinic.server.sse import Job, JobResponse, span_event, sse_body
from ragclinic.server.ui_parts import local_paths, own_trace, seen_by
from ragclinic.trace.store import list_traces

Scope = dict[str, str]


async def bounded(request: Request, _who: Principal = Caller) -> None:
    """Every JSON body's bounded fields (question, query, scope, expected, note), checked against the settings
    before the route parses the body or does any work (the limits are settings, so they are checked here rather
    than in the body models). Starlette keeps the parsed body: the route reads the same one."""
    if "json" not in request.headers.get("content-type", "json").lower():  # FastAPI parses application/JSON too
        return
    try:
        data = await request.json()
    except (ValueError, UnicodeDecodeError):
        return  # the route's validation says what is wrong with it
    if isinstance(data, dict):
        check_body(state(request).settings, data)


def check_body(settings, data: dict[str, Any]) -> None:
    for field in ("question", "query"):
        if isinstance(data.get(field), str):
            check_question(settings, data[field], field)
    if isinstance(data.get("scope"), dict):
        check_scope(settings, data["scope"])
    for text in data.get("expected") if isinstance(data.get("expected"), list) else ():
        if isinstance(text, str):
            check_question(settings, text, "expected")
    if isinstance(data.get("note"), str):
        check_text(settings, data["note"], "note", "max_feedback_note_chars")


router = APIRouter(prefix="/v1", dependencies=[Depends(bounded)])


class AskBody(BaseModel):
    question: str = Field(min_length=1)  # at most max_question_chars (bounded)
    scope: Scope | None = None
    doctor: bool = True
    top_k: int | None = Field(None, ge=1, le=100)
    # "async": the plain answer at once, the doctor after it (its outcome: the answer's `repair` object, then
    # GET /v1/repairs/{trace_id}, or the `improved` / `repair_outcome` events of the same stream)
    repair: Literal["sync", "async"] = "sync"
    # a running experiment assigns the arm by this (one user stays in one arm); default: the key
    session: str | None = Field(None, min_length=1, max_length=128)


class RetrievalBody(BaseModel):
    query: str = Field(min_length=1)
    scope: Scope | None = None
    k: int = Field(10, ge=1, le=100)


class DiagnoseBody(BaseModel):
    question: str | None = Field(None, min_length=1)
    trace_id: str | None = Field(None, min_length=1, max_length=64)
    expected: list[str] = Field(default_factory=list, max_length=20)
    gold_doc: str | None = Field(None, max_length=1000)
    expect_refusal: bool = False
    scope: Scope | None = None
    apply: bool = False  # carry the fix out on a copy and re-ask (the answer gains "applied"; keeping is the CLI's)
    others: int = Field(20, ge=0, le=50)  # with apply: recent questions re-asked for side effects


class FeedbackBody(BaseModel):
    trace_id: str = Field(min_length=1, max_length=64)
    rating: Literal[1, -1]
    note: str = ""  # at most max_feedback_note_chars (bounded)
    expected: list[str] = Field(default_factory=list, max_length=20)  # the right answer (alternatives), each bounded
    expect_refusal: bool = False  # or: it should have been a refusal (the documents do not answer it)


# ---------------------------------------------------------------------- ask
@router.post("/ask", tags=["answers"])
async def ask(body: AskBody, request: Request, who: Principal = Caller):
    """The `ask --json` object; with `Accept: text/event-stream`, server-sent events: retrieval, scope, gate,
    delta (answer text), citation, symptom, repair, final (the same object), error. `"repair": "async"`: the
    plain answer with a `repair` object (status "pending", or "skipped" when the queue is full); a stream then
    stays open for the outcome: `improved` (the better answer, what changed and why) or `repair_outcome`
    (unchanged, dropped, failed; or pending / running when `repair_wait_s` ran out)."""
    rc = state(request)
    holder = holder_of(request, who)
    if "text/event-stream" in request.headers.get("accept", ""):
        job = Job(asyncio.get_running_loop()).start(rc.asks, holder, _ask_work(rc, body, who))
        return JobResponse(job, sse_body(job, request.is_disconnected))
    rc.asks.admit(holder)
    seen = await rc.asks.answer(holder, lambda: consult(rc, body, who, None, None))
    return seen.to_json()


def consult(rc, body: AskBody, who: Principal, on_token, on_span):
    """The clinic's consultation for ``body``, observed (metrics, telemetry) and as ``who`` may see it; with
    ``repair="async"`` its trace queued for the doctor and the payload's ``repair`` saying so."""
    q = Question(body.question, body.scope or (), body.doctor, body.top_k, enforced=who.enforced,
                 repair=body.repair, session=body.session or who.key_id)
    with rc.pool.reader() as clinic:
        seen = clinic.answer(q, on_token=on_token, on_span=on_span)
    rc.metrics.observe_answer(seen)
    telemetry.emit(rc.tracer, seen)
    if seen.repair_pending:
        pending = rc.repairs.submit(q, seen.trace.id, seen.trace.kb_version)
        seen = replace(seen, repair=pending.to_json())
    return seen_by(seen, who, rc.settings)  # a tenant's key: no server folder in a source path


def _ask_work(rc, body: AskBody, who: Principal):
    """The streamed ask's work: layer events, the answer's pieces, citations, symptoms, repairs, final."""
    def work(j: Job) -> None:
        def on_span(span, st):
            if (ev := span_event(span, st)) is not None:
                j.emit(ev[0], local_paths(ev[1], rc.settings) if who.tenant else ev[1])

        seen = consult(rc, body, who, lambda piece: j.emit("delta", piece), on_span)
        p = seen.to_json()  # rendered here, once: the events are its parts
        for c in p.get("citations", ()):
            j.emit("citation", c)
        for x in p.get("symptoms", ()):
            j.emit("symptom", x)
        for r in p.get("repairs", ()):
            j.emit("repair", r)
        j.emit("final", p)
        if p.get("repair", {}).get("status") == "pending":  # the doctor in the background: wait for its outcome
            outcome = rc.repairs.wait(p["trace_id"], rc.settings.repair_wait_s, j.cancelled)
            out = repair_json(outcome, who, rc.settings) if outcome is not None else {
                **p["repair"], "status": "unknown", "reason": "the server no longer holds this repair's outcome"}
            j.emit("improved" if out["status"] == "improved" else "repair_outcome", out)

    return work


@router.get("/repairs/{trace_id}", tags=["answers"])
async def repair(trace_id: str, request: Request, wait: float = 0, who: Principal = Caller) -> dict:
    """Where the background repair of an answer asked with `"repair": "async"` stands: pending, running, improved
    (with the better `answer`, what changed and why), unchanged, dropped, skipped or failed. `?wait=S` (≤ 60):
    wait up to S seconds for it to finish."""
    if not 0 <= wait <= 60:
        raise ApiError(422, "invalid_request", "wait: between 0 and 60 seconds")
    rc = state(request)
    outcome = rc.repairs.get(trace_id)
    if outcome is None or (who.tenant and dict(outcome.enforced) != dict(who.enforced)):
        raise no_trace(trace_id)  # another tenant's answers are answered as if they did not exist
    deadline = time.monotonic() + wait
    while not outcome.finished and time.monotonic() < deadline and not await request.is_disconnected():
        await asyncio.sleep(0.2)  # on the event loop: a long poll holds no worker thread
        outcome = rc.repairs.get(trace_id) or outcome
    return repair_json(outcome, who, rc.settings)


def repair_json(outcome, who: Principal, settings) -> dict:
    """An outcome's `repair` object as ``who`` may see it (a tenant's key: no server folder in a path)."""
    out = outcome.to_json()
    return local_paths(out, settings) if who.tenant else out


# ---------------------------------------------------------------------- retrieval
@router.post("/retrieval", tags=["search"])
async def retrieval(body: RetrievalBody, request: Request, who: Principal = Caller) -> dict:
    """The hits of the configured retriever with every retriever's rank and score; no model call."""
    return await run_in_threadpool(retrieve_hits, state(request), body, who)


def retrieve_hits(rc, body: RetrievalBody, who: Principal) -> dict:
    """The `/v1/retrieval` object: the hits inside the caller's tenant, with their documents' paths and titles."""
    t0 = time.perf_counter()
    must = tuple(sorted(who.enforced.items()))
    with rc.pool.searcher() as clinic:
        hits, retriever = clinic.search(Question(body.query, body.scope or (), top_k=body.k, enforced=must))
        docs = clinic.kb.db.doc_infos([h.chunk.doc_id for h in hits])
    hits = [h for h in hits if h.chunk.doc_id in docs and all(docs[h.chunk.doc_id].tags.get(k) == v for k, v in must)]
    found = {"query": body.query, "retriever": retriever, "ms": round((time.perf_counter() - t0) * 1000, 2),
             "hits": [{"rank": i, "chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id, "path": docs[h.chunk.doc_id].path,
                       "title": docs[h.chunk.doc_id].title, "text": h.chunk.text, "score": h.score,
                       "sources": [{"retriever": s.retriever, "rank": s.rank, "score": s.score} for s in h.sources]}
                      for i, h in enumerate(hits, start=1)]}
    return local_paths(found, rc.settings) if who.tenant else found


# ---------------------------------------------------------------------- ingest
@router.post("/ingest", tags=["documents"])
async def ingest(request: Request, files: list[UploadFile] = File(...), tags: list[str] = Form(default=[]),
                 who: Principal = Caller) -> dict:
    """Upload documents (multipart `files`, optional `tags` as KEY=VALUE fields) → the `ingest --json` object.
    A tenant's key tags them with its tenant whatever the fields say."""
    return (await save_and_ingest(state(request), files, tags, who)).to_json()


async def save_and_ingest(rc, files: list[UploadFile], tags: list[str], who: Principal):
    """Uploaded files into KB/uploads (uploads.py: checked names and sizes, one folder per file named by its
    content and tags), ingested with the tags (a tenant's key's tenant over whatever they say); nothing that was
    refused stays behind, and failures name the files as they were uploaded."""
    s = rc.settings
    pairs = uploads.tag_pairs(tags, s, who.enforced)
    names = uploads.file_names([f.filename for f in files], s)
    staging = uploads.staging_folder(s.kb)
    try:
        digests = [await run_in_threadpool(uploads.receive, f.file, staging, name, pairs, s.max_file_size)
                   for f, name in zip(files, names)]
        return await run_in_threadpool(_ingest, rc, staging, digests, pairs)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _ingest(rc, staging: Path, digests: list[str], pairs: dict):
    """Under the writer's lock: the staged uploads moved into place, ingested (by the one writer of several
    replicas when there is one: server/ray_serve.py), and the folders of refused files removed."""
    with rc.pool.writing() as clinic:
        folders = [uploads.place(staging, d) for d in digests]
        try:
            if rc.ingest_via is not None:
                result = uploads.merged([rc.ingest_via(f, pairs) for f in folders])
            else:
                result = clinic.ingest(folders, pairs)
        finally:
            uploads.settle(folders, _sources(clinic, staging.parent))
            rc.repairs.kb_changed(_version(clinic))  # answers waiting for the doctor that describe an older KB
    if rc.settings.learn_after_ingest and rc.learner is not None and rc.pool.model is not None:
        rc.learner.start()  # the new chunks' questions, in the background (server/learning.py)
    return uploads.relative(result, folders, staging)


def _version(clinic) -> int | None:
    try:
        return clinic.kb.db.version
    except StoreError:  # no knowledge base yet
        return None


def _sources(clinic, root: Path) -> set[str]:
    try:
        return uploads.sources_under(clinic.kb.db, root)
    except StoreError:  # no knowledge base yet (the ingest failed before making it): no sources
        return set()


# ---------------------------------------------------------------------- traces
@router.get("/traces", tags=["traces"])
def traces(request: Request, limit: int = 20, who: Principal = Caller) -> dict:
    if not 1 <= limit <= 500:
        raise ApiError(422, "invalid_request", "limit: between 1 and 500")
    with state(request).pool.searcher() as clinic:
        rows = list_traces(clinic.kb.db, limit, reruns=False, enforced=who.enforced or None)
    return {"traces": rows}


@router.get("/traces/{trace_id}", tags=["traces"])
def trace(trace_id: str, request: Request, who: Principal = Caller) -> dict:
    """The `trace show --json` object."""
    with state(request).pool.searcher() as clinic:
        return own_trace(clinic, trace_id, who).to_dict()  # a tenant's: 404 unless all of it is its tenant's


@router.post("/traces/{trace_id}/replay", tags=["traces"])
def replay(trace_id: str, request: Request, who: Principal = Caller) -> dict:
    """The answer rebuilt from the trace's record, with no model call, and whether it equals the recorded one."""
    with state(request).pool.searcher() as clinic:
        t = own_trace(clinic, trace_id, who)
        try:  # a tenant's key: only a trace of its tenant that holds nothing from outside it
            again = clinic.replay(t.id, enforced=who.enforced or None)
        except OutsideScope:
            raise no_trace(trace_id) from None
        # read as the trace was (own_trace): a tenant's key gets paths without the knowledge-base folder
        out = local_paths(again.to_json(), clinic.settings) if who.tenant else again.to_json()
    return {**out, "model_calls": again.model_calls, "equal": out == t.final}


@router.post("/diagnose", tags=["traces"])
def diagnose(body: DiagnoseBody, request: Request, who: Principal = Caller) -> dict:
    """The `diagnose --json` object: the layer that broke the answer, its evidence and the fix."""
    if who.tenant:  # the probes read every document (is the answer anywhere in the knowledge base?)
        raise ApiError(403, "forbidden", "diagnose reads the whole knowledge base: it needs a key without a tenant")
    if bool(body.question) == bool(body.trace_id):
        raise ApiError(422, "invalid_request", "give one of question or trace_id")
    with applying(body.apply), state(request).pool.reader() as clinic:
        d = clinic.diagnose(body.question, tuple(body.expected), body.trace_id, body.gold_doc,
                            expect_refusal=body.expect_refusal, scope=body.scope, apply=body.apply, others=body.others,
                            rebuild=False)
    return d.to_json()


_APPLYING = threading.Lock()


@contextmanager
def applying(apply: bool):
    """One fix applied at a time on this server (each holds a reader and re-runs questions); another is refused."""
    if not apply:
        yield
        return
    if not _APPLYING.acquire(blocking=False):
        raise ApiError(409, "busy", "a fix is being applied already; try again when it is done")
    try:
        yield
    finally:
        _APPLYING.release()


@router.post("/feedback", tags=["traces"])
def feedback(body: FeedbackBody, request: Request, who: Principal = Caller) -> dict:
    """A rating (1 or -1), a note and optionally the right answer (`expected`), stored with the trace; an unhelpful
    rating files the answer in the failed-answer library (`case`: its id, else null)."""
    with state(request).pool.writing() as clinic:
        t = own_trace(clinic, body.trace_id, who)
        done = clinic.feedback(t.id, body.rating, body.note, body.expected, key=who.key_id,
                               expect_refusal=body.expect_refusal)
    return {"ok": True, "trace_id": t.id, "feedback": done["feedback"], "case": done["case"]}
