"""`diagnose --apply`: the debugger's fix carried out on a copy and proven (issue 38).

The verdict layer's fixes (debugger/base.py ``Fix``) are tried in order until one makes the answer right:

- a settings overlay and request changes re-run the recorded question from retrieve, on the knowledge base as it
  is (nothing stored changes);
- a fix that changes stored data runs on a snapshot (store/snapshot.py): documents re-parsed with other parse
  settings, tags changed, the graph rebuilt — or, for settings that define the knowledge base (chunk sizes), a
  knowledge base rebuilt from the same source files with each document's tags.

Each re-run is a trace: in the knowledge base's own store, in the diagnosed question's debug round, its parent the
diagnosed trace (a snapshot's traces are copied back). A fix that works is then checked for side effects: other
questions — the knowledge base's recent ones, or an evaluation set's with their expected answers — are asked both
ways; the verdict is ``fixed``, ``fixed_with_side_effects`` (some got worse), ``not_fixed`` or ``no_fix`` (the layer's
suggestion cannot be carried out automatically). ``keep`` promotes the winning fix: settings written to the
knowledge base's settings file, or the changed copy put in the original's place (the original kept beside it).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragclinic import wiring
from ragclinic.config import Settings
from ragclinic.config.settings import write_settings_file
from ragclinic.debugger.base import Expectation, Fix
from ragclinic.store.snapshot import snapshot
from ragclinic.trace.model import Trace
from ragclinic.trace.store import list_traces, load_trace, save_trace
from ragclinic.types import Scope

OTHERS = 20  # recent questions re-asked for side effects


@dataclass(frozen=True)
class Attempt:
    fix: Fix
    answer: str
    right: bool | None
    trace_id: str
    seconds: float
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"fix": self.fix.to_json(), "answer": self.answer, "right": self.right, "trace_id": self.trace_id,
                "seconds": round(self.seconds, 2), **({"error": self.error} if self.error else {})}


@dataclass(frozen=True)
class Applied:
    verdict: str  # "fixed" | "fixed_with_side_effects" | "not_fixed" | "no_fix"
    attempts: tuple[Attempt, ...] = ()
    side_effects: dict[str, Any] = field(default_factory=dict)
    kept: str = ""  # what --keep did ("" when not asked or nothing to keep)
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "attempts": [a.to_json() for a in self.attempts],
                "side_effects": self.side_effects, "kept": self.kept, "why": self.why}


def apply(pipeline, trace: Trace, fixes: Sequence[Fix], expect: Expectation, *, others: int = OTHERS,
          eval_set: Sequence[tuple[str, Expectation]] = (), keep: bool = False) -> Applied:
    """Try ``fixes`` for ``trace``'s question until one answers it right (``expect``); then its side effects."""
    if not fixes:
        return Applied("no_fix", why="the verdict layer's suggestion cannot be carried out automatically")
    attempts: list[Attempt] = []
    for i, fix in enumerate(fixes):
        t0 = time.perf_counter()  # the copy's making counts: it is part of what the fix costs
        variant = _Variant(pipeline, fix, f"{trace.id}-{i}")
        try:
            variant.open()
            state, run = variant.rerun(trace)
        except Exception as e:  # noqa: BLE001 - a fix that cannot run says why; the next is tried
            variant.close()
            attempts.append(Attempt(fix, "", False, "", time.perf_counter() - t0, f"{type(e).__name__}: {e}"))
            continue
        try:
            answer = state.answer.to_json()
            right = expect.satisfied_by(answer)
            if right is None and expect.gold_doc:  # only the gold document is known: did the answer cite it?
                right = any(expect.gold_doc in (c.get("doc_id"), c.get("path")) for c in answer.get("citations", []))
            attempts.append(Attempt(fix, answer.get("answer", ""), right, run.id, time.perf_counter() - t0))
            if not right:
                continue
            effects = variant.side_effects(trace, others, eval_set)
            verdict = "fixed_with_side_effects" if effects["worse"] else "fixed"
            return Applied(verdict, tuple(attempts), effects, variant.keep() if keep else "")
        finally:
            variant.close()
    return Applied("not_fixed", tuple(attempts), why="no fix made the answer right")


