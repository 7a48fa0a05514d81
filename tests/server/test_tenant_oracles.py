"""What a tenant's key may still learn about other tenants (issue 32), closed here:

- a trace refused for being outside the tenant (``OutsideScope``) answers the 404 of a missing trace on every route,
  and an older trace that holds another tenant's chunk is hidden on /compare, /passage?trace= and feedback too;
- the doctor's term check and key terms count words only in the documents the tenant's key may read: what the
  tenant gets back reads the same whether or not another tenant's document uses the word (a differential test).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient

from ragclinic.errors import OutsideScope
from ragclinic.server import errors as server_errors
from ragclinic.server.ui_parts import no_trace

from .conftest import ACME, ADMIN, GLOBEX, auth
from .test_tenant_debugger import _legacy_leak


def _missing_like(tid: str) -> str:
    return tid[:-4] + ("0000" if not tid.endswith("0000") else "1111")


def _same_404(a, b, ids: tuple[str, str]) -> None:
    assert a.status_code == b.status_code == 404, (a.status_code, a.text, b.status_code, b.text)
    assert a.content.replace(ids[0].encode(), b"ID") == b.content.replace(ids[1].encode(), b"ID"), (a.text, b.text)


# ---------------------------------------------------------------------- OutsideScope is a missing trace
def test_outside_scope_answers_the_404_of_a_missing_trace_wherever_it_is_raised():
    app = FastAPI()
    server_errors.install(app)

    @app.get("/outside/{tid}")
    def outside(tid: str):
        raise OutsideScope(f"trace {tid} holds chunks from outside tenant=acme", trace_id=tid)

    @app.get("/missing/{tid}")
    def missing(tid: str):
        raise no_trace(tid)

    with TestClient(app) as client:
        a, b = client.get("/outside/20260101-abcdef0123"), client.get("/missing/20260101-abcdef0123")
    assert (a.status_code, a.content) == (b.status_code, b.content) == (404, b.content)
    assert "acme" not in a.text and "outside" not in a.text


def test_outside_scope_keeps_its_old_import_path():
    from ragclinic.errors import RagclinicError
    from ragclinic.trace.owner import OutsideScope as Old

    assert Old is OutsideScope and issubclass(OutsideScope, RagclinicError)


def test_an_older_leaked_trace_is_missing_on_compare_passage_and_feedback(served):
    """A trace written before the rule (a re-run in acme's round holding globex's chunk): every route that takes a
    trace id answers as for an id nothing has — not only the trace page and the trace JSON."""
    tid = served.post("/v1/ask", json={"question": "What is the globex refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    leaked = _legacy_leak(served, tid)
    nobody = _missing_like(leaked)
    chunk = served.get(f"/v1/traces/{leaked}", headers=auth(ADMIN)).json()["spans"]
    routes = [("GET", "/compare?a={}", {}), ("GET", "/compare?a=" + tid + "&b={}", {}),
              ("POST", "/v1/feedback", {"json": {"trace_id": "{}", "rating": 1}}),
              ("POST", "/ui/feedback", {"data": {"trace_id": "{}", "rating": "1"}}),
              ("GET", "/v1/traces/{}", {}), ("POST", "/v1/traces/{}/replay", {})]
    for method, url, extra in routes:
        got = []
        for t in (leaked, nobody):
            kw = {k: {f: (v.format(t) if isinstance(v, str) else v) for f, v in body.items()}
                  for k, body in extra.items()}
            got.append(served.request(method, url.format(t), headers=auth(ACME), **kw))
        _same_404(*got, ids=(leaked, nobody))
        assert "7 days" not in got[0].text
    assert chunk  # the admin still reads it
    with served.app.state.rc.pool.searcher() as clinic:
        feedback = clinic.trace(leaked).feedback
    assert not feedback  # acme's key could not rate it either


def test_a_passage_page_does_not_read_a_leaked_trace(served):
    """/passage/{chunk}?trace= falls back to the trace's copy of a chunk that is gone: not from a leaked trace."""
    tid = served.post("/v1/ask", json={"question": "What is the globex refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    leaked = _legacy_leak(served, tid)
    _rewrite_chunk_id(served, leaked, "deadbeefdeadbeef")  # the chunk is gone from the knowledge base
    a = served.get(f"/passage/deadbeefdeadbeef?trace={leaked}", headers=auth(ACME))
    b = served.get(f"/passage/deadbeefdeadbeef?trace={_missing_like(leaked)}", headers=auth(ACME))
    assert a.status_code == b.status_code == 404 and a.content == b.content and "7 days" not in a.text
    assert served.get(f"/passage/deadbeefdeadbeef?trace={leaked}", headers=auth(ADMIN)).status_code == 200


def _rewrite_chunk_id(served, trace_id: str, chunk_id: str) -> None:
    """The leaked trace's globex passage under a chunk id the knowledge base no longer has (re-ingested since)."""
    import json

    from ragclinic.trace.model import Trace
    from ragclinic.trace.store import load_trace, save_trace

    with served.app.state.rc.pool.writing() as clinic:
        d = load_trace(clinic.kb.db, trace_id).to_dict()
        scope = next(s for s in d["spans"] if s["layer"] == "scope")
        gate = next(s for s in d["spans"] if s["layer"] == "gate")
        scope["outputs"]["passages"] = json.loads(json.dumps(gate["outputs"]["passages"]))
        for s in (scope, gate):
            for p in s["outputs"]["passages"]:
                p["hit"]["chunk"]["id"] = chunk_id
        save_trace(clinic.kb.db, Trace.from_dict(d))


def test_globex_still_reads_its_own_traces(served):
    tid = served.post("/v1/ask", json={"question": "What is the refund window?", "doctor": False},
                      headers=auth(GLOBEX)).json()["trace_id"]
    for r in (served.get(f"/v1/traces/{tid}", headers=auth(GLOBEX)), served.get(f"/compare?a={tid}",
                                                                               headers=auth(GLOBEX)),
              served.post(f"/v1/traces/{tid}/replay", headers=auth(GLOBEX))):
        assert r.status_code == 200, r.text
