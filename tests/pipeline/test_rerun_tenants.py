"""Re-runs and tenants (issue 32): a re-run may only hold chunks the trace's enforced tags admit. For a tenant it is
refused otherwise; for the admin (the debugger's probes, the library) it becomes the admin's run — a new debug round
with no enforced tags, so no tenant's key can read it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import build_kb

from ragclinic import Clinic
from ragclinic.debugger import Debugger, Expectation
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.owner import OutsideScope, enforced_of, trace_outside
from ragclinic.trace.store import list_traces, load_trace
from ragclinic.types import Passage

DOCS = {"acme.md": "# Refunds\n\nThe acme refund window is 45 days.\n",
        "globex.md": "# Refunds\n\nThe globex refund window is 7 days.\n",
        "acme-fees.md": "# Fees\n\nThe acme account fee is 3 dollars a month.\n"}
META = {"acme.md": {"tenant": "acme"}, "globex.md": {"tenant": "globex"}, "acme-fees.md": {"tenant": "acme"}}
ACME = {"tenant": "acme"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = build_kb(tmp_path_factory.mktemp("rerun_tenants"), DOCS, META)
    yield base
    base.close()


def _chunk_of(kb, name: str):
    row = kb.db.conn.execute("SELECT c.rowid FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                             "WHERE d.path LIKE ?", [f"%{name}"]).fetchone()
    chunk = kb.db.chunks_by_rowid([row[0]])[row[0]]
    return chunk, kb.db.doc_infos([chunk.doc_id])[chunk.doc_id]


def _rowid(kb, chunk_id: str) -> int:
    return kb.db.conn.execute("SELECT rowid FROM chunks WHERE chunk_id = ?", [chunk_id]).fetchone()[0]


def _adding(kb, name: str):
    from ragclinic.types import Hit

    chunk, doc = _chunk_of(kb, name)

    def change(state):
        return replace(state, passages=(Passage(1, Hit(chunk, 1.0, (), _rowid(kb, chunk.id)), doc, support=1.0),) + tuple(
            replace(p, n=p.n + 1) for p in state.passages))

    return change


def test_a_tenants_rerun_that_would_add_another_tenants_chunk_is_refused(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("What is the refund window?", enforced=ACME)
    with pytest.raises(OutsideScope, match="tenant=acme"):
        pipe.rerun(trace, "gate", change=_adding(kb, "globex.md"))
    assert not [r for r in list_traces(kb.db, 50, trace.debug_round_id) if r["id"] != trace.id]  # nothing saved


def test_a_tenants_rerun_may_not_drop_its_enforced_tags(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("What is the refund window?", enforced=ACME)
    with pytest.raises(OutsideScope, match="enforced"):
        pipe.rerun(trace, "gate", change=lambda s: replace(s, request=replace(s.request, enforced=())))


def test_the_admins_rerun_with_another_tenants_chunk_is_the_admins(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("What is the refund window?", enforced=ACME)
    state, child = pipe.rerun(trace, "gate", change=_adding(kb, "globex.md"), admin=True)
    assert any("7 days" in p.chunk.text for p in state.passages)
    assert enforced_of(child) == {} and child.debug_round_id not in ("", trace.debug_round_id)
    assert child.parent_id == trace.id and "request.enforced" in child.span("change").inputs["changed"]
    assert child.id not in {r["id"] for r in list_traces(kb.db, 50, trace.debug_round_id, enforced=ACME)}
    assert Clinic.around(kb, model=None).replay(child.id).text == child.answer.text  # it replays to its answer


def test_a_rerun_inside_the_tenant_stays_in_its_round(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("What is the refund window?", enforced=ACME)
    for admin in (False, True):
        _, child = pipe.rerun(trace, "gate", change=_adding(kb, "acme-fees.md"), admin=admin)
        assert enforced_of(child) == ACME and child.debug_round_id == trace.debug_round_id
        assert not trace_outside(kb.db, child)
    _, again = pipe.rerun(trace, "retrieve")  # from the search: the enforced scope is kept
    assert enforced_of(again) == ACME and all(h.chunk.doc_id != _chunk_of(kb, "globex.md")[0].doc_id
                                              for h in again.state_after("retrieve").hits)


def test_clinic_rerun_and_replay_for_a_tenant_refuse_a_trace_holding_foreign_chunks(kb):
    clinic = Clinic.around(kb, model=None)
    _, trace = clinic.pipeline.ask("What is the refund window?", enforced=ACME)
    _, child = clinic.pipeline.rerun(trace, "gate", change=_adding(kb, "globex.md"), admin=True)
    leaked = replace(child, id=child.id[:-1] + ("0" if child.id[-1] != "0" else "1"),
                     request={**child.request, "enforced": [["tenant", "acme"]]})  # as the old code wrote it
    from ragclinic.trace.store import save_trace

    save_trace(kb.db, leaked)
    assert trace_outside(kb.db, load_trace(kb.db, leaked.id)) == [_chunk_of(kb, "globex.md")[0].doc_id]
    with pytest.raises(OutsideScope):
        clinic.rerun(leaked.id, "generate", enforced=ACME)
    with pytest.raises(OutsideScope):
        clinic.replay(leaked.id, enforced=ACME)
    with pytest.raises(OutsideScope):
        clinic.rerun(child.id, "generate", enforced=ACME)  # the admin's trace is not the tenant's
    assert clinic.rerun(trace.id, "gate", enforced=ACME).text  # its own: fine
    assert clinic.replay(trace.id, enforced=ACME).text == trace.answer.text


def test_the_debuggers_probe_with_another_tenants_gold_chunk_is_the_admins(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("What is the globex refund window?", enforced=ACME)
    d = Debugger(pipe).diagnose(Expectation(answers=(("7 days",),)), trace_id=trace.id)
    made = {d.layers[n].evidence.get("counterfactual_trace") for n in ("gate", "generate")} - {None}
    assert made, d.to_json()
    for ct in made:
        t = load_trace(kb.db, ct)
        assert enforced_of(t) == {} and t.debug_round_id != trace.debug_round_id
    acme_round = {r["id"] for r in list_traces(kb.db, 50, trace.debug_round_id, enforced=ACME)}
    assert not made & acme_round


def test_the_debuggers_probe_with_the_tenants_own_gold_chunk_stays_in_its_round(kb):
    pipe = Pipeline(kb)
    _, trace = pipe.ask("How much is the account fee?", scope_pairs={"doc": "nothing"}, enforced=ACME)
    d = Debugger(pipe).diagnose(Expectation(answers=(("3 dollars",),)), trace_id=trace.id)
    made = {d.layers[n].evidence.get("counterfactual_trace") for n in ("gate", "generate")} - {None}
    assert made, d.to_json()
    for ct in made:
        t = load_trace(kb.db, ct)
        assert enforced_of(t) == ACME and t.debug_round_id == trace.debug_round_id


@pytest.mark.parametrize("q", ["What is the refund window?", "What is the globex refund window?",
                               "How much is the account fee and the refund window of globex?"])
def test_the_doctors_re_runs_for_a_tenant_hold_only_the_tenants_chunks(kb, q):
    clinic = Clinic.around(kb, model=None)
    res = clinic.consult(q, doctor=True, cache=False, enforced=ACME)
    rows = list_traces(kb.db, 200, res.trace.debug_round_id)
    assert rows
    for r in rows:
        t = load_trace(kb.db, r["id"])
        assert enforced_of(t) == ACME and not trace_outside(kb.db, t)
