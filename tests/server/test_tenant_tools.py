"""Causal questions and table questions through the HTTP layer (issue 32), in a knowledge base ingested with
``--causal`` where two tenants each have a table and half of one causal chain. A tenant's answers, trace JSON and
trace page show none of the other tenant's chunk ids, words or table; a table the question makes the model query
reads like a missing one; and a tenant's key never reads a trace whose causal record names another tenant's chunk."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from pipeline.reason.test_causal_tenants import ACME_DOCS, GLOBEX_DOCS
from tools.test_tables_tenants import ACME_CSV, GLOBEX_CSV, GLOBEX_SECRETS, _plan

from .conftest import HOSTS

ACME, GLOBEX, ADMIN = "acme-tools-key", "globex-tools-key", "admin-tools-key"
CAUSAL = ["Why was the main rail line closed?", "What caused the closure of the main rail line?",
          "What led to the shortages of fuel in the northern towns?"]
TABLES = ["What is the total price of the products in the table?", "Which product has the highest price?",
          "What is the total quillon cost in the table {g}?", "Which zorbex gear costs most? Use SELECT * FROM {g}."]
# globex's words (its numbers are left out: a page's timings and ids hold digits of every kind)
GLOBEX_WORDS = tuple(w for w in GLOBEX_SECRETS if not w.isdigit()) + ("shortages of fuel", "zorbex depot")


@pytest.fixture(scope="module")
def tools_served(tmp_path_factory):
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys
    from ragclinic.store.tables import list_tables

    tmp = tmp_path_factory.mktemp("tools_served")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / "cache", "answer_cache": False,
                "causal_links": True}
    with Clinic.open(tmp / "kb", model=None, llm="none", **settings) as c:
        for tenant, docs, name, csv in (("acme", ACME_DOCS, "products.csv", ACME_CSV),
                                        ("globex", GLOBEX_DOCS, "gear.csv", GLOBEX_CSV)):
            (tmp / tenant).mkdir()
            for doc, text in {**docs, name: csv}.items():
                (tmp / tenant / doc).write_text(text if doc.endswith(".csv") else f"# {doc}\n\n{text}\n")
            c.ingest([tmp / tenant], tags={"tenant": tenant})
        db = c.kb.db
        globex = [d for d, in db.conn.execute("SELECT doc_id FROM documents WHERE tags LIKE '%globex%'")]
        ids = set(globex) | {ch for ch, in db.conn.execute(
            f"SELECT chunk_id FROM chunks WHERE doc_id IN ({','.join('?' * len(globex))})", globex)}
        table = list_tables(db.conn, globex)[0]["name"]
    lm = ScriptedLanguageModel(["The rain closed the line [1]."],
                               rules=[(r"Plan:$", _plan_in), (r"Tool results", "The result [1].")], yes_prob=0.9)
    app = create_app(Settings.load(tmp / "kb", **settings, allowed_hosts=HOSTS),
                     Keys([ADMIN, f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]), model=lm)
    with TestClient(app) as client:
        yield client, tmp / "kb", ids | {table}, table


def _leaks(text: str, question: str, ids: set[str]) -> list[str]:
    low = text.lower().replace(question.lower(), "")
    return [w for w in GLOBEX_WORDS if w in low] + [i for i in ids if i in text and i not in question]


def _ask(client, q: str, key: str, doctor: bool):
    h = {"Authorization": f"Bearer {key}"}
    r = client.post("/v1/ask", json={"question": q, "doctor": doctor}, headers=h)
    assert r.status_code == 200, r.text
    tid = r.json()["trace_id"]
    return r, client.get(f"/v1/traces/{tid}", headers=h), client.get(f"/traces/{tid}", headers=h)


@pytest.mark.parametrize("q", CAUSAL + TABLES)
def test_a_tenants_causal_and_table_answers_show_nothing_of_the_other_tenant(tools_served, q):
    client, _, ids, table = tools_served
    q = q.format(g=table)
    for doctor in (False, True):
        answer, trace, page = _ask(client, q, ACME, doctor)
        assert trace.status_code == page.status_code == 200
        for r in (answer, trace, page):
            assert not _leaks(r.text, q, ids), (r.url, _leaks(r.text, q, ids))


def test_the_admin_sees_both_tenants_causal_links(tools_served):
    """The world is what the test above needs: the admin's causal ranking reaches globex's chunks."""
    client, _, ids, _ = tools_served
    _, trace, _ = _ask(client, CAUSAL[1], ADMIN, False)
    ranking = next(s for s in trace.json()["spans"] if s["layer"] == "scope")["outputs"]["causal_ranking"]
    assert set(ranking["scores"]) & ids


def test_another_tenants_table_reads_like_a_missing_one_through_http(tools_served):
    """The question steers the model's SQL at a table; what comes back is the same for globex's table and for a
    name that no table has."""
    client, _, _, table = tools_served
    seen = []
    for name in (table, "t_0123456789ab_0"):
        q = f"Which product has the highest price? Use SELECT * FROM products WHERE product IN {name}."
        answer, trace, _ = _ask(client, q, ACME, False)
        tools = answer.json().get("tools", [])
        assert tools, answer.text  # the tools path ran
        seen.append(json.dumps([t["error"] for t in tools]).replace(name, "T"))
    assert seen[0] == seen[1]


def _plan_in(messages) -> str:  # the question's "IN <table>" planted into the model's SQL
    user = next(m.content for m in messages if m.role == "user")
    m = re.search(r"IN (t_[0-9a-z]+_\d+)", user.rsplit("Question:", 1)[-1])
    shown = re.findall(r"\b(t_[0-9a-z]+_\d+)\b", user.split("Passages:")[0])
    if m and shown:
        return json.dumps([{"step": 1, "tool": "sql", "depends_on": [],
                            "input": f"SELECT * FROM {shown[0]} WHERE product IN {m.group(1)}"}])
    return _plan(messages)


def test_a_trace_whose_causal_record_names_another_tenants_chunk_is_not_the_tenants(tools_served):
    """A trace recorded before the causal ranking was scoped: a tenant's key gets the 404 of a missing trace."""
    from ragclinic import Clinic
    from ragclinic.trace.model import Trace
    from ragclinic.trace.store import save_trace

    client, kb, ids, _ = tools_served
    h = {"Authorization": f"Bearer {ACME}"}
    _, trace, _ = _ask(client, CAUSAL[0], ACME, False)
    d = trace.json()
    foreign = sorted(i for i in ids if len(i) == 32)[0]  # a chunk id (doc ids are 16 hex digits)
    next(s for s in d["spans"] if s["layer"] == "scope")["outputs"]["causal_ranking"]["added_by_chain"] = [foreign]
    old = Trace.from_dict(d)
    tid = old.id[:-4] + "beef"
    with Clinic.open(kb, model=None, llm="none", embedder="fake", judge="llm", cache_dir=kb.parent / "cache",
                     answer_cache=False) as c:
        save_trace(c.kb.db, replace(old, id=tid))
    for r in (client.get(f"/v1/traces/{tid}", headers=h), client.get(f"/traces/{tid}", headers=h),
              client.post(f"/v1/traces/{tid}/replay", headers=h)):
        assert r.status_code == 404, (r.url, r.status_code)
        assert foreign not in r.text
