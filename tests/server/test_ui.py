"""The web UI's pages over HTTP (no browser): login, the ask fragment and its event stream, the passage, the
trace page, compare, the knowledge base; vendored scripts match their pinned hashes; model and document text
is always escaped."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .conftest import ACME, ADMIN, GLOBEX, HOSTS

VENDOR = Path(__file__).resolve().parents[2] / "src" / "ragclinic" / "server" / "static" / "vendor"
Q = "What is usually used as a proxy for the risk-free rate?"


def test_vendored_scripts_match_their_pinned_hashes():
    table = (VENDOR / "VENDOR.md").read_text(encoding="utf-8")
    pinned = re.findall(r"^\| (\S+\.(?:js|css)) \|.*\| ([0-9a-f]{64}) \|$", table, re.M)
    for name, digest in pinned:
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert {"htmx-2.0.11.min.js", "swagger-ui-5.35.0/swagger-ui-bundle.js", "swagger-ui-5.35.0/swagger-ui.css"} <= \
        {name for name, _ in pinned}
    assert (VENDOR / "swagger-ui-5.35.0" / "LICENSE").is_file()


def _login(client, key=ADMIN):
    """Log in through ``?api_key=``; the client then sends the pages' CSRF token with every request (as htmx
    does: base.html's hx-headers)."""
    client.cookies.clear()
    client.headers.pop("X-CSRF-Token", None)
    r = client.get(f"/?api_key={key}", follow_redirects=False)
    assert r.status_code == 303 and "ragclinic_session" in r.headers["set-cookie"] and "httponly" in r.headers["set-cookie"].lower()
    client.headers["X-CSRF-Token"] = re.search(r'"X-CSRF-Token": "([0-9a-f]+)"', client.get("/").text).group(1)
    return client


