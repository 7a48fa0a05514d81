"""kill -9 during `ask`, `eval rag`, `serve` under load and `ingest --sync`, on one knowledge base (issue 19,
part 3; the harness is tests/soak.py, the 50-kill soak bench/kill_soak.py): after every kill the knowledge base
opens whole, nothing committed or acknowledged is lost, and no half-written trace is stored; then the resumed
eval and the re-run sync equal clean runs."""

from __future__ import annotations

import pytest

from soak import COMMANDS, Soak


@pytest.mark.slow
def test_kill_minus_9_during_every_command(tmp_path):
    s = Soak(tmp_path, seed=7)
    rounds = [s.round(c) for c in COMMANDS * 2]
    for r in rounds:
        assert not r.lost and not r.broken, (r.command, r.lost, r.broken)
    killed = {r.command for r in rounds if r.killed}
    assert len(killed) >= 3, f"the kills landed in {sorted(killed)} only: {[(r.command, r.after_s) for r in rounds]}"
    end = s.finish()
    assert end["kb_equal_clean"], end
    assert end["eval_equal_clean"] and end["eval_rows_complete"], end


def test_the_checks_see_a_lost_document_a_lost_trace_and_a_half_written_one(tmp_path):
    import json
    import sqlite3

    from soak import Round, check, kb_state

    s = Soak(tmp_path, seed=1, files=12)
    s.round("ask")  # one question, killed or not: some trace to lose
    before = kb_state(s.kb)
    db = sqlite3.connect(s.kb / "kb.sqlite3")
    doc = db.execute("SELECT doc_id, path FROM documents LIMIT 1").fetchone()
    db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc[0],))
    db.execute("DELETE FROM documents WHERE doc_id = ?", (doc[0],))
    db.execute("INSERT INTO traces VALUES ('t-half', 'r', '', 0, 'q', 'answer', ?)", (json.dumps({"spans": []}),))
    db.commit()
    db.close()
    r = Round("ask", True, 1.0, answers=["no-such-trace"])
    check(s.kb, before, r, deleted_ok=False)
    assert f"document {doc[1]}" in r.lost and "trace no-such-trace of an answer given" in r.lost
    assert any(b.startswith("trace t-half") for b in r.broken), r.broken
