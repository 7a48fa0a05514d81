"""What a tenant's key must not learn (issue 32): whether another tenant's trace or passage exists (every 404
reads byte for byte the same), the server's folders and URLs (a trace's settings, paths in its views), and the
text of a server-side exception (an SSE `error` event gives an error id; the log has the detail)."""

from __future__ import annotations

import json
import logging
import re

import pytest

from ragclinic import Clinic

from .conftest import ACME, ADMIN, GLOBEX, auth

Q = "What is the refund window?"
SSE = {"Accept": "text/event-stream"}


def _trace(served, key: str) -> str:
    return served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(key)).json()["trace_id"]


def _missing_like(tid: str) -> str:
    """An id of the same shape and length that no trace has."""
    return tid[:-4] + ("0000" if not tid.endswith("0000") else "1111")


def _same(a, b, ids: tuple[str, str] | None = None) -> None:
    """Two 404s byte for byte the same (but for the id each request named, if the message repeats it)."""
    assert a.status_code == b.status_code == 404, (a.status_code, b.status_code)
    x, y = (a.content, b.content) if ids is None else (a.content.replace(ids[0].encode(), b"ID"),
                                                       b.content.replace(ids[1].encode(), b"ID"))
    assert x == y, (a.text, b.text)
    assert {k: v for k, v in a.headers.items() if k != "date"} == {k: v for k, v in b.headers.items() if k != "date"}


def test_a_404_for_another_tenants_trace_reads_like_one_for_no_trace(served):
    theirs = _trace(served, GLOBEX)
    nobody = _missing_like(theirs)
    requests = [("GET", "/v1/traces/{}", None), ("POST", "/v1/traces/{}/replay", None),
                ("POST", "/v1/feedback", lambda t: {"json": {"trace_id": t, "rating": 1}}),
                ("GET", "/traces/{}", None), ("GET", "/compare?a={}", None),
                ("POST", "/ui/feedback", lambda t: {"data": {"trace_id": t, "rating": "1"}})]
    for method, url, extra in requests:
        got = [served.request(method, url.format(t), headers=auth(ACME), **(extra(t) if extra else {}))
               for t in (theirs, nobody)]
        _same(*got, ids=(theirs, nobody))
    assert served.get(f"/v1/traces/{theirs}", headers=auth(GLOBEX)).status_code == 200


def test_another_tenants_trace_is_never_read_for_its_404(served, monkeypatch):
    """Issue 51 (6): another tenant's trace id answered measurably slower than a missing one (1.49 vs 1.16 ms):
    the trace was read and decoded before it was found not to be the caller's. It is chosen out in the query
    now, so its 404 does what a missing id's does: no trace is decoded for either (the timing itself is
    measured in bench/trace_404_timing.py, not here: these machines are too noisy for a timed test)."""
    import ragclinic.trace.store as store

    theirs = _trace(served, GLOBEX)
    nobody = _missing_like(theirs)
    decoded: list[str] = []
    real = store.Trace

    class Counting(real):
        @classmethod
        def from_dict(cls, d):
            decoded.append(d.get("id", "?"))
            return real.from_dict(d)

    monkeypatch.setattr(store, "Trace", Counting)
    for url in ("/v1/traces/{}", "/traces/{}", "/compare?a={}"):
        for t in (theirs, nobody):
            assert served.get(url.format(t), headers=auth(ACME)).status_code == 404
        assert decoded == [], (url, decoded)
    for t in (theirs, nobody):
        assert served.post(f"/v1/traces/{t}/replay", headers=auth(ACME)).status_code == 404
        assert served.post("/v1/feedback", json={"trace_id": t, "rating": 1}, headers=auth(ACME)).status_code == 404
    assert decoded == []
    assert served.get(f"/v1/traces/{theirs}", headers=auth(GLOBEX)).status_code == 200 and decoded == [theirs]


def test_a_404_for_another_tenants_passage_reads_like_one_for_no_passage(served):
    tid = _trace(served, GLOBEX)
    chunk = served.get(f"/v1/traces/{tid}", headers=auth(GLOBEX)).json()["final"]["citations"][0]["chunk_id"]
    nobody = chunk[:-4] + ("0000" if not chunk.endswith("0000") else "1111")
    mine = _trace(served, ACME)
    for trace in ("", mine, tid, _missing_like(tid)):
        _same(served.get(f"/passage/{chunk}?trace={trace}", headers=auth(ACME)),
              served.get(f"/passage/{nobody}?trace={trace}", headers=auth(ACME)))


def _secrets(served) -> list[str]:
    s = served.app.state.rc.settings
    return [str(s.kb), str(s.cache_dir)]


