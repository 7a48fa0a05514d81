"""diagnose with apply over HTTP and on the trace page: the fix carried out on a copy, the verdict in the answer."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from tests.server.conftest import HOSTS, auth

ADMIN, ACME = "admin-key-123", "acme-key-123"
Q = "How long is the refund window for returned goods?"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    tmp = tmp_path_factory.mktemp("apply")
    (tmp / "docs").mkdir()
    for name, text in BOND_DOCS.items():
        (tmp / "docs" / name).write_text(text, encoding="utf-8")
    (tmp / "old").mkdir()
    (tmp / "old" / "refunds.md").write_text("# Refunds\n\nThe refund window for returned goods is 45 days.\n",
                                            encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / "cache", "answer_cache": False}
    with Clinic.open(tmp / "kb", llm="none", **settings) as c:
        c.ingest(tmp / "docs")
        c.ingest(tmp / "old", tags={"year": "2019"})
    app = create_app(Settings.load(tmp / "kb", **settings, llm="none", allowed_hosts=HOSTS),
                     Keys([ADMIN, f"{ACME}:tenant=acme"]))
    with TestClient(app) as c:
        yield c


def test_the_api_applies_the_fix_and_says_it_is_fixed(client):
    r = client.post("/v1/diagnose", json={"question": Q, "expected": ["45 days"], "scope": {"year": "2020"},
                                          "apply": True, "others": 5}, headers=auth(ADMIN))
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["verdict"] == "scope" and d["applied"]["verdict"] == "fixed" and d["applied"]["kept"] == ""
    assert client.post("/v1/diagnose", json={"question": Q, "expected": ["45 days"], "apply": True},
                       headers=auth(ACME)).status_code == 403


def test_the_trace_pages_panel_shows_the_applied_fix(client):
    asked = client.post("/v1/ask", json={"question": Q, "scope": {"year": "2020"}, "doctor": False},
                        headers=auth(ADMIN)).json()
    r = client.post("/ui/diagnose", data={"trace_id": asked["trace_id"], "expected": "45 days", "apply": "1"},
                    headers=auth(ADMIN))
    assert r.status_code == 200 and 'id="applied"' in r.text and ">fixed<" in r.text and "tag " in r.text
    page = client.get(f"/traces/{asked['trace_id']}", headers=auth(ADMIN))
    assert "apply the fix on a copy" in page.text


def test_one_fix_at_a_time_on_a_server(client):
    from ragclinic.server import api

    with api._APPLYING:  # another request is applying a fix
        r = client.post("/v1/diagnose", json={"question": Q, "expected": ["45 days"], "scope": {"year": "2020"},
                                              "apply": True}, headers=auth(ADMIN))
        assert r.status_code == 409 and r.json()["error"]["code"] == "busy"
        plain = client.post("/v1/diagnose", json={"question": Q, "expected": ["45 days"]}, headers=auth(ADMIN))
        assert plain.status_code == 200  # diagnosing without applying is not held up
