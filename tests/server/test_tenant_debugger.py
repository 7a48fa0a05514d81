"""Tenant isolation through the debugger, re-runs and replays (issue 32). The admin may diagnose a tenant's trace
with an expected answer that only another tenant's document states: the probe's counterfactual re-run then holds
that tenant's chunk, so it is the admin's — no tenant's key reads it, replays it, sees it on its trace page or
re-runs into it."""

from __future__ import annotations

import json

import pytest

from .conftest import ACME, ADMIN, auth

GLOBEX_TEXT = "7 days"  # only globex's refund policy states it (the scripted model echoes it when it is given it)


@pytest.fixture(scope="module")
def diagnosed(served):
    """Acme's refused-or-wrong trace about globex's window, diagnosed by the admin with globex's answer."""
    tid = served.post("/v1/ask", json={"question": "What is the globex refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    d = served.post("/v1/diagnose", json={"trace_id": tid, "expected": [GLOBEX_TEXT]}, headers=auth(ADMIN))
    assert d.status_code == 200, d.text
    layers = d.json()["layers"]
    made = {layers[n]["evidence"].get("counterfactual_trace") for n in ("gate", "generate")} - {None}
    assert made, layers  # the probes did re-run the trace with globex's chunk
    return tid, sorted(made)


def test_the_probes_re_run_is_the_admins(served, diagnosed):
    tid, made = diagnosed
    mine = served.get(f"/v1/traces/{tid}", headers=auth(ADMIN)).json()
    for ct in made:
        t = served.get(f"/v1/traces/{ct}", headers=auth(ADMIN))
        assert t.status_code == 200 and GLOBEX_TEXT in t.text  # the admin sees what the probe did
        body = t.json()
        assert body["request"]["enforced"] == [] and body["debug_round_id"] != mine["debug_round_id"]
        assert "request.enforced" in next(s for s in body["spans"] if s["layer"] == "change")["inputs"]["changed"]


def test_a_tenant_cannot_read_replay_or_rerun_the_probes_re_run(served, diagnosed):
    _, made = diagnosed
    for ct in made:
        for r in (served.get(f"/v1/traces/{ct}", headers=auth(ACME)),
                  served.post(f"/v1/traces/{ct}/replay", headers=auth(ACME)),
                  served.get(f"/traces/{ct}", headers=auth(ACME)),
                  served.post("/ui/rerun", data={"trace_id": ct, "layer": "generate"}, headers=auth(ACME))):
            assert r.status_code == 404 and GLOBEX_TEXT not in r.text


def test_the_tenants_trace_page_does_not_list_the_probes_re_run(served, diagnosed):
    tid, made = diagnosed
    page = served.get(f"/traces/{tid}", headers=auth(ACME))
    assert page.status_code == 200
    assert not any(ct in page.text for ct in made) and "globex refund window is 7" not in page.text
    assert served.get(f"/traces/{made[0]}", headers=auth(ADMIN)).status_code == 200


def test_a_tenants_rerun_and_replay_stay_inside_the_tenant(served, diagnosed):
    tid, _ = diagnosed
    for layer in ("retrieve", "scope", "gate", "generate"):
        r = served.post("/ui/rerun", data={"trace_id": tid, "layer": layer}, headers=auth(ACME))
        assert r.status_code == 200, r.text
        child = r.text.split('href="/traces/')[1].split('"')[0]
        t = served.get(f"/v1/traces/{child}", headers=auth(ACME))
        assert t.status_code == 200 and GLOBEX_TEXT not in t.text and "globex/refunds" not in t.text
    again = served.post(f"/v1/traces/{tid}/replay", headers=auth(ACME))
    assert again.status_code == 200 and again.json()["equal"] is True and GLOBEX_TEXT not in again.text


def test_a_trace_that_holds_another_tenants_chunk_is_not_shown_to_the_tenant(served):
    """A trace made before the rule (the probe's re-run kept the tenant's enforced tags): hidden all the same."""
    tid = served.post("/v1/ask", json={"question": "What is the globex refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    leaked = _legacy_leak(served, tid)
    for r in (served.get(f"/v1/traces/{leaked}", headers=auth(ACME)),
              served.post(f"/v1/traces/{leaked}/replay", headers=auth(ACME)),
              served.get(f"/traces/{leaked}", headers=auth(ACME)),
              served.post("/ui/rerun", data={"trace_id": leaked, "layer": "generate"}, headers=auth(ACME))):
        assert (r.status_code, r.request.url.path) == (404, r.request.url.path) and GLOBEX_TEXT not in r.text
    page = served.get(f"/traces/{tid}", headers=auth(ACME))
    assert page.status_code == 200 and leaked not in page.text


def _legacy_leak(served, tid: str) -> str:
    """Write, as the old code did, a child of acme's trace ``tid`` in its round whose context holds globex's chunk."""
    from dataclasses import replace

    from ragclinic.trace.model import new_trace_id
    from ragclinic.trace.store import load_trace, save_trace

    pool = served.app.state.rc.pool
    with pool.writing() as clinic:
        db = clinic.kb.db
        parent = load_trace(db, tid)
        row = db.conn.execute("SELECT c.chunk_id, c.doc_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                              "WHERE d.tags LIKE '%globex%'").fetchone()
        d = parent.to_dict()
        gate = next(s for s in d["spans"] if s["layer"] == "gate")
        first = gate["outputs"]["passages"][0] if gate["outputs"].get("passages") else None
        hit = json.loads(json.dumps(first["hit"])) if first else None
        assert hit is not None, "acme's trace has a passage to copy"
        text = db.conn.execute("SELECT text FROM chunks WHERE chunk_id = ?", [row[0]]).fetchone()[0]
        hit["chunk"].update(id=row[0], doc_id=row[1], text=text)
        gate["outputs"]["passages"] = [{**first, "hit": hit, "doc": {**first["doc"], "doc_id": row[1]}}]
        from ragclinic.trace.model import Trace

        child = replace(Trace.from_dict(d), id=new_trace_id(), parent_id=tid, rerun_from="gate",
                        created=parent.created + 1)
        save_trace(db, child)
    return child.id


def test_the_ui_diagnose_forms_re_runs_are_the_admins_too(served):
    tid = served.post("/v1/ask", json={"question": "What is the globex refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    d = served.post("/ui/diagnose", data={"trace_id": tid, "expected": GLOBEX_TEXT}, headers=auth(ADMIN))
    assert d.status_code == 200 and "verdict" in d.text
    with served.app.state.rc.pool.searcher() as clinic:
        made = [r[0] for r in clinic.kb.db.conn.execute("SELECT id FROM traces WHERE parent_id = ?", [tid])]
    assert made  # the probes' re-runs of acme's trace
    for ct in made:
        assert served.get(f"/v1/traces/{ct}", headers=auth(ACME)).status_code == 404
        assert served.get(f"/v1/traces/{ct}", headers=auth(ADMIN)).status_code == 200
    page = served.get(f"/traces/{tid}", headers=auth(ACME)).text
    assert not any(ct in page for ct in made) and GLOBEX_TEXT not in page
