"""The backend names the pluggable settings (``llm``, ``embedder``) accept, read by the settings' validators
without importing the model code: the built-in backends are listed here, and each role's registry hands over the
names plugins add (models/llm.py and models/embedder.py call ``accept_from`` with their registry's ``names``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# What models/factory.py registers (tests/models check the two agree); "none" is valid too and means no model.
BUILTIN: dict[str, tuple[str, ...]] = {
    "llm": ("fake", "local", "local-small", "openai"),
    "embedder": ("e5", "fake", "wordllama"),
}
ROLES = {"llm": "language model", "embedder": "embedder"}

_registered: dict[str, Callable[[], Iterable[str]]] = {}


def accept_from(setting: str, names: Callable[[], Iterable[str]]) -> None:
    """Also accept, for ``setting``, the names ``names()`` returns when a value is checked (plugins included)."""
    _registered[setting] = names


def valid_names(setting: str) -> list[str]:
    extra = _registered.get(setting)
    return sorted(set(BUILTIN[setting]) | set(extra() if extra else ()))


def check_name(setting: str, value: str) -> str:
    """``value`` when it names a backend (or is ``none``); otherwise an error listing the valid names."""
    valid = valid_names(setting)
    if value != "none" and value not in valid:
        raise ValueError(f"unknown {ROLES[setting]}; valid names: none, {', '.join(valid)}")
    return value
