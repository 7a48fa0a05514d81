"""`ragclinic serve` refuses a non-loopback address without a key (before loading anything), and reads go on
while an ingest holds the knowledge base's write lock."""

from __future__ import annotations

import threading

from typer.testing import CliRunner

from ragclinic.cli.main import app

from .conftest import ADMIN, auth


def test_a_non_loopback_host_needs_a_key(tmp_path):
    r = CliRunner().invoke(app, ["serve", "--kb", str(tmp_path / "kb"), "--host", "0.0.0.0", "--llm", "none"])
    assert r.exit_code == 2 and "--api-key" in r.output and "loopback" in r.output
    r = CliRunner().invoke(app, ["serve", "--host", "10.1.2.3", "--api-key", "short"])
    assert r.exit_code == 2 and "8 characters" in r.output


def test_reads_and_questions_go_on_during_an_ingest(served):
    rc = served.app.state.rc
    holding, release = threading.Event(), threading.Event()

    def ingest_in_progress():
        with rc.pool.writing() as clinic:  # what an ingest holds, with the knowledge base's write lock
            clinic.kb.lock()
            holding.set()
            release.wait(30)
            clinic.kb.unlock()

    t = threading.Thread(target=ingest_in_progress)
    t.start()
    try:
        assert holding.wait(10)
        r = served.post("/v1/retrieval", json={"query": "risk-free rate"}, headers=auth(ADMIN))
        a = served.post("/v1/ask", json={"question": "What does duration measure?", "doctor": False},
                        headers=auth(ADMIN))
        assert r.status_code == 200 and r.json()["hits"] and a.status_code == 200 and a.json()["answer"]
        assert served.get("/healthz").status_code == 200
    finally:
        release.set()
        t.join(10)


def test_the_document_page_shows_its_reports_and_chunks(served):
    served.cookies.clear()
    served.get(f"/?api_key={ADMIN}")
    kb = served.get("/kb").text
    import re

    link = re.search(r'href="(/kb/doc/[0-9a-f]+)"', kb)
    assert link
    page = served.get(link.group(1))
    assert page.status_code == 200 and "parse report" in page.text and "chunk report" in page.text
    assert "Chunks (" in page.text and served.get("/kb/doc/nope").status_code == 404
