"""The web UI: server-rendered Jinja2 pages with htmx (vendored, no build step, nothing from a CDN).

Ask (the answer streams in over server-sent events; each [n] opens the cited passage inside its document),
Why this answer (the trace page: waterfall, retrieved chunks with every retriever's rank, what the scope left
out, the gate, the claims, the doctor; diagnose and re-run buttons), compare two traces, the knowledge base
(documents, upload, a retrieval test) and evaluation reports. Logging in: the key once in a form, or
``?api_key=KEY`` on any page; either makes a session (sessions.py: the httpOnly cookie holds its random id, never
the key) that logging out revokes. Every page carries its CSRF token (a hidden field, and ``hx-headers`` on the
body for htmx; guard.py checks it). Jinja2 escapes every string from a document or a model.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from ragclinic.clinic import Consultation, Question
from ragclinic.errors import OutsideScope
from ragclinic.limits import check_question, check_request, check_text
from ragclinic.server import sessions as _s
from ragclinic.server import telemetry, ui_parts
from ragclinic.server.api import RetrievalBody, retrieve_hits, save_and_ingest
from ragclinic.server.auth import Principal, presented_key
from ragclinic.server.deps import TooManyAttempts, check_key, state
from ragclinic.server.errors import ApiError, no_trace
from ragclinic.server.guard import cross_site
from ragclinic.server.admission import holder_of
from ragclinic.server.sse import Job, JobResponse, sse_body
from ragclinic.trace.model import QUERY_LAYERS
from ragclinic.trace.store import list_traces
from ragclinic.types import Answer

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
router = APIRouter(include_in_schema=False)
_CITE = re.compile(r"\[(\d+)\]")


class _Login(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def who(request: Request) -> Principal:
    """The logged-in caller; a page without one redirects to the login form, ``?api_key=`` logs in (a new
    session, then the same address without the key) when typed, pasted or followed from this server's own pages
    — from another site it is the login form (else any page could log a browser into the page's key). A key in
    a header (a script) is taken as the API takes it."""
    rc = state(request)
    given = request.query_params.get("api_key")
    if given is not None:
        if request.method != "GET":
            raise ApiError(400, "bad_request", "?api_key= logs in on a page's address (GET) only")
        if cross_site(request):
            raise _Login(RedirectResponse(f"/login?{urlencode({'next': request.url.path})}", 303))
        found = check_key(request, given, _s.BROWSER)
        if found is None:
            raise _Login(RedirectResponse(f"/login?{urlencode({'next': request.url.path, 'error': '1'})}", 303))
        rest = {k: v for k, v in request.query_params.items() if k != "api_key"}
        raise _Login(_logged_in(request, found, request.url.path + (f"?{urlencode(rest)}" if rest else "")))
    key = presented_key(request.headers, {})
    found = check_key(request, key, _s.HEADER) if key else rc.sessions.get(request.cookies.get(_s.SESSION_COOKIE))
    if found is None and not rc.keys.required:
        found = Principal()
    if found is None:
        raise _Login(RedirectResponse(f"/login?{urlencode({'next': request.url.path})}", 303))
    return found


def _logged_in(request: Request, found: Principal, to: str) -> RedirectResponse:
    """A new session for ``found`` (an old one this browser had is revoked), and a redirect to ``to``."""
    rc = state(request)
    rc.sessions.revoke(request.cookies.get(_s.SESSION_COOKIE))
    back = RedirectResponse(to, 303)
    back.set_cookie(_s.SESSION_COOKIE, rc.sessions.create(found), max_age=int(rc.sessions.ttl_s), httponly=True,
                    samesite="lax", secure=request.url.scheme == "https")
    return back


def page(request: Request, name: str, nav: str, who_: Principal | None, status: int = 200, **values) -> HTMLResponse:
    rc = state(request)
    anchor, browser = _s.csrf_anchor(request.cookies, rc.sessions), None
    if anchor is None:  # a first visit: a browser id to tie this page's CSRF token to
        browser = _s.new_browser_id()
        anchor = "b:" + browser
    r = templates.TemplateResponse(request, name, {"nav": nav, "kb_name": rc.settings.kb.name,
                                                   "tenant": who_.tenant if who_ else "",
                                                   "logged_in": rc.keys.required and who_ is not None,
                                                   "csrf": rc.sessions.csrf_token(anchor), **values},
                                  status_code=status)
    if browser:
        r.set_cookie(_s.BROWSER_COOKIE, browser, httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return r


def answer_html(text: str, citations, trace_id: str) -> Markup:
    """The answer, escaped, with each [n] a link to its passage."""
    by_n = {c["n"] if isinstance(c, dict) else c.n: (c["chunk_id"] if isinstance(c, dict) else c.chunk_id)
            for c in citations}

    def link(m: re.Match) -> str:
        n = int(m.group(1))
        if n not in by_n:
            return m.group()
        return f'<a class="cite" href="/passage/{escape(by_n[n])}?trace={escape(trace_id)}&amp;n={n}">[{n}]</a>'

    return Markup(_CITE.sub(link, str(escape(text))))


# ---------------------------------------------------------------------- login
@router.get("/login")
def login_form(request: Request, next: str = "/", error: str = ""):
    return page(request, "login.html", "", None, next=_local(next), error="that key is not valid" if error else "")


@router.post("/login")
def login(request: Request, key: str = Form(""), next: str = Form("/"), csrf_token: str = Form("")):
    rc = state(request)
    if not rc.sessions.csrf_ok(_s.csrf_anchor(request.cookies, rc.sessions), csrf_token):
        return page(request, "login.html", "", None, next=_local(next), error="the form was stale: log in again",
                    status=403)
    try:
        found = check_key(request, key, _s.BROWSER)
    except TooManyAttempts as e:
        r = page(request, "login.html", "", None, next=_local(next), error=e.message, status=429)
        r.headers["Retry-After"] = str(e.retry_after)
        return r
    if found is None:
        return page(request, "login.html", "", None, next=_local(next), error="that key is not valid")
    return _logged_in(request, found, _local(next))


@router.post("/logout")
def logout(request: Request, csrf_token: str = Form("")):
    """Revokes the session (its cookie then opens nothing); a POST with the page's token, so no other site can."""
    rc = state(request)
    if not rc.sessions.csrf_ok(_s.csrf_anchor(request.cookies, rc.sessions), csrf_token):
        raise ApiError(403, "csrf", "the CSRF token is missing or stale: reload the page and log out again")
    rc.sessions.revoke(request.cookies.get(_s.SESSION_COOKIE))
    back = RedirectResponse("/login", 303)
    back.delete_cookie(_s.SESSION_COOKIE)
    return back


def _local(url: str) -> str:
    """Only a path of this server (never an open redirect)."""
    return url if url.startswith("/") and not url.startswith("//") else "/"


# ---------------------------------------------------------------------- ask
@router.get("/")
def ask_page(request: Request, q: str = ""):
    return page(request, "ask.html", "ask", who(request), q=q)


@router.get("/ui/ask")
def ask_fragment(request: Request):
    who(request)
    url = "/ui/ask/stream?" + urlencode(dict(request.query_params))
    return templates.TemplateResponse(request, "_stream.html", {"stream_url": url})


@router.get("/ui/ask/stream")
async def ask_stream(request: Request):
    caller = who(request)
    rc = state(request)
    params = dict(request.query_params)
    question = params.get("q", "").strip()
    if not question:
        raise ApiError(422, "invalid_request", "q: ask a question")
    scope = ui_parts.scope_of(params, caller)
    check_request(rc.settings, question, scope)  # 422 before the stream starts (its errors are only an id)

    def work(j: Job) -> None:
        def on_span(span, st):
            if span.layer == "retrieve":
                j.emit("status", f"retrieved {len(st.hits)} passages…")
            elif span.layer == "gate" and st.decision is not None:
                j.emit("status", f"the gate: {st.decision.route} (evidence {st.decision.evidence_score:.2f})…")

        mode, said = params.get("doctor", ""), params.get("reply", "").strip()
        doctor, later = mode in ("1", "later"), mode == "later"  # later: the doctor after the answer is shown
        round_id = params.get("round", "")  # the reply form's: a round id this server made, else a new round
        round_id = round_id if re.fullmatch(r"\d{8}-[0-9a-f]{10}", round_id) else ""
        with rc.pool.reader() as clinic:  # with the doctor, an ambiguous question is asked back (one reply form)
            q = Question(question, scope, doctor, interactive=doctor and not later, enforced=caller.enforced,
                         owner=ui_parts.owner_of(caller), debug_round_id=round_id,
                         repair="async" if later else "sync")
            seen = clinic.answer(q, on_token=lambda piece: j.emit("delta", str(escape(piece))), on_span=on_span,
                                 reply=(lambda _asked: said) if said else None)
            seen = ui_parts.seen_by(seen, caller, rc.settings)
            ctx = ui_parts.answer_context(seen, answer_html, params, clinic.kb.db)
        rc.metrics.observe_answer(seen)
        telemetry.emit(rc.tracer, seen)
        html = templates.get_template("_answer.html").render(ctx)
        j.emit("status", "")
        j.emit("final", html)
        if seen.repair_pending:
            _repair_later(rc, j, q, seen, caller, params)

    job = Job(asyncio.get_running_loop()).start(rc.asks, holder_of(request, caller), work)  # 429 before the stream
    return JobResponse(job, sse_body(job, request.is_disconnected, done=True))


def _repair_later(rc, j: Job, q: Question, seen, caller, params: dict[str, str]) -> None:
    """The doctor in the background for the answer just shown: its outcome in the status line, and an improved
    answer (what changed and why, the first answer folded under it) in the answer's place."""
    outcome = rc.repairs.submit(q, seen.trace.id, seen.trace.kb_version)
    if outcome.status == "pending":
        j.emit("status", "the doctor is checking this answer…")
        outcome = rc.repairs.wait(seen.trace.id, rc.settings.repair_wait_s, j.cancelled)
    if outcome is None or outcome.status != "improved":
        if outcome is not None and outcome.status == "unchanged":
            j.emit("status", f"the doctor checked this answer: {outcome.reason}")
        elif outcome is not None and outcome.finished:  # skipped, dropped, failed
            j.emit("status", f"the doctor did not check this answer: {outcome.reason}")
        else:
            j.emit("status", "the doctor is still working on this answer; its outcome will be in the trace")
        return
    better = ui_parts.seen_by(Consultation(Answer.from_json(outcome.answer), stored=outcome.answer), caller,
                              rc.settings)
    first = seen.answer
    with rc.pool.reader() as clinic:
        ctx = ui_parts.answer_context(better, answer_html, params, clinic.kb.db)
    changes = ui_parts.local_paths(list(outcome.changes), rc.settings) if caller.tenant else outcome.changes
    ctx["improved"] = {"changes": changes, "first_html": answer_html(first.text, first.citations, first.trace_id)}
    j.emit("status", "")
    j.emit("improved", templates.get_template("_answer.html").render(ctx))


@router.post("/ui/feedback")
def feedback_fragment(request: Request, trace_id: str = Form(...), rating: int = Form(...), note: str = Form("")):
    caller = who(request)
    if rating not in (1, -1):
        raise ApiError(422, "invalid_request", "rating: 1 or -1")
    check_text(state(request).settings, note, "note", "max_feedback_note_chars")
    with state(request).pool.writing() as clinic:
        t = ui_parts.own_trace(clinic, trace_id, caller)
        done = clinic.feedback(t.id, rating, note, key=caller.key_id)  # unhelpful: filed in the case library
    filed = " and filed as a case for the debugger" if done["case"] else ""
    return HTMLResponse(f'<p class="small ok">thank you — "{"helpful" if rating == 1 else "not helpful"}" saved with '
                        f'the trace{filed}</p>')


# ---------------------------------------------------------------------- passages and traces
@router.get("/passage/{chunk_id}")
def passage_page(request: Request, chunk_id: str, trace: str = "", n: int = 0):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        values = ui_parts.passage(clinic, chunk_id, trace, caller)
    return page(request, "passage.html", "ask", caller, n=n, trace=trace, **values)


@router.get("/traces")
def traces_page(request: Request):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        rows = list_traces(clinic.kb.db, 100, enforced=caller.enforced or None)
    for r in rows:
        r["when"] = dt.datetime.fromtimestamp(r["created"]).strftime("%Y-%m-%d %H:%M")
    return page(request, "traces.html", "traces", caller, rows=rows)


@router.get("/traces/{trace_id}")
def trace_page(request: Request, trace_id: str):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        t = ui_parts.own_trace(clinic, trace_id, caller)  # a tenant's: its own, holding nothing from outside it
        values = ui_parts.trace_context(t, answer_html, clinic.kb.db)
        path = ui_parts.round_path(clinic, t)
    return page(request, "trace.html", "traces", caller, layers=QUERY_LAYERS, can_diagnose=not caller.tenant,
                path=path, **values)


@router.get("/compare")
def compare_page(request: Request, a: str = "", b: str = ""):
    caller = who(request)
    sides = []
    with state(request).pool.searcher() as clinic:
        for tid in (a, b):
            if tid:
                sides.append(ui_parts.trace_context(ui_parts.own_trace(clinic, tid, caller), answer_html,
                                                    clinic.kb.db))
    return page(request, "compare.html", "traces", caller, sides=sides, a_id=a, b_id=b)


@router.post("/ui/rerun")
def rerun_fragment(request: Request, trace_id: str = Form(...), layer: str = Form(...)):
    caller = who(request)
    if layer not in QUERY_LAYERS:
        raise ApiError(422, "invalid_request", f"layer: one of {', '.join(QUERY_LAYERS)}")
    with state(request).pool.reader() as clinic:
        t = ui_parts.own_trace(clinic, trace_id, caller)
        try:  # a tenant's key: a trace of its own that holds nothing from outside it, re-run inside its tenant
            a = clinic.rerun(t.id, layer, enforced=caller.enforced or None)
        except OutsideScope:
            raise no_trace(trace_id) from None
    return HTMLResponse(Markup('<p class="small">re-run from {} → <a href="/traces/{}">{}</a> · '
                               '<a href="/compare?a={}&amp;b={}">compare</a></p>').format(
        layer, a.trace_id, a.trace_id, trace_id, a.trace_id))


# ---------------------------------------------------------------------- knowledge base
@router.get("/kb")
def kb_page(request: Request):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        values = ui_parts.kb_context(clinic, caller)
    return page(request, "kb.html", "kb", caller, **values)


@router.get("/kb/doc/{doc_id}")
def doc_page(request: Request, doc_id: str):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        values = ui_parts.doc_context(clinic, doc_id, caller)
    return page(request, "doc.html", "kb", caller, **values)


@router.post("/ui/retrieval")
def retrieval_fragment(request: Request, q: str = Form(...)):
    caller = who(request)
    check_question(state(request).settings, q, "query")
    found = retrieve_hits(state(request), RetrievalBody(query=q, k=10), caller)
    return templates.TemplateResponse(request, "_hits.html", {"hits": found["hits"]})


@router.post("/ui/upload")
async def upload_fragment(request: Request, files: list[UploadFile], tags: str = Form("")):
    caller = who(request)
    pairs = [t.strip() for t in tags.split(",") if t.strip()]
    result = await save_and_ingest(state(request), files, pairs, caller)
    r = result.to_json()
    failed = "".join(Markup("<li class='bad'>{}: {}</li>").format(f["path"], f["reason"]) for f in r["failed"])
    return HTMLResponse(Markup("<p class='small ok'>{} added, {} updated, {} unchanged, {} chunks</p><ul>{}</ul>").format(
        r["added"], r["updated"], r["unchanged"], r["chunks"], Markup(failed)))


# ---------------------------------------------------------------------- evaluations
@router.get("/evals")
def evals_page(request: Request):
    caller = who(request)
    folder = getattr(state(request), "evals", None)
    runs = []
    if folder is not None and folder.is_dir():
        for d in sorted(p for p in folder.iterdir() if (p / "results.json").is_file()):
            try:
                res = json.loads((d / "results.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # an unreadable run is not listed
            if isinstance(res, dict):
                runs.append({"name": d.name, "task": res.get("task", ""), "n": res.get("n", "")})
    return page(request, "evals.html", "evals", caller, folder=folder, runs=runs)


@router.get("/evals/{run}/{name}")
def eval_file(request: Request, run: str, name: str):
    who(request)
    folder = getattr(state(request), "evals", None)
    if folder is None or not re.fullmatch(r"[\w.-]+", run) or not re.fullmatch(r"[\w.-]+\.(html|png|md|json)", name):
        raise ApiError(404, "not_found", "no such report file")
    path = (folder / run / name).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        raise ApiError(404, "not_found", "no such report file")
    media = {"html": "text/html", "png": "image/png", "md": "text/markdown", "json": "application/json"}
    headers = {"Content-Security-Policy": "script-src 'none'"} if name.endswith(".html") else {}
    return Response(path.read_bytes(), media_type=media[name.rsplit(".", 1)[1]], headers=headers)


def install(app) -> None:
    """The UI routes, the static files and the login redirect."""
    from fastapi.staticfiles import StaticFiles  # on use: fastapi, the serve extra

    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.include_router(router)

    @app.exception_handler(_Login)
    async def _to_login(_request: Request, e: _Login):
        return e.response
