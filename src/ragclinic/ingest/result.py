"""What an ingest reports: the result (the ``ingest --json`` object), progress, and --strict's abort."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ragclinic.errors import RagclinicError


@dataclass
class IngestResult:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # left out on purpose, with why (hidden entries)
    chunks: int = 0  # chunks written by this run
    seconds: float = 0.0
    files: int = 0  # files ingested or unchanged (not part of the --json contract, kept for the summary)
    graph: dict[str, Any] | None = None  # the knowledge graph's sync (graph/sync.py), in a KB with --graph

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("files")
        if self.graph is None:
            d.pop("graph")
        if not self.skipped:  # only when something was left out (an added field: the old keys stay as they were)
            d.pop("skipped")
        d["seconds"] = round(self.seconds, 3)
        return d


@dataclass(frozen=True)
class Progress:
    """Work done so far. ``total`` is an estimate while files are still unread: each unread file counts
    as one document until it is read (a JSONL file then counts its lines)."""

    done: int
    total: int
    files_done: int
    files_total: int
    chunks: int


class IngestAborted(RagclinicError):
    """--strict stopped at the first failure; nothing from this run was kept."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason} (--strict: nothing from this run was kept)")
        self.path, self.reason = path, reason
