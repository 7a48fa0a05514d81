"""One registry mechanism for every pluggable role; built-ins register through it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from ragclinic.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps a name to a factory. Unknown names raise an error listing the valid ones."""

    def __init__(self, role: str) -> None:
        self.role = role
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str, factory: Callable[..., T] | None = None):
        """Register ``factory`` under ``name``; usable as a decorator."""

        def add(f: Callable[..., T]) -> Callable[..., T]:
            self._factories[name] = f
            return f

        return add(factory) if factory is not None else add

    def names(self) -> list[str]:
        return sorted(self._factories)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._factories[name]
        except KeyError:
            valid = ", ".join(self.names()) or "(none registered)"
            raise ConfigError(f"unknown {self.role} {name!r}; valid names: {valid}") from None

    def create(self, name: str, *args, **kwargs) -> T:
        return self.get(name)(*args, **kwargs)
