"""What every route module reads: the server's state (``state(request)``) and the caller (``Caller``: the key in a
header or ``?api_key=``, else the UI's session), with the limit on wrong keys per client address."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fastapi import Depends, Request

from ragclinic.config import Settings
from ragclinic.server import errors
from ragclinic.server.admission import Asks
from ragclinic.server.auth import Keys, Principal, presented_key
from ragclinic.server.guard import cross_site
from ragclinic.server.metrics import Metrics
from ragclinic.server.pool import ClinicPool
from ragclinic.server.render import Renders
from ragclinic.server.sessions import BROWSER, HEADER, SESSION_COOKIE, LoginLimiter, Sessions, client_address


@dataclass
class ServerState:
    settings: Settings
    keys: Keys
    pool: ClinicPool
    metrics: Metrics
    max_upload_bytes: int
    evals: Path | None = None  # the folder of `eval --out` reports the UI shows
    tracer: object = None  # OpenTelemetry tracer (telemetry.py), None when no exporter is configured
    # ingest elsewhere: (folder, tags) → IngestResult; Ray Serve replicas send every write to one writer
    ingest_via: object = None
    sessions: Sessions | None = None  # the UI's logins (sessions.py)
    limiter: LoginLimiter | None = None  # failed logins per client address
    repairs: object = None  # the doctor in the background (repairs.RepairQueue)
    renders: Renders = field(default_factory=Renders)  # pictures drawn on request: bounded, cached (render.py)
    asks: Asks = None  # questions being answered: bounded per key and in all, on a pool of threads (admission.py)
    learner: object = None  # `kb learn` in the background (learning.Learner)


def principal(request: Request) -> Principal:
    """The caller, from its key (a header or ``?api_key=``), else from the UI's session cookie: 401 without
    either or with a key this server does not know (a known key that may not do something gets 403 from that
    route); 429 while the client address has made too many wrong guesses on that channel. ``?api_key=`` on a
    request a browser marks cross-site is not taken (nor counted): as if no key was given."""
    rc: ServerState = request.app.state.rc
    key, channel = presented_key(request.headers, {}), HEADER
    if not key and not cross_site(request):
        key, channel = request.query_params.get("api_key"), BROWSER
    if not key:
        who = rc.sessions.get(request.cookies.get(SESSION_COOKIE)) if rc.keys.required else rc.keys.check(None)
        if who is None:
            raise errors.ApiError(401, "unauthorized", "an API key is required: Authorization: Bearer KEY")
        return who
    who = check_key(request, key, channel)
    if who is None:
        raise errors.ApiError(401, "unauthorized", "this API key is not valid for this server")
    return who


class TooManyAttempts(errors.ApiError):
    def __init__(self, retry_after: int) -> None:
        super().__init__(429, "too_many_attempts", f"too many wrong keys from this address: try again in "
                                                    f"{retry_after} s (login_failures_max per login_failures_window_s)")
        self.retry_after = retry_after


def check_key(request: Request, key: str, channel: str) -> Principal | None:
    """The key's principal, or None (counted against the client's address on ``channel``: sessions.BROWSER for
    the login form and ``?api_key=``, sessions.HEADER for Authorization / X-API-Key); TooManyAttempts while that
    bucket is over its limit of wrong keys (then even a right key waits on that channel: else the answer would
    still tell). The buckets are apart, so what a web page provokes cannot lock out a script's header key."""
    rc: ServerState = request.app.state.rc
    if not rc.keys.required:
        return rc.keys.check(key)
    client = client_address(request)
    wait = rc.limiter.retry_after(client, channel)
    if wait:
        raise TooManyAttempts(wait)
    who = rc.keys.check(key)
    if who is None:
        rc.limiter.failed(client, channel)
    return who


Caller = Depends(principal)


def state(request: Request) -> ServerState:
    return request.app.state.rc
