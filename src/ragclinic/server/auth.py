"""API keys: ``KEY`` (sees everything) or ``KEY:tenant=NAME`` (sees only that tenant's documents, traces and
feedback). Keys are kept as SHA-256 digests and compared in constant time; ``Authorization: Bearer KEY`` or
``X-API-Key: KEY``, or ``?api_key=KEY``. A browser's cookie holds a session id, never the key (sessions.py)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from ragclinic.errors import ConfigError


@dataclass(frozen=True)
class Principal:
    """Who is asking: ``tenant`` is the only tenant they may see ("" = every document)."""

    tenant: str = ""
    key_id: str = ""  # the first 8 hex digits of the key's digest: for logs, never the key

    @property
    def enforced(self) -> dict[str, str]:
        return {"tenant": self.tenant} if self.tenant else {}


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class Keys:
    def __init__(self, specs: list[str] | tuple[str, ...] = ()) -> None:
        self._keys: list[tuple[bytes, Principal]] = []
        for spec in specs:
            key, _, bind = spec.partition(":")
            tenant = ""
            if bind:
                name, eq, value = bind.partition("=")
                if name != "tenant" or not eq or not value:
                    raise ConfigError(f"--api-key {key[:4]}…:{bind!r}: expected KEY or KEY:tenant=NAME")
                tenant = value
            if len(key) < 8:
                raise ConfigError("an API key must be at least 8 characters long")
            d = _digest(key)
            self._keys.append((d, Principal(tenant, d.hex()[:8])))

    @property
    def required(self) -> bool:
        return bool(self._keys)

    def check(self, presented: str | None) -> Principal | None:
        """The key's principal, or None. Every stored digest is compared (constant time per key)."""
        if not self._keys:
            return Principal()
        if not presented:
            return None
        d, found = _digest(presented), None
        for stored, who in self._keys:
            if hmac.compare_digest(stored, d):
                found = who
        return found


def presented_key(headers, query) -> str | None:
    """The key the request states itself (a header, or ``?api_key=``); a session cookie is not a key."""
    return header_key(headers) or query.get("api_key") or None


def header_key(headers) -> str | None:
    """The key in ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``; None when neither holds a well-formed one.
    An empty or malformed header (``Bearer `` and nothing, a key with spaces or control characters in it) is no
    key at all: else it would excuse a browser's cookie-borne request from the Origin and CSRF checks
    (guard.py) while the cookie's session still authorised it."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and _well_formed(auth[7:].strip()):
        return auth[7:].strip()
    key = headers.get("x-api-key", "").strip()
    return key if _well_formed(key) else None


def _well_formed(key: str) -> bool:
    return bool(key) and all(32 < ord(c) != 127 for c in key)