def test_a_tenant_sees_no_server_folders_or_urls_in_a_trace(served):
    tid = _trace(served, ACME)
    for url in (f"/v1/traces/{tid}", f"/traces/{tid}", f"/compare?a={tid}&b={tid}"):
        r = served.get(url, headers=auth(ACME))
        assert r.status_code == 200
        for secret in _secrets(served):
            assert secret not in r.text, (url, secret)
    settings = served.get(f"/v1/traces/{tid}", headers=auth(ACME)).json()["settings"]
    assert {"kb", "cache_dir", "openai_base_url"}.isdisjoint(settings) and settings["top_k"] > 0
    admin = served.get(f"/v1/traces/{tid}", headers=auth(ADMIN)).json()["settings"]
    assert admin["kb"] == str(served.app.state.rc.settings.kb)  # the admin's key still sees everything


def test_a_trace_redacts_every_url_and_folder_setting(served):
    from ragclinic.server.ui_parts import redacted_settings

    s = served.app.state.rc.settings.model_copy(update={"openai_base_url": "http://10.0.0.7:8080/v1"})
    kept = redacted_settings(s.model_dump(mode="json"))
    text = json.dumps(kept)
    assert "10.0.0.7" not in text and str(s.kb) not in text and str(s.cache_dir) not in text
    assert kept["retriever"] == s.retriever


def _events(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for block in text.split("\n\n"):
        name = re.search(r"^event: (.*)$", block, re.M)
        data = "\n".join(line[6:] for line in block.splitlines() if line.startswith("data: "))
        if name:
            out.setdefault(name.group(1), []).append(data)
    return out


def test_the_sse_error_event_names_an_error_id_not_the_exception(served, monkeypatch, caplog):
    secret = "/srv/secret/kb.sqlite3 is locked by pid 4242"

    def boom(*_a, **_k):
        raise RuntimeError(secret)

    monkeypatch.setattr(Clinic, "answer", boom)  # the server asks through Clinic.answer
    caplog.set_level(logging.ERROR, logger="ragclinic.server")
    with served.stream("POST", "/v1/ask", json={"question": Q}, headers={**auth(ACME), **SSE}) as r:
        text = "".join(r.iter_text())
    with served.stream("POST", "/v1/chat/completions", json={"messages": [{"role": "user", "content": Q}],
                                                             "stream": True}, headers=auth(ACME)) as r:
        chat = "".join(r.iter_text())
    with served.stream("GET", "/ui/ask/stream", params={"q": Q}, headers=auth(ACME)) as r:
        ui = "".join(r.iter_text())
    for body in (text, chat, ui):
        assert secret not in body and "RuntimeError" not in body and "/srv/" not in body
    error = json.loads(_events(text)["error"][0])["error"]
    ids = [error["error_id"], *re.findall(r'"error_id": "(\w+)"', chat), *re.findall(r"error id (\w+)", ui)]
    assert len(ids) == 3 and error["error_id"] in error["message"]
    logged = caplog.text
    for eid in ids:
        assert re.search(rf"error id {eid}\b", logged)
    assert secret in logged  # the detail stays in the server's log


@pytest.mark.parametrize("key", [ACME, ADMIN])
def test_trace_views_still_work(served, key):
    tid = _trace(served, key)
    assert served.post(f"/v1/traces/{tid}/replay", headers=auth(key)).json()["equal"] is True


def test_an_uploaded_documents_path_never_names_the_servers_folder(served):
    kb = str(served.app.state.rc.settings.kb.resolve())
    files = [("files", ("fees.md", b"# Fees\n\nThe acme account fee is 3 dollars a month.\n", "text/markdown"))]
    assert served.post("/v1/ingest", files=files, headers=auth(ACME)).json()["added"] == 1
    q = "What is the account fee?"
    ask = served.post("/v1/ask", json={"question": q, "doctor": True}, headers=auth(ACME))
    cited = ask.json()["citations"]
    assert any(c["path"].startswith("uploads/") and c["path"].endswith("/fees.md") for c in cited), cited
    tid = ask.json()["trace_id"]
    with served.stream("POST", "/v1/ask", json={"question": q}, headers={**auth(ACME), **SSE}) as r:
        sse = "".join(r.iter_text())
    with served.stream("GET", "/ui/ask/stream", params={"q": q}, headers=auth(ACME)) as r:
        ui = "".join(r.iter_text())
    chat = served.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": q}]}, headers=auth(ACME))
    hits = served.post("/v1/retrieval", json={"query": "account fee"}, headers=auth(ACME))
    doc = hits.json()["hits"][0]
    pages = [served.get(url, headers=auth(ACME)) for url in
             (f"/v1/traces/{tid}", f"/traces/{tid}", f"/compare?a={tid}", "/kb", f"/kb/doc/{doc['doc_id']}",
              f"/passage/{doc['chunk_id']}?trace={tid}")]
    for name, text in [("ask", ask.text), ("sse", sse), ("ui", ui), ("chat", chat.text), ("hits", hits.text),
                       *[(p.url.path, p.text) for p in pages]]:
        assert "fees.md" in text or name in ("ui", "chat"), name
        assert kb not in text, name
    admin = served.post("/v1/retrieval", json={"query": "account fee"}, headers=auth(ADMIN)).json()["hits"]
    assert any(h["path"].startswith(kb) for h in admin)  # the admin's key reads where the file is
