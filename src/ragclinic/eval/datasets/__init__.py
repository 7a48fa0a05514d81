"""Dataset loaders (one module per format) behind ``load("FORMAT:PATH")``."""

from __future__ import annotations

from pathlib import Path

from ragclinic.eval.datasets import beir, cases, halueval, jsonl, rgb, squad  # noqa: F401  (register the loaders)
from ragclinic.eval.datasets.base import (LOADERS, DatasetError, DetectionItem, Doc, Loaded, Problem, QAItem,  # noqa: F401
                                          RetrievalSet)


def load(spec: str, kb: Path | None = None) -> Loaded:
    """``FORMAT:PATH`` (beir, rgb, halueval, squad, jsonl, cases) → the loaded dataset with its problems. ``cases:``
    without a path reads the failed-answer library of ``kb``."""
    fmt, sep, path = spec.partition(":")
    if fmt == "cases" and sep and not path and kb is not None:
        path = str(kb)
    if not sep or not path:
        raise DatasetError(f"dataset {spec!r}: expected FORMAT:PATH with FORMAT one of {', '.join(LOADERS.names())}")
    return LOADERS.create(fmt, Path(path).expanduser())
