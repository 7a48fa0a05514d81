"""The knowledge graph and tenants (issue 32): two tenants whose documents share a name (Project Zephyr) and differ in
others. Whatever the graph steps record in a tenant's trace — the question's entities, seeds, missing entities, paths,
added chunks, the communities' titles and points — comes from that tenant's documents only."""

from __future__ import annotations

import json

import pytest

from ragclinic import Clinic
from ragclinic.pipeline.reason.graph import community_evidence, expand

from graph.helpers import write_docs

ACME_DOCS = {
    "zephyr.md": "# Project Zephyr\n\nProject Zephyr is led by Maja Lund at the Bergen Yard. Maja Lund reports to "
                 "Erik Dahl of Hull Engineering.\n\n## Risks\n\nLate steel is the main risk for Project Zephyr at the "
                 "Bergen Yard.\n",
    "yard.md": "# Bergen Yard\n\nErik Dahl runs the Bergen Yard. Hull Engineering works with Maja Lund on every "
               "vessel.\n",
}
GLOBEX_DOCS = {
    "zephyr.md": "# Project Zephyr\n\nProject Zephyr hired Hank Scorpio. Hank Scorpio funds Project Zephyr through "
                 "Globex Corporation. Globex Corporation has owned Project Zephyr since 2020. Hank Scorpio and Frank "
                 "Grimes run Project Zephyr from Cypress Creek.\n\n## Risks\n\nA volcano lair is the main risk for "
                 "Hank Scorpio and Project Zephyr at Cypress Creek.\n",
    "lair.md": "# Cypress Creek\n\nGlobex Corporation keeps its volcano lair at Cypress Creek. Hank Scorpio and "
               "Frank Grimes meet at Cypress Creek.\n",
}
GLOBEX_ONLY = ("hank scorpio", "scorpio", "globex corporation", "cypress creek", "frank grimes", "grimes", "volcano")
ACME = {"tenant": "acme"}


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graph_tenants")
    c = Clinic.open(tmp / "kb", model=None, embedder="fake", judge="lexical", cache_dir=tmp / "cache", llm="none",
                    graph="fast", answer_cache=False)
    c.ingest([write_docs(tmp / "acme", ACME_DOCS)], tags={"tenant": "acme"})
    c.ingest([write_docs(tmp / "globex", GLOBEX_DOCS)], tags={"tenant": "globex"})
    with c:
        yield c


def _globex(c) -> tuple[set[str], set[str]]:
    docs = {d for d, in c.kb.db.conn.execute("SELECT doc_id FROM documents WHERE json_extract(tags, '$.tenant') = "
                                             "'globex'")}
    chunks = {ch for ch, in c.kb.db.conn.execute(
        f"SELECT chunk_id FROM chunks WHERE doc_id IN ({','.join('?' * len(docs))})", list(docs))}
    return docs, chunks


def _graph_records(trace) -> str:
    scope = trace.span("scope").outputs.get("graph") or {}
    gate = trace.span("gate").outputs.get("graph") or {}
    gate = {k: v for k, v in gate.items() if k not in ("cues", "entities")}  # the question's own words
    return json.dumps({"scope": scope, "gate": gate}, ensure_ascii=False).lower()


def test_the_graph_knows_the_other_tenants_names(clinic):
    """The world is what the tests below need: the admin's graph links Project Zephyr to Hank Scorpio."""
    keys = {r[0] for r in clinic.kb.db.conn.execute("SELECT entity FROM graph_mentions")}
    assert {"project zephyr", "hank scorpio", "maja lund"} <= keys


@pytest.mark.parametrize("q", [
    "What is the link between Project Zephyr and Hank Scorpio?",
    "Who works with Hank Scorpio on Project Zephyr?",
    "What are the main risks discussed across these documents?",
    "Summarize Project Zephyr across these documents.",
    "Across these reports, who are the main people of Project Zephyr?",
])
def test_a_tenants_trace_records_nothing_of_the_other_tenants_graph(clinic, q):
    res = clinic.consult(q, doctor=False, cache=False, enforced=ACME)
    docs, chunks = _globex(clinic)
    text = _graph_records(res.trace)
    assert not [w for w in GLOBEX_ONLY if w in text and w not in q.lower()], text
    assert not [c for c in chunks | docs if c.lower() in text], text
    scope = res.trace.span("scope").outputs.get("graph") or {}
    assert "hank scorpio" not in scope.get("question_entities", []) + scope.get("seeds", []) + scope.get("missing", [])


