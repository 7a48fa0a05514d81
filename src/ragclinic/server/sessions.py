"""The UI's logins: a session cookie that holds a random id, mapped in this process's memory to the key's
principal (never the key itself), revoked at logout; CSRF tokens tied to the session; a limit on failed logins
per client address.

In memory on purpose: one server process holds its own sessions (a restart logs everyone out). Under Ray Serve
each replica holds its own, so a browser is asked to log in again when the proxy sends it to another replica.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable

from ragclinic.server.auth import Principal

SESSION_COOKIE = "ragclinic_session"
BROWSER_COOKIE = "ragclinic_csrf"  # a random id that anchors CSRF tokens before a login (the login form, keyless mode)
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
MAX_SESSIONS = 10_000  # the oldest go first: a flood of logins cannot grow memory without bound
MAX_SESSIONS_PER_KEY = 50  # one key's oldest go first: its logins cannot push out the sessions of other keys
BROWSER, HEADER = "browser", "header"  # the limiter's channels: login form / ?api_key=, and Authorization / X-API-Key
MAX_CLIENTS = 10_000  # addresses the login limiter remembers


@dataclass(frozen=True)
class _Session:
    who: Principal
    expires: float


class Sessions:
    """Session id → principal. Ids are 256-bit random; only their SHA-256 digests are kept."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s, self._clock = ttl_s, clock
        self._by_digest: OrderedDict[bytes, _Session] = OrderedDict()
        self._by_key: dict[str, OrderedDict[bytes, None]] = {}  # key id → its sessions' digests, oldest first
        self._lock = threading.Lock()
        self._secret = secrets.token_bytes(32)  # CSRF tokens: HMAC of the anchor under this

    def create(self, who: Principal) -> str:
        sid = secrets.token_urlsafe(32)
        d = _digest(sid)
        with self._lock:
            self._by_digest[d] = _Session(who, self._clock() + self.ttl_s)
            mine = self._by_key.setdefault(who.key_id, OrderedDict())
            mine[d] = None
            while len(mine) > MAX_SESSIONS_PER_KEY:
                self._drop(next(iter(mine)))
            while len(self._by_digest) > MAX_SESSIONS:
                self._drop(next(iter(self._by_digest)))
        return sid

    def get(self, sid: str | None) -> Principal | None:
        """The session's principal; None when the id is unknown, revoked or expired."""
        if not sid:
            return None
        d = _digest(sid)
        with self._lock:
            s = self._by_digest.get(d)
            if s is not None and s.expires <= self._clock():
                self._drop(d)
                s = None
        return s.who if s is not None else None

    def revoke(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._drop(_digest(sid))

    def _drop(self, d: bytes) -> None:
        """Forget one session (the lock is held)."""
        s = self._by_digest.pop(d, None)
        if s is None:
            return
        mine = self._by_key.get(s.who.key_id)
        if mine is not None:
            mine.pop(d, None)
            if not mine:
                del self._by_key[s.who.key_id]

    def csrf_token(self, anchor: str) -> str:
        return hmac.new(self._secret, anchor.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, anchor: str | None, token: str | None) -> bool:
        return bool(anchor and token) and hmac.compare_digest(self.csrf_token(anchor), token)


def csrf_anchor(cookies, sessions: Sessions) -> str | None:
    """What a CSRF token is tied to: the session when the browser has a live one, else its browser id."""
    sid = cookies.get(SESSION_COOKIE)
    if sid and sessions.get(sid) is not None:
        return "s:" + sid
    browser = cookies.get(BROWSER_COOKIE)
    return "b:" + browser if browser else None


def new_browser_id() -> str:
    return secrets.token_urlsafe(24)


class LoginLimiter:
    """At most ``failures`` wrong keys per ``window_s`` from one client address on one channel (``BROWSER``: the
    login form and ``?api_key=``; ``HEADER``: Authorization / X-API-Key); past that every attempt on that channel
    that presents a key (right or wrong: else the limit would still answer the guess) waits ``retry_after``
    seconds. Separate buckets, so failures a web page can provoke (a browser sends them) cannot lock out a
    script's header key."""

    def __init__(self, failures: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.failures, self.window_s, self._clock = failures, window_s, clock
        self._seen: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str, channel: str) -> int:
        """Seconds until this client may try a key on this channel again; 0: now."""
        now = self._clock()
        with self._lock:
            times = self._seen.get((client, channel))
            if times is None:
                return 0
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) < self.failures:
                return 0
            return max(1, math.ceil(times[0] + self.window_s - now))

    def failed(self, client: str, channel: str) -> None:
        with self._lock:
            times = self._seen.pop((client, channel), None) or deque(maxlen=self.failures)
            times.append(self._clock())
            self._seen[(client, channel)] = times  # most recent last: the least recently failing go first
            while len(self._seen) > MAX_CLIENTS:
                self._seen.popitem(last=False)


def client_address(request) -> str:
    """The peer's address (behind a reverse proxy: the proxy's, unless uvicorn's --forwarded-allow-ips trusts it)."""
    return request.client.host if request.client else "unknown"


def _digest(sid: str) -> bytes:
    return hashlib.sha256(sid.encode("utf-8", "surrogatepass")).digest()
