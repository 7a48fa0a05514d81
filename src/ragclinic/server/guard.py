"""What a browser may do to the server (an ASGI middleware around everything):

- the Host header must name this server (``allowed_hosts``): a DNS-rebinding page gets 400;
- a request that a browser could send on its own — no ``Authorization`` / ``X-API-Key`` header, so it rides on
  the session cookie or on keyless mode — must come from this server's own origin when it changes state (POST,
  PUT, PATCH, DELETE) or is one of the UI's fragments (``/ui/...``, which ask questions); the Origin header
  decides, else Sec-Fetch-Site, else the Referer; a client that sends none of them is not a browser;
- such a state-changing request under ``/ui/`` (and one to the API that rides on a session) also carries the
  page's CSRF token in ``X-CSRF-Token`` (htmx sends it: base.html); /login and /logout check their form field;
- every response gets the security headers (CSP without inline script, no framing, nosniff, referrer policy).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi.responses import JSONResponse
from starlette.requests import Request

from ragclinic.server import errors
from ragclinic.server.auth import header_key
from ragclinic.server.sessions import CSRF_HEADER, SESSION_COOKIE, csrf_anchor

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {"content-security-policy": CSP, "x-frame-options": "DENY", "x-content-type-options": "nosniff",
                    "referrer-policy": "same-origin", "cross-origin-opener-policy": "same-origin"}
CHANGES_STATE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "*"})


class BrowserGuard:
    def __init__(self, app, state) -> None:
        self.app, self.state = app, state  # state: () -> ServerState (settings, keys, sessions)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        refusal = self.refusal(request)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in have]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        if refusal is not None:
            return await refusal(scope, receive, with_headers)
        await self.app(scope, receive, with_headers)

    def refusal(self, request: Request) -> JSONResponse | None:
        rc = self.state()
        host = request.headers.get("host", "")
        if not host_allowed(host, rc.settings.allowed_hosts):
            return _refuse(400, "bad_host", f"this server does not answer for the host {host[:100]!r}: start it "
                                            f"with --allowed-host NAME (or RAGCLINIC_ALLOWED_HOSTS) to add a name")
        if _key_in_header(request):
            return None  # not something a page on another origin can send without a CORS preflight we never grant
        browser_only = request.url.path.startswith("/ui/")
        if not (request.method in CHANGES_STATE or browser_only):
            return None
        foreign = foreign_origin(request, host)
        if foreign:
            return _refuse(403, "cross_origin", f"a request from another origin ({foreign[:100]}) is refused: use "
                                                "the UI at this server's own address, or send the key in the "
                                                "Authorization header")
        if request.method in CHANGES_STATE and needs_csrf(request, rc):
            sessions = rc.sessions
            if not sessions.csrf_ok(csrf_anchor(request.cookies, sessions), request.headers.get(CSRF_HEADER)):
                return _refuse(403, "csrf", "the CSRF token is missing or stale: reload the page and try again "
                                            "(a script sends it as the X-CSRF-Token header)")
        return None


def needs_csrf(request: Request, rc) -> bool:
    """The UI's fragments always (a browser sends them); the API when a live session authorises the request.
    /login and /logout are plain forms: their routes check the token field."""
    if request.url.path.startswith("/ui/"):
        return True
    if request.url.path in ("/login", "/logout") or (request.query_params.get("api_key") and not cross_site(request)):
        return False  # a key in the address authorises it (one a cross-site request sends is not taken)
    return rc.sessions.get(request.cookies.get(SESSION_COOKIE)) is not None


def host_allowed(host: str, allowed) -> bool:
    name = host_name(host)
    if not name:
        return False
    for a in allowed:
        if a == "*" or a == name or (a.startswith(".") and (name.endswith(a) or name == a[1:])):
            return True
    return False


def host_name(host: str) -> str:
    """``Host`` without its port, lower case, IPv6 without brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _port(host: str) -> str:
    """The port the Host header names explicitly ('' when none)."""
    tail = host.rsplit("]", 1)[-1] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def foreign_origin(request: Request, host: str) -> str:
    """The other origin a browser says this request comes from; '' when it is this server's own (or unknown)."""
    origin = request.headers.get("origin")
    if origin is not None:
        return "" if same_origin(origin, host) else origin
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return "" if site in ("same-origin", "none") else f"Sec-Fetch-Site: {site}"
    referer = request.headers.get("referer")
    if referer:
        return "" if same_origin(referer, host) else referer.split("?", 1)[0]
    return ""


def cross_site(request: Request) -> bool:
    """Does a browser say another origin sent this request (a link, an <img>, a form on another site)? Then a key
    in its address is not taken: else any page could log a browser into the page's key, or spend the address's
    wrong-key limit. Sec-Fetch-Site 'none' is a typed or pasted address."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return True
    return bool(foreign_origin(request, request.headers.get("host", "")))


def same_origin(url: str, host: str) -> bool:
    """Does ``url`` (an Origin or a Referer) name the host and port of the Host header? Behind a proxy that ends
    TLS the scheme differs, so a Host without a port matches the origin's default port under either scheme."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False  # "null" (a sandboxed frame, a file:// page) and the like
    if parts.hostname.lower() != host_name(host):
        return False
    want = _port(host)
    return str(port) == want if want else port is None


def bind_hosts(host: str, extra=()) -> list[str]:
    """What `serve --host H --allowed-host X` adds to ``allowed_hosts``: H unless it is a wildcard, and each X."""
    names = list(extra)
    if host.strip("[]") not in WILDCARD_BINDS:
        names.append(host.strip("[]"))
    return names


def _key_in_header(request: Request) -> bool:
    """A well-formed key in a header (auth.header_key): an empty ``Bearer `` is none, so a cookie-borne request
    that adds one is still checked."""
    return header_key(request.headers) is not None


def _refuse(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(errors.body(code, message), status_code=status)
