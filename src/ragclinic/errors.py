"""Error hierarchy. Messages name the bad value and the fix; the CLI turns them into exit codes."""

from __future__ import annotations

import os
import shutil


class RagclinicError(Exception):
    """Base class for every error ragclinic raises on purpose."""


class ConfigError(RagclinicError):
    """A setting has a bad value, or the knowledge base was built with incompatible settings."""


class ParseError(RagclinicError):
    """A file could not be parsed. ``reason`` is the one-line summary shown to the user."""

    def __init__(self, reason: str, *, page: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.page = page


class UnsupportedFileType(ParseError):
    """No parser is registered for the file's type."""


class EncryptedDocument(ParseError):
    """The document needs a password."""


class FileTooLarge(ParseError):
    """The file is larger than ``max_file_size``."""


class StoreError(RagclinicError):
    """The knowledge base on disk is missing, locked, or inconsistent."""


class KnowledgeBaseLocked(StoreError):
    """Another process is writing to the knowledge base."""


class ModelError(RagclinicError):
    """A model backend could not be loaded or failed."""


class ModelCrashed(ModelError):
    """The process running a model died (a signal, out of memory, a native assertion) or stopped answering.

    ``reason`` is what the user sees ("the local model crashed: SIGSEGV"); the question is then answered
    extractively and the next one starts a new worker."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ModelTimeExceeded(ModelCrashed):
    """One question has used ``max_model_seconds`` of model time: the rest of it is answered without the model
    (like a crash, but the worker is fine and keeps running)."""


class LimitExceeded(RagclinicError):
    """A request is over one of the limits in Settings; the message names the setting and how to change it."""


class OutsideScope(RagclinicError):
    """A tenant's key named a trace that is not its tenant's, or a re-run or replay would hold chunks of documents
    outside its tenant (trace/owner.py). ``trace_id``: the trace it named — the server answers exactly as for a
    trace that does not exist (404), so that the refusal tells the tenant nothing."""

    def __init__(self, message: str, *, trace_id: str = "") -> None:
        super().__init__(message)
        self.trace_id = trace_id


class LayerError(RagclinicError):
    """A failure inside a pipeline layer, wrapped with the layer's name."""

    def __init__(self, layer: str, cause: BaseException) -> None:
        super().__init__(f"{layer} layer: {cause}")
        self.layer = layer
        self.cause = cause


_FULL = ("no space left on device", "os error 28", "database or disk is full", "disk is full")
_READONLY = ("read-only file system", "os error 30", "readonly database", "attempt to write a readonly")


def disk_problem(e: BaseException, where: object = None) -> str:
    """The one-line message for a full disk or a read-only knowledge base (from the OS, SQLite or tantivy), or
    '' when ``e`` is something else. ``where``: the knowledge base folder, named in the message."""
    errno = getattr(e, "errno", None)
    text = str(e).lower()
    place = f"the knowledge base at {where}" if where else "the knowledge base"
    if errno == 28 or any(k in text for k in _FULL) or _nearly_full(where):
        return (f"no space left on the disk that holds {place}; free some space (df -h shows it) and run the "
                f"command again — everything committed before is kept")
    if errno == 30 or any(k in text for k in _READONLY) or _not_writable(where):
        return (f"{place} is on a read-only file system or is not writable; remount it read-write or copy it "
                f"somewhere writable — questions need to write their traces")
    return ""


def _nearly_full(where: object) -> bool:
    """Under 1 MiB free where the knowledge base is: an error then is the full disk's, whatever it says (tantivy's
    worker threads report "an index writer was killed")."""
    if not where:
        return False
    try:
        return shutil.disk_usage(str(where)).free < (1 << 20)
    except OSError:
        return False


def _not_writable(where: object) -> bool:
    """The folder cannot be written (a read-only mount: SQLite then only says "unable to open database file")."""
    return bool(where) and os.path.isdir(str(where)) and not os.access(str(where), os.W_OK)
