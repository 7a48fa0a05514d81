"""Experiments and the failed-answer library over HTTP: admin keys start and stop, every /v1/ask and chat request
runs in its session's arm, a tenant's report and case list hold its own requests only, and the UI's page shows both."""

from __future__ import annotations

import pytest

from .conftest import ACME, ADMIN, GLOBEX, auth

Q = "What is usually used as a proxy for the risk-free rate?"
ARMS = [{"name": "plain", "settings": {"doctor": False}}, {"name": "small", "settings": {"doctor": False, "top_k": 3}}]


@pytest.fixture(autouse=True)
def no_experiment_left_running(served):
    """The served app is shared by the module: a failed test must not leave its experiment running for the next."""
    yield
    for e in served.get("/v1/experiments", headers=auth(ADMIN)).json()["experiments"]:
        if e["status"] == "running":
            served.post(f"/v1/experiments/{e['name']}/stop", headers=auth(ADMIN))


def _ask(served, key, session=None, question=Q):
    body = {"question": question, **({"session": session} if session else {})}
    r = served.post("/v1/ask", json=body, headers=auth(key))
    assert r.status_code == 200, r.text
    return r.json()


def test_experiments_over_http(served):
    assert served.post("/v1/experiments", json={"name": "e1", "arms": ARMS}, headers=auth(ACME)).status_code == 403
    assert served.get("/v1/experiments", headers=auth(ACME)).status_code == 403
    bad = served.post("/v1/experiments", json={"name": "e0", "arms": [ARMS[0], {"name": "x", "settings": {
        "embedder": "e5"}}]}, headers=auth(ADMIN))
    assert bad.status_code == 400 and "cannot change" in bad.json()["error"]["message"]
    half = [{**ARMS[0], "share": 70}, ARMS[1]]
    assert served.post("/v1/experiments", json={"name": "e0", "arms": half}, headers=auth(ADMIN)).status_code == 422
    r = served.post("/v1/experiments", json={"name": "e1", "arms": ARMS, "min_rated": 1}, headers=auth(ADMIN))
    assert r.status_code == 201 and r.json()["status"] == "running"

    arms = {}
    while len(arms) < 6 or set(arms.values()) != {"plain", "small"}:  # the salt is random: ask on until both arms
        assert len(arms) < 40, arms                                    # are seen (2^-39 to fail)
        arms[f"s{len(arms) + 1}"] = _ask(served, ADMIN, f"s{len(arms) + 1}")["experiment"]["arm"]
    assert _ask(served, ADMIN, "s1")["experiment"]["arm"] == arms["s1"]  # a session stays in its arm
    mine = _ask(served, ACME, "acme-user")
    _ask(served, GLOBEX, "globex-user")
    chat = served.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": Q}], "user": "s1"},
                       headers=auth(ADMIN))
    assert chat.status_code == 200

    fb = served.post("/v1/feedback", json={"trace_id": mine["trace_id"], "rating": -1, "note": "no",
                                           "expected": ["treasury bills"]}, headers=auth(ACME))
    assert fb.status_code == 200 and fb.json()["case"] >= 1
    theirs = served.post("/v1/feedback", json={"trace_id": mine["trace_id"], "rating": 1}, headers=auth(GLOBEX))
    assert theirs.status_code == 404  # another tenant's answer does not exist for it

    full = served.get("/v1/experiments/e1/report", headers=auth(ADMIN)).json()
    assert full["requests"] == len(arms) + 4 and "tenant" not in full
    own = served.get("/v1/experiments/e1/report", headers=auth(ACME)).json()
    assert own["requests"] == 1 and own["tenant"] == {"tenant": "acme"}
    assert sum(a["rated"] for a in own["arms"]) == 1
    png = served.get("/v1/experiments/e1/plot.png", headers=auth(ACME))
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    assert served.get("/v1/experiments/nope/report", headers=auth(ADMIN)).status_code == 404

    acme_cases = served.get("/v1/cases", headers=auth(ACME)).json()["cases"]
    assert [c["trace_id"] for c in acme_cases] == [mine["trace_id"]] and acme_cases[0]["arm"].startswith("e1/")
    assert served.get("/v1/cases", headers=auth(GLOBEX)).json()["cases"] == []
    assert served.get(f"/v1/cases/{acme_cases[0]['id']}", headers=auth(GLOBEX)).status_code == 404
    assert served.get(f"/v1/cases/{acme_cases[0]['id']}", headers=auth(ADMIN)).status_code == 200

    page = served.get("/experiments", headers=auth(ADMIN))
    assert page.status_code == 200 and 'id="exp-e1"' in page.text and "/experiments/e1/plot.png" in page.text
    assert 'id="cases"' in page.text and "Decision:" in page.text and f'href="/traces/{mine["trace_id"]}"' in page.text
    tenant_page = served.get("/experiments", headers=auth(GLOBEX))
    assert tenant_page.status_code == 200 and "only your own requests" in tenant_page.text
    assert Q[:40] not in tenant_page.text.split('id="cases"')[-1]  # no other tenant's failed question

    assert served.post("/v1/experiments/e1/stop", headers=auth(ACME)).status_code == 403
    stopped = served.post("/v1/experiments/e1/stop", headers=auth(ADMIN))
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    assert "experiment" not in _ask(served, ADMIN, "s1")


def test_a_report_is_computed_once_per_ttl_per_caller(served, monkeypatch):
    from ragclinic.server import experiments

    r = served.post("/v1/experiments", json={"name": "ttl", "arms": ARMS}, headers=auth(ADMIN))
    assert r.status_code == 201
    _ask(served, ADMIN, "t1")
    first = served.get("/v1/experiments/ttl/report", headers=auth(ADMIN)).json()["requests"]
    _ask(served, ADMIN, "t2")
    assert served.get("/v1/experiments/ttl/report", headers=auth(ADMIN)).json()["requests"] == first  # one reading
    monkeypatch.setattr(experiments, "REPORT_TTL_S", 0.0)
    assert served.get("/v1/experiments/ttl/report", headers=auth(ADMIN)).json()["requests"] == first + 1
    assert served.post("/v1/experiments/ttl/stop", headers=auth(ADMIN)).status_code == 200
