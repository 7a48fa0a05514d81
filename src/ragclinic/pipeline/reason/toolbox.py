"""Running a plan's steps: each tool call recorded as ``{"name", "input", "output", "seconds", "error"}`` plus the
passages it rests on (``cites``), with the limits of strict mode.

- ``sql`` runs through tools/sql.py over the tables of the documents in the question's scope only; its rows cite
  the passage that holds the table's text.
- ``calculator`` takes only numbers that the passages, the question, a table or an earlier step gave (or a small
  constant such as 2, 12 or 100): a number the model made up is an error that goes back to it, so an answer's
  arithmetic never rests on the model's own.
- ``search`` adds the best three new passages for a query (the same retrieval, scope and key as the question).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragclinic.pipeline.reason.plan import Step
from ragclinic.tools.calculator import ToolError, calculate
from ragclinic.tools.sql import run_sql

_NUM = re.compile(r"(?<![A-Za-z0-9_.])[-+]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")
_CONSTANTS = {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 10.0, 12.0, 100.0, 1000.0}
MAX_OUTPUT_ROWS = 20


def numbers_in(text: str) -> set[float]:
    out = set()
    for m in _NUM.finditer(text or ""):
        try:
            out.add(round(float(m.group(0).replace(",", "").lstrip("+")), 6))
        except ValueError:
            continue
    for m in re.finditer(r"(\d+(?:\.\d+)?)\s*万", text or ""):
        out.add(round(float(m.group(1)) * 1e4, 6))
    return out


@dataclass
class Record:
    name: str
    input: str
    output: str = ""
    seconds: float = 0.0
    error: str | None = None
    cites: tuple[int, ...] = ()
    step: int = 0
    depends_on: tuple[int, ...] = ()
    value: float | str | None = None  # what ``{step}`` stands for in a later input

    def to_json(self) -> dict:
        return {"step": self.step, "name": self.name, "input": self.input, "output": self.output,
                "seconds": round(self.seconds, 4), "error": self.error, "cites": list(self.cites)}


@dataclass
class Toolbox:
    db_path: Path
    tables: Sequence[dict]  # the tables in scope (store/tables.list_tables)
    passages: list  # Passage objects shown to the planner (a search step appends)
    question: str
    cite_table: Callable[[str], int | None]  # table name → the passage number holding its text
    search: Callable[[str], list] | None = None  # query → new Passages (numbered after the others)
    max_calls: int = 5
    records: list[Record] = field(default_factory=list)

    def known_numbers(self) -> set[float]:
        known = numbers_in(self.question) | _CONSTANTS
        for p in self.passages:
            known |= numbers_in(p.chunk.text)
        for r in self.records:
            if r.error is None:
                known |= numbers_in(r.output)
        return known

    def run(self, steps: Sequence[Step]) -> Record | None:
        """Run ``steps`` in order; the failing record (also kept in ``records``), or None when all ran."""
        results: dict[int, Record] = {}
        for st in steps:
            if len(self.records) >= self.max_calls:
                rec = Record(st.tool, st.input, step=st.step,
                             error=f"limit: at most {self.max_calls} tool calls per question (tools_max_calls)")
                self.records.append(rec)
                return rec
            rec = self._call(st, results)
            self.records.append(rec)
            if rec.error:
                return rec
            results[st.step] = rec
        return None

    def _call(self, st: Step, results: dict[int, Record]) -> Record:
        t0 = time.perf_counter()
        rec = Record(st.tool, st.input, step=st.step, depends_on=st.depends_on)
        try:
            text = _substitute(st.input, results)
            rec.input = text
            if st.tool == "sql":
                self._sql(text, rec)
            elif st.tool == "calculator":
                self._calculator(text, rec)
            else:
                self._search(text, rec)
        except ToolError as e:
            rec.error = str(e)
        rec.seconds = time.perf_counter() - t0
        return rec

    def _sql(self, query: str, rec: Record) -> None:
        names = {t["name"] for t in self.tables}
        try:
            res = run_sql(self.db_path, query, names)
        except ToolError as e:
            if "no such column" in str(e):  # the model misread a name: give it the real ones to re-plan with
                cols = "; ".join(f"{t['name']}: {', '.join(c[0] for c in t['columns'])}" for t in self.tables)
                raise ToolError(f"{e} (the columns are {cols})") from None
            raise
        if all(v is None for row in res.rows for v in row):  # no rows, or MAX(...) over none: nothing found
            raise ToolError("sql: the query found nothing (" + ("no rows" if not res.rows else "NULL") + "); the "
                            "value may be written in a passage, not in a table cell, or the WHERE clause may not "
                            "match the table's values")
        lines = [" | ".join(res.columns)] + [" | ".join(_cell(v) for v in row) for row in res.rows[:MAX_OUTPUT_ROWS]]
        if len(res.rows) > MAX_OUTPUT_ROWS or res.truncated:
            lines.append(f"... ({len(res.rows)}{'+' if res.truncated else ''} rows)")
        rec.output = "\n".join(lines)
        rec.cites = tuple(n for n in dict.fromkeys(self.cite_table(t) for t in res.tables) if n is not None)
        if len(res.rows) == 1:
            nums = [v for v in res.rows[0] if isinstance(v, (int, float)) and not isinstance(v, bool)]
            rec.value = nums[-1] if nums else (res.rows[0][-1] if res.rows[0] else None)

    def _calculator(self, expression: str, rec: Record) -> None:
        known = self.known_numbers()
        for m in _NUM.finditer(expression):
            v = round(float(m.group(0).replace(",", "").lstrip("+")), 6)
            if v not in known and abs(v) not in known:
                raise ToolError(f"calculator: {m.group(0)} is in no passage, table or earlier result; take the "
                                "numbers from them")
        calc = calculate(expression)
        rec.output, rec.value = calc.text, calc.value
        used = numbers_in(expression) - _CONSTANTS
        rec.cites = tuple(p.n for p in self.passages if used & numbers_in(p.chunk.text))[:3]

    def _search(self, query: str, rec: Record) -> None:
        if self.search is None:
            raise ToolError("search: not available here")
        found = self.search(query)
        self.passages.extend(found)
        rec.output = "\n".join(f"[{p.n}] {' '.join(p.chunk.text.split())[:400]}" for p in found) or "(nothing found)"
        rec.cites = tuple(p.n for p in found)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:,.6f}".rstrip("0").rstrip(".") if not v.is_integer() else f"{int(v):,}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _substitute(text: str, results: dict[int, Record]) -> str:
    def value(m: re.Match) -> str:
        n = int(m.group(1))
        rec = results.get(n)
        if rec is None:
            raise ToolError(f"planner: {{{n}}} refers to step {n}, which has not run")
        if rec.value is None:
            raise ToolError(f"planner: step {n} gave no single value to use as {{{n}}} (it returned: "
                            f"{rec.output[:120]})")
        return str(rec.value)

    return re.sub(r"\{(\d+)\}", value, text)
