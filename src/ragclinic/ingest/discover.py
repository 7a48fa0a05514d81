"""Find the files to ingest and read them once, turning every file-system problem into a one-line reason."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragclinic.errors import FileTooLarge, ParseError
from ragclinic.types import SourceFile


SIDECAR_SUFFIX = ".meta.json"  # "report.pdf.meta.json" holds report.pdf's tags; never a document itself


def read_sidecar(path: Path) -> dict[str, str]:
    """Tags from ``PATH.meta.json`` if it exists: a JSON object of scalar values."""
    side = path.with_name(path.name + SIDECAR_SUFFIX)
    if not side.exists():
        return {}
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ParseError(f"unreadable metadata sidecar {side.name}: {e}; fix it or delete it") from None
    if not isinstance(data, dict) or not all(isinstance(v, (str, int, float, bool)) for v in data.values()):
        raise ParseError(f"metadata sidecar {side.name} must be a JSON object of strings or numbers, "
                         f'e.g. {{"tenant": "acme", "version": "2"}}')
    return {str(k): str(v) for k, v in data.items()}


@dataclass(frozen=True)
class Found:
    path: Path  # absolute; resolved when it could be
    error: str | None = None
    skipped: str | None = None  # why it is left out on purpose (a hidden entry inside a folder)


HIDDEN_FILE = "hidden (the name starts with '.'): skipped inside folders; name it on its own to ingest it"
HIDDEN_FOLDER = ("hidden folder (the name starts with '.'): skipped with everything in it; name a file in it "
                 "on its own to ingest it")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def _reason(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "no read permission"
    if e.errno == errno.ENOENT:
        return "no such file or directory (or a dangling symlink)"
    return f"cannot read: {e.strerror or e}"


def discover(paths: list[str | Path]) -> list[Found]:
    """Files under the given paths, in a stable order; each path once. Hidden files/folders are skipped
    inside folders (not when named directly) and returned with ``skipped`` saying so, so that the result
    can name them; folder symlink loops are detected, not followed forever."""
    out: list[Found] = []
    seen: set[Path] = set()

    def emit(p: Path, error: str | None = None, skipped: str | None = None) -> None:
        key = p
        if key not in seen:
            seen.add(key)
            out.append(Found(p, error, skipped))

    for raw in paths:
        p = Path(os.path.abspath(os.path.expanduser(str(raw))))
        try:
            st = p.stat()
        except OSError as e:
            emit(p, _reason(e))
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(p, emit)
        else:
            emit(p.resolve())
    return out


def _walk(root: Path, emit) -> None:
    visited: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
        except OSError as e:
            emit(folder, _reason(e))
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in visited:
            continue  # a symlink back to a folder already walked
        visited.add(ident)
        try:
            entries = sorted(os.scandir(folder), key=lambda d: d.name)
        except OSError as e:
            emit(folder, _reason(e))
            continue
        subdirs = []
        for entry in entries:
            if entry.name.endswith(SIDECAR_SUFFIX):
                continue  # read with the file it describes
            path = Path(entry.path)
            if entry.name.startswith("."):
                emit(path, skipped=HIDDEN_FOLDER if _is_dir(entry) else HIDDEN_FILE)
                continue
            try:
                if entry.is_dir(follow_symlinks=True):
                    subdirs.append(path)
                    continue
                path.stat()
            except OSError as e:
                emit(path, _reason(e))
                continue
            emit(path.resolve())
        stack.extend(reversed(subdirs))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def read_source(path: Path, max_file_size: int) -> SourceFile:
    """Read a file once (bytes, sha256, mtime), refusing empty and over-large files with a clear reason."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise ParseError("not a regular file")
        if st.st_size == 0:
            raise ParseError("empty file (0 bytes)")
        if st.st_size > max_file_size:
            raise FileTooLarge(f"file is {_human(st.st_size)}, over max_file_size {_human(max_file_size)}; "
                               f"raise --max-file-size to ingest it")
        with open(path, "rb") as f:
            data = f.read(max_file_size + 1)
    except OSError as e:
        raise ParseError(_reason(e)) from None
    if len(data) > max_file_size:  # grew while we looked
        raise FileTooLarge(f"file is over max_file_size {_human(max_file_size)}; raise --max-file-size to ingest it")
    return SourceFile(path=path, data=data, sha256=hashlib.sha256(data).hexdigest(), mtime=st.st_mtime,
                      size=len(data))


def relative_reasons(paths: list[str | Path]) -> Callable[[str], str]:
    """A function that rewrites a failure reason to name files relative to the folders ingested (a file's own
    folder when a file was named): reasons reach tenants, the server's absolute paths must not (issue 32)."""
    roots: set[str] = set()
    for raw in paths:
        p = Path(os.path.abspath(os.path.expanduser(str(raw))))
        folder = p if p.is_dir() else p.parent
        roots.update({str(folder), str(folder.resolve())})
    prefixes = sorted((r.rstrip(os.sep) + os.sep for r in roots if r.rstrip(os.sep)), key=len, reverse=True)

    def clean(reason: str) -> str:
        for prefix in prefixes:
            reason = reason.replace(prefix, "")
        return reason

    return clean
