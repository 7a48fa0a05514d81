"""`eval rag --corpus FOLDER`: a folder of documents ingested once into the knowledge base every item is asked against.

The knowledge base is the caller's (``--kb``) or one under the cache folder named by the folder's path and the
files' content, so an unchanged folder finds its knowledge base again and the ingest (incremental: unchanged files
are neither parsed nor embedded again) leaves it as it was — its version included. The ingest is the Clinic's:
``wiring.Parts.ingest`` under the write lock, with ``sync`` (a file gone from the folder leaves the knowledge base).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragclinic import wiring
from ragclinic.config import Settings
from ragclinic.eval.datasets import DatasetError
from ragclinic.models.llm import LanguageModel


@dataclass(frozen=True)
class Corpus:
    """The ingested folder: its knowledge base (open, in ``parts``) and what the ingest did."""

    folder: Path
    parts: wiring.Parts
    ingest: dict[str, Any]  # IngestResult.to_json()

    def to_json(self) -> dict[str, Any]:
        stats = self.parts.kb.db.stats()
        return {"folder": str(self.folder), "kb": str(self.parts.settings.kb), "ingest": self.ingest,
                "kb_version": stats["version"], "documents": stats["documents"], "chunks": stats["chunks"]}


def corpus_digest(folder: Path) -> str:
    """A hash of the folder's resolved path and of every file under it (relative path and bytes)."""
    h = hashlib.sha256(str(folder.resolve()).encode("utf-8"))
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def default_corpus_kb(folder: Path, cache_dir: Path) -> Path:
    """The knowledge base of ``folder`` as it is now, under the cache folder."""
    name = re.sub(r"[^\w.-]+", "_", folder.resolve().name)[:40] or "corpus"
    return cache_dir / "eval" / f"corpus-{name}-{corpus_digest(folder)[:12]}"


def open_corpus(folder: Path, kb: Path | None, llm: str | None, lm: LanguageModel | None) -> Corpus:
    """``folder`` ingested into ``kb`` (None: its default one), with the model ``lm`` (a graph's model mode
    needs it); the caller closes ``.parts``."""
    if not folder.is_dir():
        raise DatasetError(f"--corpus {folder}: not a folder (give the folder of documents to ingest)")
    settings = Settings.load(kb or default_corpus_kb(folder, Settings().cache_dir), llm=llm)
    parts = wiring.Parts(settings, model=lm)
    try:
        result = parts.ingest([folder], sync=True)
    except BaseException:
        parts.close()
        raise
    return Corpus(folder, parts, result.to_json())
