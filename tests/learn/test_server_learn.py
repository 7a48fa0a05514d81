"""``POST /v1/kb/learn`` (admin keys) runs ``kb learn`` in the server's background; ``GET`` says where it stands;
with ``learn_after_ingest`` an upload starts it; retrieval uses what it learned."""

from __future__ import annotations

import json
import time

from fastapi.testclient import TestClient

from learn.test_learn import DOCS, _reply
from server.conftest import HOSTS, auth

ADMIN, ACME = "admin-key-123", "acme-key-123"


def _app(tmp_path, **settings):
    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    base = {"embedder": "fake", "cache_dir": tmp_path / "cache", **settings}
    with Clinic.open(tmp_path / "kb", model=None, **base) as c:
        c.ingest(docs)
    return create_app(Settings.load(tmp_path / "kb", **base, allowed_hosts=HOSTS), Keys([ADMIN, f"{ACME}:tenant=acme"]),
                      model=ScriptedLanguageModel([_reply]))


def _wait(client, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        s = client.get("/v1/kb/learn", headers=auth(ADMIN)).json()
        if s["state"] in ("done", "failed"):
            return s
        time.sleep(0.05)
    raise AssertionError("kb learn did not finish")


def test_an_admin_starts_learning_and_retrieval_uses_it(tmp_path):
    with TestClient(_app(tmp_path, learned_retrieval=True)) as client:
        assert client.get("/v1/kb/learn", headers=auth(ADMIN)).json()["state"] == "idle"
        r = client.post("/v1/kb/learn", headers=auth(ACME))
        assert r.status_code == 403 and "without a tenant" in r.json()["error"]["message"]
        r = client.post("/v1/kb/learn", headers=auth(ADMIN))
        assert r.status_code == 202 and r.json()["state"] == "running"
        s = _wait(client)
        assert s["state"] == "done" and s["result"]["learned"] == 3 and s["done"] == 3, s
        hits = client.post("/v1/retrieval", headers=auth(ADMIN),
                           json={"query": "which government paper stands in for a no-risk return"}).json()["hits"]
        assert "treasury" in hits[0]["text"]
        assert "question_terms" in {x["retriever"] for x in hits[0]["sources"]}


def test_an_upload_starts_learning_when_learn_after_ingest_is_on(tmp_path):
    with TestClient(_app(tmp_path, learn_after_ingest=True)) as client:
        text = "# Restore\n\npg_restore reads an archive made by pg_dump and recreates the VACUUM-free database.\n"
        r = client.post("/v1/ingest", headers=auth(ADMIN), files=[("files", ("restore.md", text.encode(), "text/markdown"))])
        assert r.status_code == 200, r.text
        s = _wait(client)
        assert s["state"] == "done" and s["result"]["learned"] == 4, json.dumps(s)
