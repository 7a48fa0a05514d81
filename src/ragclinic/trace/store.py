"""Traces live in the knowledge base's SQLite (table ``traces``), one JSON document per trace."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ragclinic.errors import StoreError
from ragclinic.store.db import Database
from ragclinic.trace.model import Trace


def save_trace(db: Database, trace: Trace) -> None:
    """Insert or replace the trace; ratings stored since it was loaded (``add_feedback`` while the doctor worked on
    it in the background) and its experiment arm (``set_experiment``) are kept."""
    with db.transaction():
        row = db.conn.execute("SELECT data FROM traces WHERE id = ?", [trace.id]).fetchone()
        before = json.loads(row[0]) if row else {}  # Python's reader: a stored NaN is fine
        stored = before.get("feedback", [])
        if any(f not in trace.feedback for f in stored):
            trace = replace(trace, feedback=trace.feedback + tuple(f for f in stored if f not in trace.feedback))
        if before.get("experiment") and not trace.experiment:  # set_experiment's, also kept
            trace = replace(trace, experiment=before["experiment"])
        db.conn.execute(
            "INSERT OR REPLACE INTO traces (id, debug_round_id, parent_id, created, query, route, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [trace.id, trace.debug_round_id, trace.parent_id, trace.created, trace.query,
             trace.final.get("route", ""), json.dumps(trace.to_dict(), ensure_ascii=False)])


def load_trace(db: Database, ref: str, *, exact: bool = False, enforced: dict[str, str] | None = None) -> Trace:
    """By id or unique id prefix (``exact``: by id only — what a tenant's key gets, so that prefixes tell it
    nothing about other tenants' traces); the error lists near matches. ``enforced`` (a tenant's tags; implies
    ``exact``): only a trace whose request enforced exactly these, chosen inside the query, so that another
    tenant's trace is never decoded and its 404 takes the time a missing one does."""
    if enforced is not None:
        rows = db.conn.execute("SELECT id, data FROM traces WHERE id = ? AND json_extract(data, "
                               "'$.request.enforced') = json(?)", [ref, _enforced_json(enforced)]).fetchall()
    elif exact:
        rows = db.conn.execute("SELECT id, data FROM traces WHERE id = ?", [ref]).fetchall()
    else:
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = db.conn.execute("SELECT id, data FROM traces WHERE id = ? OR id LIKE ? ESCAPE '\\' "
                               "ORDER BY created DESC LIMIT 6", [ref, pattern]).fetchall()
    same = [r for r in rows if r[0] == ref]
    if same:
        rows = same
    if not rows:
        raise StoreError(f"no trace {ref!r} in this knowledge base; `ragclinic trace list` shows the recent ones")
    if len(rows) > 1:
        raise StoreError(f"trace prefix {ref!r} is ambiguous: {', '.join(r[0] for r in rows[:5])}; give more of it")
    return Trace.from_dict(json.loads(rows[0][1]))


def _enforced_json(enforced: dict[str, str]) -> str:
    """The ``request.enforced`` of a trace asked with these tags, as its JSON holds them."""
    return json.dumps(sorted([k, v] for k, v in enforced.items()))


def list_traces(db: Database, limit: int = 20, round_id: str | None = None, *, reruns: bool = False,
                enforced: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Newest first. Re-runs (the doctor's and debugger's) only with ``reruns`` or within one round.
    ``enforced``: only traces whose request enforced exactly these tags (a tenant's key sees its own)."""
    sql = "SELECT id, debug_round_id, parent_id, created, query, route FROM traces"
    where: list[str] = []
    args: list[Any] = []
    if round_id:
        where.append("debug_round_id = ?")
        args.append(round_id)
    elif not reruns:
        where.append("parent_id = ''")
    if enforced is not None:
        where.append("json_extract(data, '$.request.enforced') = json(?)")
        args.append(_enforced_json(enforced))
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created DESC LIMIT ?"
    args.append(limit)
    cols = ("id", "debug_round_id", "parent_id", "created", "query", "route")
    return [dict(zip(cols, r)) for r in db.conn.execute(sql, args)]


def add_feedback(db: Database, trace_id: str, entry: dict[str, Any]) -> int:
    """Append a rating to a trace's record (in place: nothing else of the trace is rewritten, so a doctor saving
    it meanwhile loses nothing, nor does this); how many it now has."""
    d = _update(db, load_trace(db, trace_id).id, lambda d: d.update(feedback=[*d.get("feedback", []), entry]))
    return len(d["feedback"])


def set_experiment(db: Database, trace_id: str, experiment: dict[str, Any]) -> None:
    """Record on the trace the experiment arm it was answered in (in place, as ``add_feedback``)."""
    _update(db, trace_id, lambda d: d.update(experiment=experiment))


def round_tokens(db: Database, debug_round_id: str) -> int:
    """Model tokens (prompt and completion) of every trace of a round: a question's run and the doctor's re-runs."""
    (n,) = db.conn.execute(
        "SELECT COALESCE(SUM(json_extract(c.value, '$.prompt_tokens') + json_extract(c.value, '$.completion_tokens'))"
        ", 0) FROM traces t, json_each(t.data, '$.model_calls') c WHERE t.debug_round_id = ?",
        [debug_round_id]).fetchone()
    return int(n)


def _update(db: Database, trace_id: str, change) -> dict[str, Any]:
    with db.transaction():  # read and written in one transaction: a save in between cannot interleave
        (data,) = db.conn.execute("SELECT data FROM traces WHERE id = ?", [trace_id]).fetchone()
        d = json.loads(data)
        change(d)
        db.conn.execute("UPDATE traces SET data = ? WHERE id = ?", [json.dumps(d, ensure_ascii=False), trace_id])
    return d
