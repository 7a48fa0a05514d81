"""The knowledge graph through the HTTP layer (issue 32): in a knowledge base with a graph built over two tenants that
share a name (Project Zephyr), a tenant's answers, trace JSON and trace page never show the other tenant's entities,
relations, community titles or chunk ids."""

from __future__ import annotations

import pytest

from pipeline.reason.test_graph_tenants import ACME_DOCS, GLOBEX_DOCS, GLOBEX_ONLY

from .conftest import HOSTS

ACME, GLOBEX, ADMIN = "acme-graph-key", "globex-graph-key", "admin-graph-key"
QUESTIONS = ["What is the link between Project Zephyr and Hank Scorpio?", "Summarize Project Zephyr across these "
             "documents.", "Who works with Hank Scorpio on Project Zephyr?", "What are the main risks across these "
             "documents?"]


@pytest.fixture(scope="module")
def graph_served(tmp_path_factory):
    from fastapi.testclient import TestClient

    from graph.helpers import write_docs
    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    tmp = tmp_path_factory.mktemp("graph_served")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / "cache", "answer_cache": False}
    with Clinic.open(tmp / "kb", model=None, llm="none", graph="fast", **settings) as c:
        c.ingest([write_docs(tmp / "acme", ACME_DOCS)], tags={"tenant": "acme"})
        c.ingest([write_docs(tmp / "globex", GLOBEX_DOCS)], tags={"tenant": "globex"})
        db = c.kb.db
        globex = [d for d, in db.conn.execute("SELECT doc_id FROM documents WHERE tags LIKE '%globex%'")]
        chunks = [ch for ch, in db.conn.execute(f"SELECT chunk_id FROM chunks WHERE doc_id IN "
                                                f"({','.join('?' * len(globex))})", globex)]
    app = create_app(Settings.load(tmp / "kb", **settings, allowed_hosts=HOSTS),
                     Keys([ADMIN, f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]),
                     model=ScriptedLanguageModel([lambda m: "Project Zephyr is led by Maja Lund [1]."], yes_prob=0.9))
    with TestClient(app) as client:
        yield client, set(globex) | set(chunks)


def _leaks(text: str, question: str, ids: set[str]) -> list[str]:
    low = text.lower()
    return [w for w in GLOBEX_ONLY if w in low and w not in question.lower()] + [i for i in ids if i in text]


@pytest.mark.parametrize("q", QUESTIONS)
def test_a_tenants_answer_trace_and_trace_page_show_nothing_of_the_other_tenants_graph(graph_served, q):
    client, ids = graph_served
    h = {"Authorization": f"Bearer {ACME}"}
    for doctor in (False, True):
        r = client.post("/v1/ask", json={"question": q, "doctor": doctor}, headers=h)
        assert r.status_code == 200, r.text
        tid = r.json()["trace_id"]
        trace, page = client.get(f"/v1/traces/{tid}", headers=h), client.get(f"/traces/{tid}", headers=h)
        assert trace.status_code == page.status_code == 200
        assert not _leaks(r.text, q, ids) and not _leaks(trace.text, q, ids) and not _leaks(page.text, q, ids)


def test_the_admin_still_sees_both_tenants_graph(graph_served):
    client, ids = graph_served
    h = {"Authorization": f"Bearer {ADMIN}"}
    tid = client.post("/v1/ask", json={"question": QUESTIONS[1], "doctor": False}, headers=h).json()["trace_id"]
    assert _leaks(client.get(f"/v1/traces/{tid}", headers=h).text, QUESTIONS[1], ids)  # what the tenant is spared
