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

A copy is a hidden folder beside the knowledge base, ``.KB.fix-PID-TAG``: the pid of the process that makes it is in
its name, so a copy whose maker was killed (``kill -9``, a power cut: its ``finally`` never ran) is removed by the
next apply (``clean_stale_copies``), and a live one's — a concurrent apply — is left alone, as stale upload folders
are (server/uploads.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from ragclinic import wiring
from ragclinic.config import Settings
from ragclinic.config.settings import KB_DEFINING, read_settings_file, write_settings_file
from ragclinic.debugger.base import Expectation, Fix
from ragclinic.errors import RagclinicError
from ragclinic.learn.canary import canary_set
from ragclinic.store.snapshot import carry, snapshot, swap
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
          eval_set: Sequence[tuple[str, Expectation]] = (), keep: bool = False, rebuild: bool = True) -> Applied:
    """Try ``fixes`` for ``trace``'s question until one answers it right (``expect``); then its side effects;
    ``keep``: promote it when nothing got worse. ``rebuild``: fixes that rebuild the knowledge base may run (the
    server does not: a rebuild re-embeds everything)."""
    clean_stale_copies(pipeline.kb.folder)
    if not fixes:
        return Applied("no_fix", why="the verdict layer's suggestion cannot be carried out automatically")
    attempts: list[Attempt] = []
    for i, fix in enumerate(fixes):
        t0 = time.perf_counter()  # the copy's making counts: it is part of what the fix costs
        variant = _Variant(pipeline, fix, f"{trace.id}-{i}", rebuild)
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
            kept = ""
            if keep and verdict == "fixed":
                kept = variant.keep()
            elif keep:
                kept = (f"not kept: {effects['worse']} other question(s) got worse with it (see side_effects); "
                        "change it by hand if you still want it")
            return Applied(verdict, tuple(attempts), effects, kept)
        finally:
            variant.close()
    return Applied("not_fixed", tuple(attempts), why="no fix made the answer right")