def test_pages_need_a_login(served):
    served.cookies.clear()
    r = served.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    bad = served.get("/?api_key=nope-nope-nope", follow_redirects=False)
    assert bad.headers["location"].startswith("/login") and "error=1" in bad.headers["location"]
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', served.get("/login").text).group(1)
    form = served.post("/login", data={"key": "wrong-wrong", "next": "/kb", "csrf_token": token}, follow_redirects=False)
    assert form.status_code == 200 and "not valid" in form.text
    ok = served.post("/login", data={"key": ADMIN, "next": "//evil.example/", "csrf_token": token},
                     follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/"  # never an open redirect


def test_ask_streams_an_answer_with_citation_links(served):
    _login(served)
    frag = served.get("/ui/ask", params={"q": Q, "doctor": "1"})
    assert 'sse-connect="/ui/ask/stream?' in frag.text
    with served.stream("GET", "/ui/ask/stream", params={"q": Q, "doctor": "1"}) as r:
        text = "".join(r.iter_text())
    assert "event: delta" in text and "event: final" in text and text.rstrip().endswith("data:")  # done
    final = text[text.index("event: final"):]
    m = re.search(r'href="(/passage/[0-9a-f]+\?trace=([\w-]+)&amp;n=1)"', final)
    assert m, final[:500]
    passage = served.get(m.group(1).replace("&amp;", "&"))
    assert passage.status_code == 200 and re.search(r"<mark id=\"cited\">[^<]*treasury bills", passage.text)
    trace = served.get(f"/traces/{m.group(2)}")
    assert trace.status_code == 200 and "Where the time went" in trace.text and "Retrieved" in trace.text
    assert "Where the context came from" in trace.text and "markdown" in trace.text  # parse and chunk provenance
    assert "Which layer broke it?" in trace.text
    cmp = served.get(f"/compare?a={m.group(2)}&b={m.group(2)}")
    assert cmp.status_code == 200 and cmp.text.count("Where the time went") == 2


def test_every_string_from_a_document_or_model_is_escaped(served):
    _login(served)
    evil = b"The <script>alert(1)</script> and <img src=x onerror=alert(2)> rule is 9 points.\n"
    up = served.post("/ui/upload", files=[("files", ("evil <b>name<b>.txt", evil, "text/plain"))],
                     data={"tags": "kind=<i>evil</i>"})
    assert up.status_code == 200 and "1 added" in up.text
    kb = served.get("/kb")
    assert "<b>name" not in kb.text and "&lt;b&gt;name&lt;b&gt;" in kb.text and "<i>evil" not in kb.text
    hits = served.post("/ui/retrieval", data={"q": "script alert img onerror rule"})
    assert "<script>alert(1)" not in hits.text and "&lt;script&gt;alert(1)" in hits.text
    assert "<img src=x" not in hits.text and "&lt;img src=x" in hits.text
    found = served.post("/v1/retrieval", json={"query": "script alert img onerror rule", "k": 10},
                        headers={"Authorization": f"Bearer {ADMIN}"}).json()["hits"]
    top = next(h for h in found if "alert(1)" in h["text"])
    page = served.get(f"/passage/{top['chunk_id']}").text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_a_tenant_sees_its_own_pages_only(served):
    _login(served, ACME)
    assert "globex" not in served.get("/kb").text.lower().replace("globex-key", "")
    tid = served.post("/v1/ask", json={"question": "What is the refund window?", "doctor": False},
                      headers={"Authorization": f"Bearer {ACME}"}).json()["trace_id"]
    page = served.get(f"/traces/{tid}")
    assert page.status_code == 200 and "it needs a key without a tenant" in page.text  # no diagnose button
    assert tid in served.get("/traces").text
    _login(served, GLOBEX)
    assert served.get(f"/traces/{tid}").status_code == 404 and tid not in served.get("/traces").text


def test_feedback_diagnose_and_rerun_fragments(served):
    _login(served)
    tid = served.post("/v1/ask", json={"question": Q, "doctor": False},
                      headers={"Authorization": f"Bearer {ADMIN}"}).json()["trace_id"]
    fb = served.post("/ui/feedback", data={"trace_id": tid, "rating": "1", "note": "good"})
    assert "saved" in fb.text
    d = served.post("/ui/diagnose", data={"trace_id": tid, "expected": "treasury bills"})
    assert "verdict: none" in d.text
    rr = served.post("/ui/rerun", data={"trace_id": tid, "layer": "gate"})
    assert "/traces/" in rr.text and "compare" in rr.text
    page = served.get(f"/traces/{tid}").text  # the question, the debugger's probe re-runs, the re-run: one path
    assert "The whole path of this question" in page and "re-run from gate" in page and "this trace" in page


def test_an_ambiguous_question_gets_a_reply_form_and_the_reply_is_remembered(tmp_path):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys
    from ragclinic.trace.store import list_traces

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "planet.md").write_text("# Mercury (planet)\n\nMercury is the smallest planet in the Solar System and "
                                    "orbits the Sun every 88 days.\n", encoding="utf-8")
    (docs / "element.md").write_text("# Mercury (element)\n\nMercury is a chemical element, symbol Hg, the only "
                                     "metal that is liquid at room temperature.\n", encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp_path / "cache"}
    from ragclinic import Clinic

    with Clinic.open(tmp_path / "kb", llm="none", **settings) as c:
        c.ingest(docs)
    app = create_app(Settings.load(tmp_path / "kb", **settings, allowed_hosts=HOSTS), Keys([ADMIN]),
                     model=ScriptedLanguageModel(["Mercury is the smallest planet [1]."], yes_prob=0.9))

    def final(client, **params):
        with client.stream("GET", "/ui/ask/stream", params={"doctor": "1", **params}) as r:
            text = "".join(r.iter_text())
        return text[text.index("event: final"):]

    with TestClient(app) as client:
        _login(client)
        asked = final(client, q="What is Mercury?")
        assert "clarifying question" in asked and "Do you mean Mercury (" in asked
        form = re.search(r'<form class="ask clarify-reply".*?</form>', asked, re.S).group()
        hidden = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', form))
        assert hidden["q"] == "What is Mercury?" and hidden["doctor"] == "1" and hidden["round"]
        answered = final(client, **hidden, reply="the planet")
        assert "answered" in answered and "you were asked" in answered and "the planet" in answered
        with Clinic.open(tmp_path / "kb", llm="none", **settings) as c:
            rounds = {t["debug_round_id"] for t in list_traces(c.kb.db, 50)}
        assert rounds == {hidden["round"]}  # the question, the clarification and the reply: one round
        again = final(client, q="Mercury?")  # the same senses: the reply is reused, not asked
        assert "asked before" in again and "Reply</button>" not in again
