"""Evaluation datasets: what the loaders produce, the loader registry, and malformed-record reporting.

Files are given by path and never downloaded. A malformed record is reported (file, line, field, what is
wrong) and skipped; the load fails only when nothing usable is left.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragclinic.errors import RagclinicError
from ragclinic.registry import Registry


class DatasetError(RagclinicError):
    """A dataset file that cannot be used at all (missing, unreadable, no valid record)."""


@dataclass(frozen=True)
class Problem:
    path: str
    line: int  # 1-based line (JSON Lines / TSV), or record index for a JSON document
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class RetrievalSet:
    """BEIR layout: a corpus, queries, and graded relevance judgements."""

    corpus: tuple[Doc, ...]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True)
class QAItem:
    """One question. ``answers``: parts that must all appear, each a tuple of accepted alternatives (RGB's
    convention: a string is one part; a list of strings is several required parts; an inner list holds
    alternatives). ``documents`` are the passages to answer from, when the set brings its own."""

    id: str
    question: str
    answers: tuple[tuple[str, ...], ...]
    documents: tuple[str, ...] = ()
    negatives: tuple[str, ...] = ()  # same-topic passages without the answer (RGB)
    counterfactual: tuple[str, ...] = ()  # passages stating a wrong answer (RGB positive_wrong)
    fake_answers: tuple[str, ...] = ()  # the wrong answer those passages state
    expect_refusal: bool = False
    # constraint-swap sets (bench/make_constraint_swap.py): what was swapped ("year: 2021 → 2019") in a question
    # the passages no longer answer (its fake_answers: what they give for the original question), and the half
    # of the set the item belongs to ("dev" or "heldout")
    swap: str = ""
    split: str = ""
    # real-document sets (bench/realdocs): verbatim snippets of the answering passage (eval/tasks/gold.py), its page
    gold: tuple[str, ...] = ()
    page: str = ""


@dataclass(frozen=True)
class DetectionItem:
    """A (context, answer) pair for the faithfulness detector: is the answer supported by the context?"""

    id: str
    context: str
    question: str
    answer: str
    hallucinated: bool


@dataclass(frozen=True)
class Loaded:
    kind: str  # "retrieval", "qa", "detection"
    data: Any  # RetrievalSet, or a tuple of QAItem / DetectionItem
    problems: tuple[Problem, ...] = ()
    source: str = ""


LOADERS: Registry[Callable[[Path], Loaded]] = Registry("dataset format")


@dataclass
class Collector:
    """Gathers problems while a loader walks a file."""

    path: Path
    problems: list[Problem] = field(default_factory=list)

    def bad(self, line: int, field_: str, message: str) -> None:
        self.problems.append(Problem(str(self.path), line, field_, message))


def need_str(rec: dict, key: str, col: Collector, line: int, *, optional: bool = False) -> str | None:
    v = rec.get(key)
    if v is None:
        if not optional:
            col.bad(line, key, "missing")
        return None
    if not isinstance(v, str) or not v.strip():
        col.bad(line, key, f"expected a non-empty string, got {type(v).__name__}")
        return None
    return v


def str_list(v: Any, key: str, col: Collector, line: int) -> tuple[str, ...] | None:
    """A string or a list of strings; one level of nesting is flattened (RGB's integration items group
    their passages per answer part)."""
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list):
        flat = [y for x in v for y in (x if isinstance(x, list) else [x])]
        if all(isinstance(x, str) for x in flat):
            return tuple(flat)
    col.bad(line, key, "expected a string or a list of strings")
    return None


def answer_parts(v: Any, col: Collector, line: int, key: str = "answer") -> tuple[tuple[str, ...], ...] | None:
    """RGB's answer convention → parts × alternatives."""
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return ((str(v),),)
    if isinstance(v, list) and v:
        parts = []
        for x in v:
            if isinstance(x, (str, int, float)) and not isinstance(x, bool):
                parts.append((str(x),))
            elif isinstance(x, list) and x and all(isinstance(y, (str, int, float)) for y in x):
                parts.append(tuple(str(y) for y in x))
            else:
                col.bad(line, key, "each part must be a string or a non-empty list of strings")
                return None
        return tuple(parts)
    col.bad(line, key, "expected a string, a list, or a list of lists")
    return None


def finish(kind: str, data: Sequence | RetrievalSet, col: Collector) -> Loaded:
    empty = not data.queries if isinstance(data, RetrievalSet) else not data
    if empty:
        shown = "; ".join(map(str, col.problems[:3]))
        raise DatasetError(f"{col.path}: no usable record" + (f" ({shown})" if shown else ""))
    data = data if isinstance(data, RetrievalSet) else tuple(data)
    return Loaded(kind, data, tuple(col.problems), str(col.path))


def read_records(path: Path, col: Collector):
    """(line number, JSON object) for each line that holds one; other lines are reported and skipped."""
    for line, rec in read_lines(path):
        if isinstance(rec, Exception) or not isinstance(rec, dict):
            col.bad(line, "(line)", f"not a JSON object: {rec}")
            continue
        yield line, rec


def read_lines(path: Path):
    """(line number, parsed JSON or the JSON error) for each non-empty line."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such file (give the path of the dataset file)")
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield i, json.loads(line)
            except json.JSONDecodeError as e:
                yield i, e
