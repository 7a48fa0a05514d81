"""Bounds on what one request may carry (issue 32). A question's scope and text are stored in its traces and
in the answer cache, several times over, so a 1 MB scope value once grew a knowledge base by 21 MB: each is
bounded by a setting, checked before any work is done — by ``Clinic.consult`` for library users, by the
server's routes (HTTP 422) for everyone else. Messages name the field, the limit and the setting to raise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragclinic.errors import LimitExceeded


def over(field: str, what: str, n: int, unit: str, setting: str, limit: int, fix: str) -> LimitExceeded:
    """The error for ``what`` in ``field`` being ``n`` ``unit`` against ``setting``'s ``limit``."""
    return LimitExceeded(f"{field}: {what} is {n} {unit}, more than {setting}={limit}; {fix} or raise the limit "
                         f"(RAGCLINIC_{setting.upper()})")


def shown(text: str, n: int = 40) -> str:
    """A value short enough to quote in an error."""
    return repr(text if len(text) <= n else text[:n] + "…")


def check_text(settings: Any, text: str, field: str, setting: str, what: str = "") -> None:
    limit = getattr(settings, setting)
    if len(text) > limit:
        raise over(field, what or f"the {field}", len(text), "characters", setting, limit, "shorten it")


def check_question(settings: Any, question: str, field: str = "question") -> None:
    check_text(settings, question, field, "max_question_chars")


def check_scope(settings: Any, scope: Mapping[str, Any] | None, field: str = "scope") -> None:
    """Keys per request, and each key's and value's length (a scope, or an upload's tags)."""
    pairs = scope or {}
    if len(pairs) > settings.max_scope_keys:
        raise over(field, "the number of keys", len(pairs), "keys", "max_scope_keys", settings.max_scope_keys,
                   "send fewer")
    for key, value in pairs.items():
        key = str(key)
        if len(key) > settings.max_scope_key_chars:
            raise over(field, f"the key {shown(key)}", len(key), "characters", "max_scope_key_chars",
                       settings.max_scope_key_chars, "shorten it")
        value = value if isinstance(value, str) else str(value)
        if len(value) > settings.max_scope_value_chars:
            raise over(field, f"the value of {shown(key)}", len(value), "characters", "max_scope_value_chars",
                       settings.max_scope_value_chars, "shorten it")


def check_request(settings: Any, question: str, scope: Mapping[str, Any] | None) -> None:
    """A question and its scope (what ``Clinic.consult`` stores)."""
    check_question(settings, question)
    check_scope(settings, scope)
