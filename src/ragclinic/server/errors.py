"""Every error is JSON: ``{"error": {"code", "message"}}`` with the HTTP status that fits it."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragclinic.errors import ConfigError, LimitExceeded, OutsideScope, RagclinicError, StoreError


log = logging.getLogger("ragclinic.server")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def busy(what: str, retry_after: int, setting: str) -> ApiError:
    """429 with Retry-After: the server is doing as many of ``what`` as it does at once (``setting``)."""
    return ApiError(429, "busy", f"the server is busy with {what}: try again in {retry_after} s ({setting})",
                    {"Retry-After": str(retry_after)})


def body(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_request: Request, e: ApiError):
        return JSONResponse(body(e.code, e.message), status_code=e.status, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, e: RequestValidationError):
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        return JSONResponse(body("invalid_request", f"{where or 'request'}: {first.get('msg', 'invalid')}"),
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, e: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(e.status_code, "http_error")
        return JSONResponse(body(code, str(e.detail)), status_code=e.status_code)

    @app.exception_handler(StoreError)
    async def _store(_request: Request, e: StoreError):
        missing = "no trace" in str(e) or "no document" in str(e)
        return JSONResponse(body("not_found" if missing else "store_error", str(e)), status_code=404 if missing else 409)

    @app.exception_handler(LimitExceeded)
    async def _limit(_request: Request, e: LimitExceeded):  # the message names the field, the limit, the setting
        return JSONResponse(body("invalid_request", str(e)), status_code=422)

    @app.exception_handler(OutsideScope)
    async def _outside(_request: Request, e: OutsideScope):  # a tenant's key: as if the trace did not exist
        missing = no_trace(e.trace_id)
        return JSONResponse(body(missing.code, missing.message), status_code=missing.status)

    @app.exception_handler(RagclinicError)
    async def _ours(_request: Request, e: RagclinicError):
        return JSONResponse(body("bad_request" if isinstance(e, ConfigError) else "ragclinic_error", str(e)),
                            status_code=400)

    @app.exception_handler(Exception)
    async def _bug(request: Request, e: Exception):
        # the details (paths, SQL) go to the server's log, not to the client
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=e)
        return JSONResponse(body("internal_error", f"internal error ({type(e).__name__}); the server log has the "
                                                   "details"), status_code=500)


def no_trace(trace_id: str) -> ApiError:
    """The one 404 for a trace a key may not read, whether it does not exist or is another tenant's: byte for
    byte the same, so that a tenant cannot tell the two apart."""
    return ApiError(404, "not_found", f"no trace {trace_id!r} in this knowledge base")
