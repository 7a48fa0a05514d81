"""The knowledge base's settings file (settings.toml): read, written atomically, and handed to pydantic as the
source below the environment. Which keys are valid is the settings' business (settings.py passes them in)."""

from __future__ import annotations

import contextvars
import os
import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any

import tomli_w
from pydantic_settings import PydanticBaseSettingsSource

from ragclinic.errors import ConfigError

SETTINGS_FILE = "settings.toml"

# The file's values while Settings.load builds one object (a context variable: loads in threads do not mix).
file_values: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("file_values", default={})


class KbFileSource(PydanticBaseSettingsSource):
    """Values from the knowledge base's settings.toml (set through ``file_values`` by ``Settings.load``)."""

    def get_field_value(self, field, field_name):  # pragma: no cover - unused by __call__
        return file_values.get().get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(file_values.get())


def read_file(path: Path, known: Collection[str]) -> dict[str, Any]:
    """The file's values ({} when there is none); a key not in ``known`` is refused with the valid names."""
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read settings file {path}: {e}; fix the file or delete it") from None
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} in {path}; "
                          f"valid names: {', '.join(sorted(known))}")
    return data


def write_file(path: Path, values: dict[str, Any], known: Collection[str]) -> None:
    """Write (atomically) the given values; keys already in the file and not given are kept."""
    current = read_file(path, known)
    current.update({k: (str(v) if isinstance(v, Path) else v) for k, v in values.items()})
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("# ragclinic knowledge-base settings (see docs/settings.md)\n" + tomli_w.dumps(current),
                   encoding="utf-8")
    os.replace(tmp, path)


def explain(e) -> str:
    """A pydantic ValidationError as one line naming each bad value and where to set it."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "settings"
        parts.append(f"{loc}={err.get('input')!r}: {err['msg']}")
    return "invalid setting " + "; ".join(parts) + " (set it by flag, RAGCLINIC_* variable or settings.toml)"
