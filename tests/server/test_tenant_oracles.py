"""What a tenant's key may still learn about other tenants (issue 32), closed here:

- a trace refused for being outside the tenant (``OutsideScope``) answers the 404 of a missing trace on every route,
  and an older trace that holds another tenant's chunk is hidden on /compare, /passage?trace= and feedback too;
- the doctor's term check and key terms count words only in the documents the tenant's key may read: what the
  tenant gets back reads the same whether or not another tenant's document uses the word (a differential test).
"""

from __future__ import annotations

import json

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


# ---------------------------------------------------------------------- the doctor's word counts: a differential
# Acme asks about "zorblax", a word only globex's document may hold. The two knowledge bases differ in globex's
# document alone: it holds "zorblax" and words of acme's passages (harbour, ledger, courier), or, as many words,
# others. Nothing acme's key gets back may differ (the lexical scores do not: no word of acme's question but
# "zorblax" is in either version, and both have as many chunks and words; docs/server.md, known limits).
ACME_DOCS = {"refunds.md": "# Refunds\n\nThe acme refund window is 45 days. Claims go through the harbour office, "
                           "which keeps the refund ledger and sends a courier with each approved claim.\n",
             "fees.md": "# Fees\n\nThe acme account fee is 3 dollars a month, charged by the harbour office.\n"}
GLOBEX_WITH = ("# Vault\n\nThe zorblax is kept in the harbour vault. The harbour ledger names the courier who "
               "carries the zorblax.\n")
GLOBEX_WITHOUT = ("# Vault\n\nThe quimbly is kept in the meadow vault. The meadow almanac names the gardener who "
                  "carries the quimbly.\n")
ORACLE_QUESTIONS = ("What is the zorblax refund window?", "Where is the zorblax kept?", "zorblax?")


def _tenant_world(tmp, name: str, globex_text: str):
    """A served knowledge base ``tmp/name`` over acme's documents and globex's ``globex_text``, read from the same
    paths in every world (a chunk's id hashes its source path)."""
    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    from .conftest import HOSTS, KEYS, _reply

    for tenant, docs in (("acme", ACME_DOCS), ("globex", {"vault.md": globex_text})):
        (tmp / "docs" / tenant).mkdir(parents=True, exist_ok=True)
        for file, text in docs.items():
            (tmp / "docs" / tenant / file).write_text(text, encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / name / "cache", "answer_cache": False}
    with Clinic.open(tmp / name / "kb", llm="none", **settings) as c:
        for tenant in ("acme", "globex"):
            c.ingest(tmp / "docs" / tenant, tags={"tenant": tenant})
    app = create_app(Settings.load(tmp / name / "kb", **settings, allowed_hosts=HOSTS), Keys(KEYS),
                     model=ScriptedLanguageModel([_reply], yes_prob=0.9), max_upload_mb=1)
    return TestClient(app)


_IDS = r"\d{8}-[0-9a-f]{10}"
_VOLATILE = {"created", "started_ms", "duration_ms", "scope_filter_ms", "kb_version", "seconds", "elapsed_s",
             "lm_seconds", "ms"}


def _normal(x):
    """What acme's key got, without what differs between any two runs (trace ids, times, the version counter)."""
    import re

    if isinstance(x, dict):
        return {k: _normal(v) for k, v in x.items() if k not in _VOLATILE and not k.endswith("_ms")}
    if isinstance(x, list):
        return [_normal(v) for v in x]
    if isinstance(x, str):
        return re.sub(_IDS, "<trace>", x)
    return x


def _what_acme_gets(client) -> list:
    import re

    got = []
    for q in ORACLE_QUESTIONS:
        for doctor in (True, False):
            r = client.post("/v1/ask", json={"question": q, "doctor": doctor}, headers=auth(ACME))
            assert r.status_code == 200, r.text
            got.append(r.json())
            seen: list[str] = [r.json()["trace_id"]]
            for tid in seen:  # the trace and every trace of its round it names (the doctor's repairs)
                t = client.get(f"/v1/traces/{tid}", headers=auth(ACME))
                got.append(t.json() if t.status_code == 200 else t.status_code)
                seen += [x for x in dict.fromkeys(re.findall(_IDS, t.text)) if x not in seen][:8]
    return _normal(got)


def test_what_a_tenant_gets_back_does_not_depend_on_another_tenants_words(tmp_path):
    with _tenant_world(tmp_path, "with", GLOBEX_WITH) as a:
        got_a = _what_acme_gets(a)
    with _tenant_world(tmp_path, "without", GLOBEX_WITHOUT) as b:
        got_b = _what_acme_gets(b)
    text = json.dumps(got_a)
    assert "zorblax" in text and '"repairs": [{' in text  # the doctor examined and treated acme's answers
    for x, y in zip(got_a, got_b):
        assert x == y, _first_difference(x, y)
    assert len(got_a) == len(got_b)


def _first_difference(x, y, where: str = "") -> str:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            if x.get(k) != y.get(k):
                return _first_difference(x.get(k), y.get(k), f"{where}.{k}")
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            if u != v:
                return _first_difference(u, v, f"{where}[{i}]")
    return f"{where}: {json.dumps(x)[:300]} != {json.dumps(y)[:300]}"


# ---------------------------------------------------------------------- a replay reads like the trace it replays
def test_a_tenants_replay_cuts_the_knowledge_base_folder_from_its_paths(served):
    """Replays of traces made after an upload used to fail (400); now they answer — with the paths as the tenant's
    key reads them everywhere else (``uploads/…``), never the server's folder."""
    up = served.post("/v1/ingest", headers=auth(ACME),
                     files={"files": ("lanterns.md", b"# Lanterns\n\nThe acme lantern budget is 12 dollars a month.\n",
                                      "text/markdown")})
    assert up.status_code == 200, up.text
    tid = served.post("/v1/ask", json={"question": "What is the acme lantern budget?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    admin = served.get(f"/v1/traces/{tid}", headers=auth(ADMIN)).json()
    folder = str(served.app.state.rc.settings.kb.resolve())
    assert folder + "/uploads/" in json.dumps(admin)  # the trace does hold an uploaded document's path
    again = served.post(f"/v1/traces/{tid}/replay", headers=auth(ACME))
    assert again.status_code == 200, again.text
    assert folder not in again.text and "uploads/" in again.text and again.json()["equal"] is True
    by_admin = served.post(f"/v1/traces/{tid}/replay", headers=auth(ADMIN)).json()
    assert by_admin["equal"] is True and folder in json.dumps(by_admin)  # the admin's key reads where it is