class _Variant:
    """The knowledge base with one fix: the original under a settings overlay, or a changed copy beside it."""

    def __init__(self, pipeline, fix: Fix, tag: str, rebuild: bool = True) -> None:
        self.base, self.fix, self.rebuild = pipeline, fix, rebuild
        self.kb = pipeline.kb
        self.copy: Path | None = None
        self.parts: wiring.Parts | None = None
        self.tag = f"{tag}-{uuid.uuid4().hex[:8]}"  # two applies of one trace never share a copy
        self.version = self.kb.db.version

    def open(self) -> None:
        settings = _validated(self.base.settings, self.fix.settings)  # the run's settings, changed and checked
        if not self.fix.needs_copy:
            self.pipe = wiring.pipeline(self.kb, self.base.lm, settings=settings)
            return
        if self.fix.kb_settings and not self.rebuild:
            raise RagclinicError("a rebuild of the knowledge base is for the command line: "
                                 "`ragclinic diagnose ... --apply`")
        self.copy = self.kb.folder.parent / f".{self.kb.folder.name}.fix-{os.getpid()}-{self.tag}"
        try:
            self.parts = self._changed_copy(settings)
        except BaseException:
            self.close()
            raise
        self.pipe = wiring.pipeline(self.parts.kb, self.base.lm, settings=self.parts.kb.settings)

    def close(self) -> None:
        if self.parts is not None:
            self.parts.close()
            self.parts = None
        if self.copy is not None and self.copy.exists():
            shutil.rmtree(self.copy, ignore_errors=True)

    # ------------------------------------------------------------------ the copy
    def _changed_copy(self, settings: Settings) -> wiring.Parts:
        fix, src = self.fix, self.kb
        if fix.kb_settings:  # settings that define the knowledge base: rebuilt from the sources, tags kept
            parts = wiring.Parts(Settings.load(self.copy, **{**_query_settings(settings), **fix.kb_settings}),
                                 model=self.base.lm)
            self.parts = parts
            for tags, paths in _paths_by_tags(src.db).items():
                done = parts.ingest([Path(p) for p in paths], tags=dict(tags))
                if done.failed:
                    raise RagclinicError(f"the rebuild could not read {len(done.failed)} file(s), e.g. "
                                         f"{done.failed[0]}: nothing was changed")
            have = parts.kb.db.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            want = src.db.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
            if have != want:
                raise RagclinicError(f"the rebuild holds {have} documents, the knowledge base {want}: nothing was "
                                     "changed")
            return parts
        snapshot(src.folder, self.copy)
        if fix.settings:
            write_settings_file(self.copy / "settings.toml", fix.settings)
        parts = self.parts = wiring.Parts(Settings.load(self.copy, **_query_settings(settings)), model=self.base.lm)
        kb = parts.kb_for_writing()
        if fix.retag:
            with kb.db.transaction():
                for doc_id, tags in fix.retag.items():
                    path = kb.db.conn.execute("SELECT path FROM documents WHERE doc_id = ?", [doc_id]).fetchone()
                    if path:
                        kb.db.retag_path(path[0], tags)
        if fix.reparse:
            for tags, paths in _paths_by_tags(kb.db).items():
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
            run = replace(run, parent_id=trace.id, rerun_from="retrieve")
            save_trace(self.kb.db, run)
        return state, run

    def side_effects(self, trace: Trace, others: int, eval_set) -> dict[str, Any]:
        """Other questions asked the original way and with the fix, now, side by side: how many changed, for the
        better or the worse (their expected answers where an evaluation set gives them)."""
        if self.fix.request.get("scope") is not None and not self.fix.needs_copy and not self.fix.settings:
            return {"asked": 0, "changed": 0, "better": 0, "worse": 0, "rows": [],
                    "why": "the fix changes only how this question is asked"}
        change = _request_change({k: v for k, v in self.fix.request.items() if k != "scope"})
        rows, source = [], "eval set"
        if not eval_set and (canaries := canary_set(self.kb.db.conn)):  # the KB's own set (learn/canary.py)
            eval_set = [(c.question, Expectation(gold_doc=c.doc_id)) for c in canaries[:others]]
            source = "the knowledge base's canary questions (kb learn)"
        if eval_set:
            asked = [(question, expect, None) for question, expect in eval_set]
        else:
            asked = [(meta["query"], None, meta["id"]) for meta in list_traces(self.kb.db, limit=others + 1)
                     if meta["id"] != trace.id][:others]
        for question, expect, trace_id in asked:
            try:
                old = load_trace(self.kb.db, trace_id) if trace_id else self.base.ask(question, save=False)[1]
                before, _ = self.base.rerun(old, "retrieve", admin=True, save=False)
                after, _ = self.pipe.rerun(old, "retrieve", change=change, admin=True, save=False)
                rows.append(_compare(question, before.answer.to_json(), after.answer.to_json(), expect))
            except Exception as e:  # noqa: BLE001 - one question that cannot run is reported, the rest go on
                rows.append({"question": question[:200], "change": "error", "error": f"{type(e).__name__}: {e}"})
        return {"asked": len(rows), "changed": sum(r["change"] not in ("same", "error") for r in rows),
                "better": sum(r["change"] == "better" for r in rows), "worse": sum(r["change"] == "worse" for r in rows),
                "to_refusal": sum(bool(r.get("to_refusal")) for r in rows),  # answered before, refused with the fix
                "source": source if eval_set else "recent questions", "rows": rows}

    def keep(self) -> str:
        """Promote the fix: a changed copy takes the original's place under its write lock — nothing else has
        changed it meanwhile, every trace and rating carried over, the original kept beside it — or an overlay's
        settings are written to the knowledge base's settings file."""
        if self.copy is None:
            if not self.fix.settings:
                return "nothing to keep: the fix changes only how this question is asked"
            write_settings_file(self.kb.folder / "settings.toml", self.fix.settings)
            return (f"written to {self.kb.folder / 'settings.toml'}: "
                    + ", ".join(f"{k} = {v!r}" for k, v in self.fix.settings.items()))
        kb, folder = self.kb, self.kb.folder
        aside = folder.parent / f"{folder.name}.before-fix-{time.strftime('%Y%m%d-%H%M%S')}-{self.tag[-8:]}"
        kb.lock()  # another writer (an ingest, a server's) makes this fail with its error: nothing is swapped
        try:
            if kb.db.version != self.version:
                raise RagclinicError(f"the knowledge base changed while the fix was tried (version {self.version} "
                                     f"→ {kb.db.version}): nothing was kept; apply it again")
            self.parts.close()
            self.parts = None
            if self.fix.kb_settings:  # a rebuild: the file's other settings too
                kept = {k: v for k, v in read_settings_file(folder / "settings.toml").items() if k not in KB_DEFINING}
                write_settings_file(self.copy / "settings.toml", kept)
            carry(folder, self.copy)  # every trace, the forecast, the uploads
            swap(folder, self.copy, aside)
            self.copy = None
        finally:
            kb.close()  # the lock goes with the original, now beside the new one
        return f"the changed copy replaced {folder}; the original is kept at {aside}"


def clean_stale_copies(folder: Path) -> list[Path]:
    """Remove the copies of the knowledge base at ``folder`` that killed applies left beside it
    (``.KB.fix-PID-TAG`` whose process is gone); a live process's copy stays. → the copies removed."""
    # a tag has no dot, so the copies of a knowledge base named "KB.fix-1" (".KB.fix-1.fix-…") never match
    name = re.compile(rf"\.{re.escape(folder.name)}\.fix-(\d+)-[\w-]+")
    removed = []
    for entry in folder.parent.glob(f".{glob_escape(folder.name)}.fix-*"):
        m = name.fullmatch(entry.name)
        if m is None or not entry.is_dir() or entry.is_symlink() or _alive(int(m.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _validated(base: Settings, update: dict[str, Any]) -> Settings:
    """The run's settings with ``update``, checked as any settings are (a value out of range is an error naming it,
    never written); the run's own values as they are when nothing changes."""
    if not update:
        return base
    return Settings.load(base.kb, **{**_query_settings(base), **update})


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
            "after": after.get("answer", "")[:200],
            "to_refusal": bool(after.get("refused")) and not before.get("refused")}


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