def test_question_entities_do_not_say_whether_a_name_is_elsewhere_in_the_knowledge_base(clinic):
    from ragclinic.pipeline.reason.graph_steps import admission
    from ragclinic.pipeline.context import RunContext
    from ragclinic.types import AskRequest, AskState

    state, _ = clinic.pipeline.ask("Who is Hank Scorpio?", enforced=ACME, save=False)
    ctx = RunContext(clinic.kb, clinic.settings, None, None, None)
    _, record = expand(clinic.kb, "Who is Hank Scorpio?", (), 4, admit=admission(ctx, state))
    assert record["question_entities"] == []  # globex's name, unknown to acme's graph
    _, admin = expand(clinic.kb, "Who is Hank Scorpio?", (), 4,
                      admit=admission(ctx, AskState(AskRequest("Who is Hank Scorpio?"))))
    assert admin["question_entities"] == ["hank scorpio"]


def test_community_titles_and_points_come_from_the_tenants_chunks(clinic):
    from ragclinic.pipeline.reason.graph_steps import admission
    from ragclinic.pipeline.context import RunContext

    q = "Summarize Project Zephyr across these documents."
    state, _ = clinic.pipeline.ask(q, enforced=ACME, save=False)
    ctx = RunContext(clinic.kb, clinic.settings, None, None, None)
    mapped = community_evidence(clinic.kb, q, 8, admit=admission(ctx, state))
    assert mapped
    shown = json.dumps([m.to_json() for m in mapped]).lower()
    assert not [w for w in GLOBEX_ONLY if w in shown], shown
    everything = json.dumps([m.to_json() for m in community_evidence(clinic.kb, q, 8)]).lower()
    assert "scorpio" in everything or "cypress" in everything  # the admin's map step sees both tenants


def test_the_admins_unscoped_question_still_uses_both_tenants_graph(clinic):
    res = clinic.consult("What is the link between Project Zephyr and Hank Scorpio?", doctor=False, cache=False)
    scope = res.trace.span("scope").outputs.get("graph") or {}
    assert "hank scorpio" in scope.get("question_entities", [])


# Acme names Project Zephyr and Hank Scorpio in separate documents; only Globex's document links them, so the admin's
# graph puts them in one community. Acme must not see them as one: that would tell it someone links them.
APART_ACME = {
    "zephyr.md": "# Ferry notes\n\nProject Zephyr is a new ferry. Maja Lund leads Project Zephyr.\n",
    "board.md": "# Board notes\n\nHank Scorpio joined the board. Hank Scorpio chairs the board.\n",
}
APART_GLOBEX = {
    "deal.md": "# Deal\n\nHank Scorpio funds Project Zephyr. Hank Scorpio bought Project Zephyr in 2020.\n",
}


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graph_apart")
    c = Clinic.open(tmp / "kb", model=None, embedder="fake", judge="lexical", cache_dir=tmp / "cache", llm="none",
                    graph="fast", answer_cache=False)
    c.ingest([write_docs(tmp / "acme", APART_ACME)], tags={"tenant": "acme"})
    c.ingest([write_docs(tmp / "globex", APART_GLOBEX)], tags={"tenant": "globex"})
    with c:
        yield c


def _apart_mapped(c, q: str, enforced):
    from ragclinic.pipeline.reason.graph_steps import admission
    from ragclinic.pipeline.context import RunContext

    state, _ = c.pipeline.ask(q, enforced=enforced, save=False)
    return community_evidence(c.kb, q, 8, admit=admission(RunContext(c.kb, c.settings, None, None, None), state))


def test_a_community_linked_only_by_another_tenant_is_split_into_what_the_tenant_sees_linked(apart):
    q = "What are Project Zephyr and Hank Scorpio about across these documents?"
    admin = [m.community for m in community_evidence(apart.kb, q, 8)]
    joined = [c for c in admin if {"project zephyr", "hank scorpio"} <= set(c.members)]
    assert joined  # the world: globex's deal links them in the admin's graph
    mapped = _apart_mapped(apart, q, ACME)
    assert mapped
    for m in mapped:
        assert not {"project zephyr", "hank scorpio"} <= set(m.community.members), m.to_json()
        assert not ("zephyr" in m.community.title.lower() and "scorpio" in m.community.title.lower()), m.to_json()
    ids = [m.community.community_id for m in mapped]
    assert len(ids) == len(set(ids))
    parts = {m.community.community_id: set(m.community.members) for m in mapped}
    assert any("project zephyr" in p for p in parts.values()) and any("hank scorpio" in p for p in parts.values())
    # each part's points come from chunks naming its own members
    for m in mapped:
        for p in m.points:
            text = p.text.lower()
            assert ("scorpio" in text) == ("hank scorpio" in m.community.members), m.to_json()


def test_the_tenants_own_links_still_make_one_community(apart):
    """Within what acme reads, Project Zephyr and Maja Lund are linked (one sentence): they stay together."""
    mapped = _apart_mapped(apart, "Who works on Project Zephyr across these documents?", ACME)
    assert any({"project zephyr", "maja lund"} <= set(m.community.members) for m in mapped), \
        [m.to_json() for m in mapped]
