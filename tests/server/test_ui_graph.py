"""The trace page shows the knowledge graph's part of an answer (issue 20 §3): the question's scope, the communities
mapped with their points, expansion's entities and paths; and says when the knowledge base has no graph."""

from __future__ import annotations

import re

import pytest

from graph.helpers import DOCS, write_docs

from .conftest import HOSTS

ADMIN = "admin-key-123"


@pytest.fixture(scope="module")
def served_graph(tmp_path_factory):
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    tmp = tmp_path_factory.mktemp("graph-ui")
    settings = {"embedder": "fake", "judge": "lexical", "cache_dir": tmp / "cache", "answer_cache": False}
    with Clinic.open(tmp / "kb", llm="none", graph="fast", **settings) as c:
        c.ingest(write_docs(tmp / "docs", DOCS))
    app = create_app(Settings.load(tmp / "kb", llm="none", **settings, allowed_hosts=HOSTS), Keys([ADMIN]), model=None)
    with TestClient(app) as client:
        client.get(f"/?api_key={ADMIN}", follow_redirects=False)
        yield client


def _trace_of(client, q: str) -> str:
    with client.stream("GET", "/ui/ask/stream", params={"q": q}) as r:
        text = "".join(r.iter_text())
    return re.search(r"/traces/([\w-]+)", text).group(1)


def test_a_global_answers_trace_page_lists_the_communities_and_their_points(served_graph):
    tid = _trace_of(served_graph, "What are the main risks discussed across these reports?")
    page = served_graph.get(f"/traces/{tid}").text
    assert "The knowledge graph" in page and "question scope <strong>global</strong>" in page
    assert "answered from <strong>documents+communities</strong>" in page  # routing by need (issue 55)
    assert re.search(r"<code>c0-[0-9a-f]{12}</code>", page) and "points mapped" in page
    assert "path <strong>global</strong>" in page  # the gate's line


def test_a_specific_answers_trace_page_shows_expansion(served_graph):
    tid = _trace_of(served_graph, "Who manages the Gdynia Plant?")
    page = served_graph.get(f"/traces/{tid}").text
    assert "entities the question names: gdynia plant" in page