class _Variant:
    """The knowledge base with one fix: the original under a settings overlay, or a changed copy beside it."""

    def __init__(self, pipeline, fix: Fix, tag: str) -> None:
        self.base, self.fix = pipeline, fix
        self.kb = pipeline.kb
        self.copy: Path | None = None
        self.parts: wiring.Parts | None = None
        self.tag = tag

    def open(self) -> None:
        if self.fix.needs_copy:
            self.copy = self.kb.folder.parent / f".{self.kb.folder.name}.fix-{self.tag}"
            shutil.rmtree(self.copy, ignore_errors=True)
            self.parts = self._changed_copy()
            self.pipe = wiring.pipeline(self.parts.kb, self.base.lm, settings=self.parts.kb.settings)
        else:
            settings = self.base.settings.model_copy(update=self.fix.settings)  # the diagnosed run's, changed
            self.pipe = wiring.pipeline(self.kb, self.base.lm, settings=settings)

    def close(self) -> None:
        if self.parts is not None:
            self.parts.close()
            self.parts = None
        if self.copy is not None and self.copy.exists():
            shutil.rmtree(self.copy, ignore_errors=True)

    # ------------------------------------------------------------------ the copy
    def _changed_copy(self) -> wiring.Parts:
        fix, src = self.fix, self.kb
        if fix.kb_settings:  # settings that define the knowledge base: rebuilt from the sources, tags kept
            settings = Settings.load(self.copy, **{**_query_settings(self.base.settings), **fix.settings,
                                                   **fix.kb_settings})
            parts = wiring.Parts(settings, model=self.base.lm)
            for tags, paths in _paths_by_tags(src.db).items():
                parts.ingest([Path(p) for p in paths], tags=dict(tags))
            return parts
        snapshot(src.folder, self.copy)
        if fix.settings:
            write_settings_file(self.copy / "settings.toml", fix.settings)
        parts = wiring.Parts(Settings.load(self.copy, **{**_query_settings(self.base.settings), **fix.settings}),
                             model=self.base.lm)
        kb = parts.kb_for_writing()
        if fix.retag:
            with kb.db.transaction():
                for doc_id, tags in fix.retag.items():
                    path = kb.db.conn.execute("SELECT path FROM documents WHERE doc_id = ?", [doc_id]).fetchone()
                    if path:
                        kb.db.retag_path(path[0], tags)
        if fix.reparse:
            by_tags = _paths_by_tags(kb.db)
            for tags, paths in by_tags.items():
                if mine := [p for p in paths if p in fix.reparse]:
                    parts.ingest([Path(p) for p in mine], tags=dict(tags), reparse=True)
        if fix.graph:
            kb.lock()
            try:
                parts.sync_graph(fix.graph)
            finally:
                kb.unlock()
        return parts

    # ------------------------------------------------------------------ asking
    def rerun(self, trace: Trace):
        """The recorded question again, with the fix's request changes, as the diagnosed question's child."""
        change = _request_change(self.fix.request)
        state, run = self.pipe.rerun(trace, "retrieve", change=change, admin=True)
        if self.copy is not None:  # the copy goes away: its trace is kept in the original's store
            run = replace(run, debug_round_id=trace.debug_round_id or trace.id, parent_id=trace.id,
                          rerun_from="retrieve")
            save_trace(self.kb.db, run)
        return state, run

    def side_effects(self, trace: Trace, others: int, eval_set) -> dict[str, Any]:
        """Other questions asked the original way and with the fix: how many changed, for the better or worse."""
        if self.fix.request.get("scope") is not None and not self.fix.needs_copy and not self.fix.settings:
            return {"asked": 0, "changed": 0, "better": 0, "worse": 0, "rows": [],
                    "why": "the fix changes only how this question is asked"}
        rows = []
        if eval_set:
            for question, expect in eval_set:
                before, _ = self.base.ask(question, save=False)
                after, _ = self.pipe.ask(question, save=False)
                rows.append(_compare(question, before.answer.to_json(), after.answer.to_json(), expect))
        else:
            for meta in list_traces(self.kb.db, limit=others + 1):
                if meta["id"] == trace.id or len(rows) >= others:
                    continue
                old = load_trace(self.kb.db, meta["id"])
                new, _ = self.pipe.rerun(old, "retrieve", change=_request_change(
                    {k: v for k, v in self.fix.request.items() if k != "scope"}), admin=True, save=False)
                rows.append(_compare(old.query, old.final, new.answer.to_json(), None))
        return {"asked": len(rows), "changed": sum(r["change"] != "same" for r in rows),
                "better": sum(r["change"] == "better" for r in rows), "worse": sum(r["change"] == "worse" for r in rows),
                "source": "eval set" if eval_set else "recent questions", "rows": rows}

    def keep(self) -> str:
        """Promote the fix: a copy takes the original's place (the original moved aside, kept); an overlay's
        settings are written to the knowledge base's settings file."""
        if self.copy is not None:
            aside = self.kb.folder.parent / f"{self.kb.folder.name}.before-fix-{time.strftime('%Y%m%d-%H%M%S')}"
            self.parts.close()
            self.parts = None
            self.kb.close()
            self.kb.folder.rename(aside)
            self.copy.rename(self.kb.folder)
            self.copy = None
            return f"the changed copy replaced {self.kb.folder}; the original is kept at {aside}"
        lasting = {k: v for k, v in self.fix.settings.items()}
        if not lasting:
            return "nothing to keep: the fix changes only how this question is asked"
        write_settings_file(self.kb.folder / "settings.toml", lasting)
        return f"written to {self.kb.folder / 'settings.toml'}: " + ", ".join(f"{k} = {v!r}" for k, v in lasting.items())


