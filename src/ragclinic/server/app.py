"""The FastAPI application over one knowledge base (``create_app``): middleware (the browser guard, body limit,
metrics), the key check (a key in a header or ``?api_key=``, else the UI's session), health, metrics and the API
docs, and the route modules (api.py: native; openai_api.py: chat completions; ui.py: the web UI)."""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from ragclinic.config import Settings
from ragclinic.server import api, errors, experiments, learning, openai_api, ui, ui_diagnose, ui_health, ui_scans
from ragclinic.server.admission import Asks
from ragclinic.server.auth import Keys, Principal
from ragclinic.server.deps import ServerState, TooManyAttempts, principal
from ragclinic.server.guard import BrowserGuard
from ragclinic.server.metrics import CONTENT_TYPE_LATEST, Metrics
from ragclinic.trace.health import stats as health_stats
from ragclinic.server.pool import ClinicPool
from ragclinic.server.learning import Learner
from ragclinic.server.repairs import RepairQueue
from ragclinic.server.sessions import LoginLimiter, Sessions
from ragclinic.server.telemetry import make_tracer
from ragclinic.server.telemetry import otlp_endpoint as _endpoint
from ragclinic.version import __version__

OPEN_ROUTES = {"/healthz"}  # no key needed


def create_app(settings: Settings, keys: Keys | None = None, *, model=None, readers: int = 2,
               max_upload_mb: float = 100, on_warning=None, evals: Path | None = None, tracer=None,
               otlp_endpoint: str | None = None, ingest_via=None) -> FastAPI:
    """The server over ``settings.kb``. ``model``: a LanguageModel to share instead of loading ``llm``.
    ``tracer``: an OpenTelemetry tracer; else one exporting to ``otlp_endpoint`` / OTEL_EXPORTER_OTLP_*, if set."""
    metrics = Metrics()
    pool = ClinicPool(settings, readers=readers, model=model, gauge=metrics.queue, on_warning=on_warning)
    repairs = RepairQueue(pool, settings, metrics)
    learner = Learner(pool, settings)  # `kb learn` in the background (learning.py)

    metrics.watch_health(_health_source(settings, pool))

    asks = Asks(settings.max_concurrent_asks, settings.max_concurrent_asks_per_key)

    @asynccontextmanager
    async def lifespan(_app):
        yield
        asks.close()
        repairs.close()
        learner.close()
        pool.close()

    # the docs and the schema are routes of their own below: behind the key, Swagger UI from vendored files
    app = FastAPI(title="ragclinic", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None,
                  description="Answers with paragraph citations, a doctor that repairs them, and a debugger that "
                              "names the layer that broke.")
    app.state.rc = ServerState(settings, keys or Keys(), pool, metrics, int(max_upload_mb * 1024 * 1024),
                               Path(evals) if evals else None, tracer or make_tracer(_endpoint(otlp_endpoint)),
                               ingest_via, Sessions(settings.session_hours * 3600),
                               LoginLimiter(settings.login_failures_max, settings.login_failures_window_s), repairs,
                               asks=asks, learner=learner)
    errors.install(app)
    app.add_exception_handler(TooManyAttempts, _too_many)
    app.add_middleware(_BodyLimit, limit=app.state.rc.max_upload_bytes)

    @app.middleware("http")
    async def _observe(request: Request, call_next):
        t0 = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        template = getattr(route, "path", "unmatched")
        metrics.http.labels(template, request.method, str(response.status_code)).observe(time.perf_counter() - t0)
        return response

    @app.get("/healthz", tags=["service"])
    def healthz() -> dict:
        with pool.searcher() as c:
            version = c.kb.db.version if (settings.kb / "kb.sqlite3").exists() else 0
        return {"ok": True, "kb_version": version}

    @app.get("/metrics", tags=["service"], response_class=Response)
    def prometheus(who: Principal = Depends(principal)) -> Response:
        """Prometheus text; a key without a tenant (the totals count every tenant's requests)."""
        if who.tenant:
            raise errors.ApiError(403, "forbidden", "the metrics count every tenant: they need a key without a tenant")
        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(api.router)
    app.include_router(openai_api.router)
    ui.install(app)
    app.include_router(ui_diagnose.router)  # the trace page's diagnose panel
    app.include_router(ui_health.router)  # the health page (admin keys)
    app.include_router(learning.router)  # kb learn in the background (admin keys)
    app.include_router(ui_scans.router)  # the page picture beside a passage read by OCR
    app.include_router(experiments.router)  # online experiments and the failed-answer library (admin API)
    app.include_router(experiments.pages)  # the UI's Experiments page
    _install_docs(app)
    # outermost: a request for another host, or from another origin, is refused before anything reads it
    app.add_middleware(BrowserGuard, state=lambda: app.state.rc)

    return app


def _health_source(settings: Settings, pool: ClinicPool):
    """What /metrics reads the knowledge base's health gauges from (trace/health.py)."""
    def kb_health() -> dict:
        if not (settings.kb / "kb.sqlite3").exists():  # nothing ingested yet: no questions either
            return {"current": health_stats([]), "baseline": health_stats([])}
        with pool.searcher() as c:
            return c.health(days=8)  # the gauges need the 24 h window and the 7-day baseline only

    return kb_health


def _install_docs(app: FastAPI) -> None:
    """/openapi.json and /docs (Swagger UI, vendored: static/vendor/VENDOR.md) for any key of this server."""
    @app.get("/openapi.json", include_in_schema=False)
    def openapi(_who: Principal = Depends(principal)) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        return ui.page(request, "docs.html", "", ui.who(request))


async def _too_many(_request: Request, e: TooManyAttempts) -> JSONResponse:
    return JSONResponse(errors.body(e.code, e.message), status_code=429, headers={"Retry-After": str(e.retry_after)})


class _BodyLimit:
    """Refuse a request body over the limit with 413 before the route reads it: by Content-Length when given,
    else by counting the bytes of a chunked body as they arrive."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        too_big = JSONResponse(errors.body("too_large", f"the request body is over the server's limit of "
                                                         f"{self.limit / 1048576:g} MB (--max-upload-mb)"),
                               status_code=413)
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await too_big(scope, receive, send)
        seen, refused, started = 0, False, False

        async def counted():
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # answer now; the route then sees a client that went away
                    refused = True
                    if not started:
                        await too_big(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message):
            nonlocal started
            if refused:
                return  # the 413 was sent: whatever the route says after it is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counted, guarded)
