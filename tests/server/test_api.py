"""The native HTTP API on a TestClient: keys, the ask --json object, server-sent events, retrieval, ingest
with its size limit, traces, replay, feedback, metrics; every error a JSON body."""

from __future__ import annotations

import json

from .conftest import ACME, ADMIN, GLOBEX, auth

Q = "What is usually used as a proxy for the risk-free rate?"
ASK_KEYS = {"answer", "refused", "route", "question_type", "citations", "confidence", "trace_id", "claims", "flags",
            "generator"}


def test_health_needs_no_key_and_metrics_need_the_admin_key(served):
    r = served.get("/healthz")
    assert r.status_code == 200 and r.json()["ok"] is True and r.json()["kb_version"] >= 3
    m = served.get("/metrics", headers=auth(ADMIN))
    assert m.status_code == 200 and "ragclinic_model_queue_depth" in m.text


def test_a_key_is_required_and_checked(served):
    r = served.post("/v1/ask", json={"question": Q})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    r = served.post("/v1/ask", json={"question": Q}, headers=auth("not-a-key-at-all"))
    assert r.status_code == 401 and "not valid" in r.json()["error"]["message"]
    r = served.post("/v1/diagnose", json={"question": Q}, headers=auth(ACME))  # a known key without access
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = served.post("/v1/ask", json={"question": Q}, headers={"X-API-Key": ADMIN})
    assert r.status_code == 200


def test_ask_returns_the_ask_json_object(served):
    r = served.post("/v1/ask", json={"question": Q, "doctor": True}, headers=auth(ADMIN))
    body = r.json()
    assert r.status_code == 200 and ASK_KEYS <= set(body) and {"symptoms", "repairs", "doctor"} <= set(body)
    assert "treasury bills" in body["answer"] and body["citations"][0]["path"].endswith("bonds.md")
    plain = served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ADMIN)).json()
    assert ASK_KEYS <= set(plain) and "symptoms" not in plain


