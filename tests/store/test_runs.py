"""The ``runs`` table: one row per ingest; a run whose process died is never left "running" (issue 32)."""

from __future__ import annotations

import json

from ragclinic.ingest.runner import ingest
from ragclinic.store.kb import KnowledgeBase


def _runs(kb) -> dict[int, tuple[str, dict]]:
    rows = kb.db.conn.execute("SELECT run_id, status, summary FROM runs ORDER BY run_id")
    return {rid: (status, json.loads(summary or "{}")) for rid, status, summary in rows}


def test_a_run_left_running_by_a_killed_process_is_marked_interrupted_by_the_next_ingest(make_settings, tmp_path):
    kb = KnowledgeBase.open(make_settings(), create=True)
    stale = kb.db.start_run()  # what a kill -9 between start_run and finish_run leaves behind
    kb.close()
    doc = tmp_path / "a.txt"
    doc.write_text("Bonds pay coupons. Rates move prices.\n")
    kb = KnowledgeBase.open(make_settings())
    kb.lock()  # the writer lock: no other process can be running an ingest now
    try:
        ingest(kb, [doc])
        runs = _runs(kb)
    finally:
        kb.close()
    assert runs[stale][0] == "interrupted"
    assert [status for status, _ in runs.values()] == ["interrupted", "ok"]
    assert runs[stale][1]["interrupted"].startswith("the process ended before the run finished")


def test_a_run_records_the_process_that_ran_it(make_settings, tmp_path):
    import os

    kb = KnowledgeBase.open(make_settings(), create=True)
    kb.lock()
    try:
        run = kb.db.start_run()
        assert _runs(kb)[run] == ("running", {"pid": os.getpid()})
        kb.db.finish_run(run, "ok", {"added": 0})
        assert _runs(kb)[run] == ("ok", {"added": 0, "pid": os.getpid()})
    finally:
        kb.close()