def _request_change(changes: dict[str, Any]):
    if not changes:
        return None
    fields = {k: v for k, v in changes.items() if k != "scope"}
    if "scope" in changes:
        pairs = dict(changes["scope"])
        fields.update(scope_pairs=tuple(sorted(pairs.items())))

    def change(state):
        req = replace(state.request, **fields)
        if "scope" in changes:
            req = replace(req, scope=Scope.parse(dict(changes["scope"])).require(req.enforced))
        return replace(state, request=req)

    return change


def _compare(question: str, before: dict, after: dict, expect: Expectation | None) -> dict[str, Any]:
    """How a question's answer changed: same, better, worse or changed (no way to tell which is right)."""
    same = before.get("answer") == after.get("answer") and bool(before.get("refused")) == bool(after.get("refused"))
    if same:
        change = "same"
    elif expect is not None and (r0 := expect.satisfied_by(before)) is not None:
        r1 = expect.satisfied_by(after)
        change = "better" if r1 and not r0 else "worse" if r0 and not r1 else "changed"
    elif before.get("refused") and not after.get("refused") and _supported(after):
        change = "better"
    elif not before.get("refused") and (after.get("refused") or _supported(after) < _supported(before)):
        change = "worse"
    else:
        change = "changed"
    return {"question": question[:200], "change": change, "before": before.get("answer", "")[:200],
            "after": after.get("answer", "")[:200]}


def _supported(answer: dict) -> int:
    return sum(c.get("verdict") == "supported" for c in answer.get("claims", []))


def _paths_by_tags(db) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for path, tags in db.conn.execute("SELECT path, MIN(tags) FROM documents GROUP BY path ORDER BY path"):
        out.setdefault(tuple(sorted(json.loads(tags or "{}").items())), []).append(path)
    return out


def _query_settings(s: Settings) -> dict[str, Any]:
    """The settings the diagnosed runs used (whatever set them: file, environment, caller), for a copy; not the
    folder."""
    return {k: getattr(s, k) for k in type(s).model_fields if k != "kb"}