def test_ask_streams_server_sent_events(served):
    with served.stream("POST", "/v1/ask", json={"question": Q}, headers={**auth(ADMIN), "Accept": "text/event-stream"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = [block for block in text.split("\n\n") if block.startswith("id:")]
    names = [next(line[7:] for line in b.splitlines() if line.startswith("event: ")) for b in events]
    ids = [int(b.splitlines()[0][4:]) for b in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert names[:3] == ["retrieval", "scope", "gate"] and "delta" in names and names[-1] == "final"
    assert names.index("citation") > names.index("delta")
    final = json.loads("\n".join(line[6:] for line in events[-1].splitlines() if line.startswith("data: ")))
    assert "treasury bills" in final["answer"] and final["trace_id"]


def test_retrieval_gives_each_retrievers_rank_and_no_model_call(served):
    r = served.post("/v1/retrieval", json={"query": "risk-free rate proxy", "k": 3}, headers=auth(ADMIN))
    body = r.json()
    assert r.status_code == 200 and 0 < len(body["hits"]) <= 3
    top = body["hits"][0]
    assert top["rank"] == 1 and "treasury bills" in top["text"] and top["sources"][0]["retriever"]


def test_a_tenants_key_sees_only_its_tenant(served):
    for key, mine, theirs in ((ACME, "45 days", "7 days"), (GLOBEX, "7 days", "45 days")):
        for scope in (None, {"tenant": "acme"}, {"tenant": "globex"}, {"path": "*"}):
            hits = served.post("/v1/retrieval", json={"query": "refund window", "scope": scope},
                               headers=auth(key)).json()["hits"]
            assert not any(theirs in h["text"] for h in hits)
            a = served.post("/v1/ask", json={"question": "What is the refund window?", "scope": scope,
                                             "doctor": False}, headers=auth(key)).json()
            assert theirs not in a["answer"] and all(theirs not in c["text"] for c in a["citations"])
    # the admin key sees both
    texts = [h["text"] for h in served.post("/v1/retrieval", json={"query": "refund window"},
                                            headers=auth(ADMIN)).json()["hits"]]
    assert any("45 days" in t for t in texts) and any("7 days" in t for t in texts)


def test_traces_are_listed_shown_replayed_and_rated_per_tenant(served):
    tid = served.post("/v1/ask", json={"question": "What is the refund window?", "doctor": False},
                      headers=auth(ACME)).json()["trace_id"]
    rows = served.get("/v1/traces?limit=50", headers=auth(ACME)).json()["traces"]
    assert tid in {r["id"] for r in rows}
    assert tid not in {r["id"] for r in served.get("/v1/traces?limit=50", headers=auth(GLOBEX)).json()["traces"]}
    t = served.get(f"/v1/traces/{tid}", headers=auth(ACME)).json()
    assert t["id"] == tid and [s["layer"] for s in t["spans"]] == ["retrieve", "scope", "gate", "generate"]
    assert served.get(f"/v1/traces/{tid}", headers=auth(GLOBEX)).status_code == 404  # as if it did not exist
    again = served.post(f"/v1/traces/{tid}/replay", headers=auth(ACME)).json()
    assert again["equal"] is True and again["model_calls"] == 0
    fb = served.post("/v1/feedback", json={"trace_id": tid, "rating": -1, "note": "wrong"}, headers=auth(ACME))
    assert fb.status_code == 200 and fb.json()["feedback"] == 1
    assert served.get(f"/v1/traces/{tid}", headers=auth(ACME)).json()["feedback"][0]["rating"] == -1
    assert served.post("/v1/feedback", json={"trace_id": tid, "rating": 1}, headers=auth(GLOBEX)).status_code == 404
    assert served.post("/v1/feedback", json={"trace_id": tid, "rating": 5}, headers=auth(ACME)).status_code == 422


def test_diagnose_names_the_layer(served):
    r = served.post("/v1/diagnose", json={"question": Q, "expected": ["treasury bills"]}, headers=auth(ADMIN))
    assert r.status_code == 200 and r.json()["verdict"] == "none"
    assert served.post("/v1/diagnose", json={"question": Q}, headers=auth(ACME)).status_code == 403
    bad = served.post("/v1/diagnose", json={}, headers=auth(ADMIN))
    assert bad.status_code == 422 and "error" in bad.json()


def test_ingest_uploads_and_tags_with_the_tenant(served):
    files = [("files", ("fees.md", b"# Fees\n\nThe acme account fee is 3 dollars a month.\n", "text/markdown"))]
    r = served.post("/v1/ingest", files=files, data={"tags": ["team=billing"]}, headers=auth(ACME))
    assert r.status_code == 200 and r.json()["added"] == 1 and not r.json()["failed"]
    hits = served.post("/v1/retrieval", json={"query": "account fee"}, headers=auth(ACME)).json()["hits"]
    assert hits and "3 dollars" in hits[0]["text"]
    assert not any("3 dollars" in h["text"] for h in served.post(
        "/v1/retrieval", json={"query": "account fee"}, headers=auth(GLOBEX)).json()["hits"])
    side = [("files", ("fees.md.meta.json", b'{"tenant": "globex"}', "application/json"))]
    assert served.post("/v1/ingest", files=side, headers=auth(ACME)).status_code == 422


def test_a_body_over_the_limit_is_refused_before_it_is_read(served):
    big = b"x" * (1024 * 1024 + 10)
    r = served.post("/v1/ingest", files=[("files", ("big.txt", big, "text/plain"))], headers=auth(ADMIN))
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"

    def chunked():
        for _ in range(20):
            yield b"y" * 65536

    r = served.post("/v1/ask", content=chunked(), headers={**auth(ADMIN), "Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
    before = served.get("/healthz").json()["kb_version"]
    assert before == served.get("/healthz").json()["kb_version"]  # nothing stored


def test_errors_are_json(served):
    for r in (served.get("/v1/nowhere", headers=auth(ADMIN)), served.post("/v1/ask", json={"question": ""},
                                                                         headers=auth(ADMIN)),
              served.post("/v1/ask", content=b"{not json", headers={**auth(ADMIN), "Content-Type": "application/json"}),
              served.get("/v1/traces/nope", headers=auth(ADMIN))):
        assert r.status_code in (404, 422) and set(r.json()["error"]) == {"code", "message"}


def test_metrics_count_answers_layers_and_requests(served):
    served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ADMIN))
    text = served.get("/metrics", headers=auth(ADMIN)).text
    assert 'ragclinic_answers_total{outcome="answered"}' in text
    assert 'ragclinic_layer_duration_seconds_count{layer="generate"}' in text
    assert 'ragclinic_http_request_duration_seconds_count{method="POST",route="/v1/ask",status="200"}' in text


def test_a_tenant_learns_nothing_from_trace_id_prefixes(served):
    served.post("/v1/ask", json={"question": "What is the refund window?", "doctor": False}, headers=auth(GLOBEX))
    for ref in ("%25", "_", "2026", "%"):
        r = served.get(f"/v1/traces/{ref}", headers=auth(ACME))
        assert r.status_code == 404 and "globex" not in r.text.lower()


def test_bad_inputs_are_4xx_not_5xx(served):
    long_q = {"model": "m", "messages": [{"role": "user", "content": "x " * 2500}]}
    assert served.post("/v1/chat/completions", json=long_q, headers=auth(ADMIN)).status_code == 422
    r = served.post("/v1/ingest", files=[("files", ("..", b"x", "text/plain"))], headers=auth(ADMIN))
    assert r.status_code == 422
