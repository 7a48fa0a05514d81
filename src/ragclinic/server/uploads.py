"""Uploads into ``KB/uploads`` (``POST /v1/ingest``, the UI's upload).

Names are checked before a byte is written (count, UTF-8 length, control characters, hidden files, one name
twice). Each file streams into a staging folder of its request (``.partial-PID-…``, bounded by ``max_file_size``),
then moves into a folder named by the hash of its tags, name and bytes: the same upload is the same path, so
sending it again — or eight times at once — is one document ("unchanged"), and the same file with other tags
(another tenant's key) is another. The move, the ingest and the removal of what was refused run under the
writer's lock; refused files do not stay on disk. ``clean_stale`` (when the server starts) removes what a killed
request left: staging folders of dead processes and folders no document's source path points into.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
from dataclasses import fields
from pathlib import Path, PurePosixPath

from ragclinic.errors import LimitExceeded
from ragclinic.ingest.result import IngestResult
from ragclinic.limits import check_scope, over, shown
from ragclinic.server.errors import ApiError

STAGING = ".partial-"  # + PID-random: a request's files while they arrive
PENDING = ".pending-"  # + PID: inside a folder moved into place and not yet ingested (hidden: ingest skips it)


def _bad(message: str) -> ApiError:
    return ApiError(422, "invalid_request", message)


def tag_pairs(tags: list[str], settings, enforced: dict[str, str]) -> dict[str, str]:
    """``KEY=VALUE`` fields → tags (bounded like a scope), the key's tenant over whatever they say. A tenant's key
    may not set the authority tag: it boosts a document over others (scope/policies.py), and a tenant's own
    ``authority=official`` would rank its uploads over other tenants' in the admin's questions (issue 32)."""
    pairs = {}
    for t in tags:
        key, eq, value = t.partition("=")
        if not eq or not key.strip():
            raise _bad(f"tags: {shown(t)} is not KEY=VALUE (e.g. tenant=acme)")
        if enforced and key.strip() == settings.authority_tag:
            raise _bad(f"tags: {shown(t)} — a tenant's key may not set the {shown(settings.authority_tag)} tag (it "
                       "ranks a document over other tenants' documents); leave it out, or ask the admin key to tag "
                       "the document")
        pairs[key.strip()] = value.strip()
    try:
        check_scope(settings, pairs, "tags")
    except LimitExceeded as e:
        raise _bad(str(e)) from None
    return {**pairs, **enforced}


def file_names(raw: list[str | None], settings) -> list[str]:
    """The names the files are stored under (their last path part), or a 422 naming the file and the fix."""
    if len(raw) > settings.max_upload_files:
        raise _bad(str(over("files", "the number of files", len(raw), "files", "max_upload_files",
                            settings.max_upload_files, "send them in several requests")))
    names: list[str] = []
    for given in raw:
        name = PurePosixPath((given or "upload").replace("\\", "/")).name
        _check_name(name, given, settings)
        if name in names:
            raise _bad(f"files: {shown(name)} is sent twice in this request (one would replace the other); send "
                       "it once, or rename one of them")
        names.append(name)
    return names


def _check_name(name: str, given: str | None, settings) -> None:
    if name in ("", ".", ".."):
        raise _bad(f"files: {shown(given or '')} is not a file name")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise _bad(f"files: the name {shown(name)} has a control character; rename the file")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise _bad(f"files: the name {shown(name)} is not valid UTF-8; rename the file") from None
    if size > settings.max_upload_name_bytes:
        raise _bad(str(over("files", f"the name {shown(name)}", size, "bytes (UTF-8)", "max_upload_name_bytes",
                            settings.max_upload_name_bytes, "rename the file")))
    if name.startswith("."):
        raise _bad(f"files: {shown(name)} starts with a dot, and ingest skips hidden files; rename it")
    if name.endswith(".meta.json"):
        raise _bad(f"files: {shown(name)}: metadata sidecars are not accepted by upload; send tags as form fields")


def staging_folder(kb: Path) -> Path:
    root = kb / "uploads"
    root.mkdir(parents=True, exist_ok=True)
    folder = root.resolve() / f"{STAGING}{os.getpid()}-{secrets.token_hex(6)}"  # resolved: as ingest records paths
    folder.mkdir()
    return folder


def receive(src, staging: Path, name: str, pairs: dict[str, str], limit: int) -> str:
    """Copy one upload into ``staging/DIGEST/name`` (at most ``limit`` bytes) → its digest: a hash of its tags,
    name and bytes."""
    h = hashlib.sha256(json.dumps(pairs, sort_keys=True).encode() + b"\0" + name.encode() + b"\0")
    part = staging / "incoming"
    part.mkdir(exist_ok=True)
    size = 0
    with open(part / name, "wb") as out:
        while block := src.read(1 << 20):
            size += len(block)
            if size > limit:
                raise _bad(str(over("files", shown(name), size, "bytes or more", "max_file_size", limit,
                                    "split the file")))
            h.update(block)
            out.write(block)
    digest = h.hexdigest()[:32]
    (staging / digest).mkdir()
    (part / name).rename(staging / digest / name)
    (staging / digest / f"{PENDING}{os.getpid()}").touch()
    return digest


def place(staging: Path, digest: str) -> Path:
    """Move a staged upload into ``KB/uploads/DIGEST`` (atomic); the same upload already there is kept."""
    folder = staging.parent / digest
    try:
        os.rename(staging / digest, folder)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not folder.is_dir():
            raise
    return folder


def settle(folders: list[Path], sources: set[str]) -> None:
    """After the ingest: a folder no document points into is removed (its files were refused); the others
    lose their pending mark."""
    for folder in folders:
        if not any(s.startswith(f"{folder}{os.sep}") for s in sources):
            shutil.rmtree(folder, ignore_errors=True)
        else:
            for mark in folder.glob(f"{PENDING}*"):
                mark.unlink(missing_ok=True)


def sources_under(db, root: Path) -> set[str]:
    """The source paths (documents' and files') under ``root``."""
    prefix = str(root).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + os.sep + "%"
    rows = db.conn.execute("SELECT path FROM documents WHERE path LIKE ? ESCAPE '\\' UNION "
                           "SELECT path FROM files WHERE path LIKE ? ESCAPE '\\'", [prefix, prefix])
    return {p for (p,) in rows}


def relative(result, folders: list[Path], staging: Path):
    """The result with each failed file named as it was uploaded: no server folder in a path or a reason."""
    def strip(text: str) -> str:
        for f in (*folders, staging):
            text = text.replace(f"{f}{os.sep}", "").replace(str(f), "")
        return text

    result.failed = [{**f, "path": strip(f.get("path", "")), "reason": strip(f.get("reason", ""))}
                     for f in result.failed]
    # the pending mark is ours, not the user's (a hidden file the ingest skips): never reported
    result.skipped = [{**f, "path": strip(f.get("path", "")), "reason": strip(f.get("reason", ""))}
                      for f in result.skipped if not Path(f.get("path", "")).name.startswith(PENDING)]
    return result


def merged(results: list):
    """Several ingest results as one (counts added up, failures listed)."""
    total = IngestResult()
    for r in results:
        for f in fields(IngestResult):
            mine, theirs = getattr(total, f.name), getattr(r, f.name)
            if isinstance(mine, list):
                mine.extend(theirs)
            elif isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
                setattr(total, f.name, mine + theirs)
            elif theirs is not None:
                setattr(total, f.name, theirs)
    return total


def clean_stale(kb: Path, sources: set[str]) -> list[Path]:
    """Remove what killed requests left under ``KB/uploads``: staging folders of processes that are gone, and
    folders no document's or file's source path (``sources``) points into, unless a live process has just moved
    them in (its pending mark). → the folders removed."""
    root = (kb / "uploads").resolve()
    if not root.is_dir():
        return []
    used = {Path(s).relative_to(root).parts[0] for s in sources if Path(s).is_relative_to(root)}
    removed = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.is_symlink() or entry.name in used:
            continue
        if entry.name.startswith(STAGING):
            owner = entry.name[len(STAGING):].split("-", 1)[0]
            if _alive(owner):
                continue
        elif any(_alive(m.name[len(PENDING):]) for m in entry.glob(f"{PENDING}*")):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True
