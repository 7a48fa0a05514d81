"""Causal ranking and tenants (issue 32): the cause → effect links of a knowledge base ingested with ``--causal`` are
stored for every tenant's chunks. A question sees only the links of chunks its scope admits — its key's tenant and
its scope filters — so a tenant's scope span (``causal_ranking``: the chunks added by the chain, the scores' keys)
names none of another tenant's chunks, its ranking does not move with another tenant's links, and a chain never
brings in a chunk the scope filters leave out. ``trace_outside`` reads the causal record too."""

from __future__ import annotations

import json

import pytest

from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.trace.model import Trace
from ragclinic.trace.owner import trace_outside

# acme states the first half of a chain, globex the second: across documents the two halves join on "the closure
# of the main rail line" (two shared content words), so the admin's chain runs rain → closure → shortages
ACME_DOCS = {"rain.md": "Heavy rain in March flooded the river valley. This led to the closure of the main rail "
                        "line.",
             "line.md": "The main rail line runs along the river valley to the northern towns."}
GLOBEX_DOCS = {"fuel.md": "The closure of the main rail line caused shortages of fuel in the northern towns.",
               "depot.md": "Shortages of fuel in the northern towns led to the closure of the zorbex depot."}
QUESTIONS = ["Why was the main rail line closed?", "What caused the closure of the main rail line?",
             "What led to the shortages of fuel in the northern towns?"]
ACME = {"tenant": "acme"}


def _write(root, docs):
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    return root


def _open(tmp, worlds: dict[str, dict[str, str]]) -> Clinic:
    c = Clinic.open(tmp / "kb", model=ScriptedLanguageModel(["The rain closed the line [1]."], yes_prob=0.9),
                    embedder="fake", judge="llm", cache_dir=tmp / "cache", causal_links=True, answer_cache=False)
    for tenant, docs in worlds.items():
        c.ingest([_write(tmp / tenant, docs)], tags={"tenant": tenant})
    return c


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    with _open(tmp_path_factory.mktemp("causal_both"), {"acme": ACME_DOCS, "globex": GLOBEX_DOCS}) as c:
        yield c


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    with _open(tmp_path_factory.mktemp("causal_alone"), {"acme": ACME_DOCS}) as c:
        yield c


def _ids(c, tenant: str) -> set[str]:
    rows = c.kb.db.conn.execute("SELECT c.chunk_id, c.doc_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                                "WHERE json_extract(d.tags, '$.tenant') = ?", [tenant]).fetchall()
    return {x for r in rows for x in r}


def test_the_admins_chain_joins_both_tenants(both):
    """The world is what the tests below need: unscoped, the chain pulls globex's chunks in."""
    res = both.consult(QUESTIONS[1], doctor=False, cache=False)
    ranking = res.trace.span("scope").outputs["causal_ranking"]
    assert set(ranking["scores"]) & _ids(both, "globex")


@pytest.mark.parametrize("q", QUESTIONS)
def test_a_tenants_causal_record_names_no_other_tenants_chunk(both, q):
    res = both.consult(q, doctor=False, cache=False, enforced=ACME)
    scope = res.trace.span("scope").outputs
    ranking = scope["causal_ranking"]
    foreign = _ids(both, "globex")
    assert not set(ranking["added_by_chain"]) & foreign
    assert not set(ranking["scores"]) & foreign
    assert not foreign & {p["doc"]["doc_id"] for p in scope["passages"]}
    text = json.dumps(res.trace.to_dict()) + json.dumps(res.payload)
    assert not [i for i in foreign if i in text]
    assert "zorbex" not in text.lower() and "shortages of fuel" not in text.lower().replace(q.lower(), "")
    assert trace_outside(both.kb.db, res.trace) == []


@pytest.mark.parametrize("q", QUESTIONS)
def test_a_tenants_causal_ranking_does_not_move_with_another_tenants_links(both, alone, q):
    """The chain part of each score (the link match) is the same whether or not globex's links are stored; the
    similarity part is left out (BM25's statistics span the index: a known limit, docs/server.md)."""
    def chain_parts(c):  # by the chunk's text: chunk ids hash the source path, which differs between the two
        ranking = c.consult(q, doctor=False, cache=False, enforced=ACME).trace.span("scope").outputs["causal_ranking"]
        text = dict(c.kb.db.conn.execute("SELECT chunk_id, text FROM chunks"))
        return ({text.get(cid, cid): v[2] for cid, v in ranking["scores"].items()},
                sorted(text.get(cid, cid) for cid in ranking["added_by_chain"]))

    assert chain_parts(both) == chain_parts(alone)


def test_a_chain_brings_in_no_chunk_outside_the_scope_filters(tmp_path):
    """Within one tenant (the admin, no enforced tags): a scope filter on a tag is kept by the chunks the chain adds."""
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel(["The rain closed the line [1]."], yes_prob=0.9),
                    embedder="fake", judge="llm", cache_dir=tmp_path / "cache", causal_links=True, answer_cache=False)
    with c:
        c.ingest([_write(tmp_path / "a", ACME_DOCS)], tags={"team": "a"})
        c.ingest([_write(tmp_path / "b", GLOBEX_DOCS)], tags={"team": "b"})
        res = c.consult(QUESTIONS[1], {"team": "a"}, doctor=False, cache=False)
        b = {x for r in c.kb.db.conn.execute("SELECT c.chunk_id, c.doc_id FROM chunks c JOIN documents d ON "
                                             "d.doc_id = c.doc_id WHERE json_extract(d.tags, '$.team') = 'b'")
             for x in r}
    scope = res.trace.span("scope").outputs
    assert not b & {p["doc"]["doc_id"] for p in scope["passages"]}
    assert not b & set(scope["causal_ranking"]["added_by_chain"]) and not b & set(scope["causal_ranking"]["scores"])
    assert not b & {lk["chunk_id"] for lk in res.payload.get("causal_chain", [])}


def test_trace_outside_reads_the_causal_record(both):
    """A trace recorded before the fix (or by a path that slipped it) that names another tenant's chunk only in its
    causal record is outside the tenant: the trace routes then answer 404 for it."""
    res = both.consult(QUESTIONS[0], doctor=False, cache=False, enforced=ACME)
    assert trace_outside(both.kb.db, res.trace) == []
    globex_chunk = _globex_chunk(both)
    for field in ("added_by_chain", "scores"):
        d = res.trace.to_dict()
        scope = next(s for s in d["spans"] if s["layer"] == "scope")
        ranking = scope["outputs"]["causal_ranking"]
        if field == "added_by_chain":
            ranking["added_by_chain"] = [globex_chunk]
        else:
            ranking["scores"] = {globex_chunk: [0.5, 0.0, 1.0, 0.0]}
        assert trace_outside(both.kb.db, Trace.from_dict(d)), field


def _globex_chunk(c) -> str:
    return c.kb.db.conn.execute("SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE "
                                "json_extract(d.tags, '$.tenant') = 'globex' ORDER BY c.chunk_id").fetchone()[0]
