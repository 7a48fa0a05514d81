"""Scope filters and the scope-leak guarantee: no chunk outside the requested scope is ever returned."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragclinic.config import Settings
from ragclinic.errors import ConfigError
from ragclinic.ingest.runner import ingest
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.pipeline.scope import allowed_rowids
from ragclinic.types import Scope
from ragclinic.store.kb import KnowledgeBase

TENANTS = ["acme", "globex", "initech"]
TOPICS = ["bonds", "rates", "duration", "yields"]


def _kb(tmp, embedder="fake"):
    base = KnowledgeBase.open(Settings.load(tmp / "kb", embedder=embedder, cache_dir=tmp / "cache"), create=True)
    base.lock()
    return base


def test_tags_from_flags_and_sidecars_and_retagging_without_content_change(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nBonds pay coupons.\n")
    (root / "b.md").write_text("# B\n\nRates move prices.\n")
    (root / "b.md.meta.json").write_text(json.dumps({"tenant": "globex", "version": 2}))
    kb = _kb(tmp_path)
    r = ingest(kb, [root], tags={"tenant": "acme", "authority": "high"})
    assert r.added == 2 and r.failed == []  # the sidecar is not a document
    tags = {p.rsplit("/", 1)[-1]: t for _, p, _, _, t in kb.db.scope_rows()}
    assert tags == {"a.md": {"tenant": "acme", "authority": "high"},
                    "b.md": {"tenant": "globex", "authority": "high", "version": "2"}}
    v = kb.db.version
    r = ingest(kb, [root], tags={"tenant": "initech"})  # same bytes, new tags
    assert r.unchanged == 2 and kb.db.version > v
    assert {t["tenant"] for *_, t in kb.db.scope_rows()} == {"initech", "globex"}
    kb.close()


def test_bad_sidecar_fails_its_file_only(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nBonds.\n")
    (root / "b.md").write_text("# B\n\nRates.\n")
    (root / "b.md.meta.json").write_text("[1, 2]")
    kb = _kb(tmp_path)
    r = ingest(kb, [root])
    assert r.added == 1 and "sidecar" in r.failed[0]["reason"]
    kb.close()


def test_scope_parse_and_bad_date():
    s = Scope.parse({"doc": "x", "path": "*/a/*", "tenant": "acme", "from": "2024-01-01", "to": "2024-12-31"})
    assert s.doc_ids == ("x",) and s.tags == (("tenant", "acme"),) and s.date_to == dt.date(2024, 12, 31)
    assert Scope().unrestricted and not s.unrestricted
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        Scope.parse({"from": "last week"})


@pytest.fixture(scope="module")
def corpus_kb(tmp_path_factory):
    """24 documents over 3 tenants, 4 topics, 2 versions and 3 dates; every text mentions bonds and rates."""
    tmp = tmp_path_factory.mktemp("scope")
    kb = _kb(tmp)
    for i in range(24):
        tenant, topic = TENANTS[i % 3], TOPICS[i % 4]
        folder = tmp / "docs" / tenant
        folder.mkdir(parents=True, exist_ok=True)
        f = folder / f"{topic}-{i}.md"
        f.write_text(f"# {topic} {i}\n\nBonds and rates: note {i} on {topic} for {tenant}.\n")
        f.with_name(f.name + ".meta.json").write_text(json.dumps(
            {"tenant": tenant, "topic": topic, "version": str(1 + i % 2), "date": f"2024-0{1 + i % 3}-15"}))
    ingest(kb, [tmp / "docs"])
    yield kb
    kb.close()


scopes = st.fixed_dictionaries({}, optional={
    "tenant": st.sampled_from(TENANTS + ["nobody"]),
    "topic": st.sampled_from(TOPICS),
    "version": st.sampled_from(["1", "2"]),
    "path": st.sampled_from(["*/acme/*", "*/globex/*", "*rates*", "*.md", "*/nowhere/*"]),
    "from": st.sampled_from(["2024-01-01", "2024-02-01", "2024-03-01"]),
    "to": st.sampled_from(["2024-01-31", "2024-02-28", "2024-12-31"]),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=scopes, query=st.sampled_from(["bonds and rates", "duration note", "yields for acme", "检索"]),
       name=st.sampled_from(["lexical", "dense", "hybrid"]))
def test_no_chunk_outside_the_scope_is_ever_returned(corpus_kb, pairs, query, name):
    scope = Scope.parse(pairs)
    allowed = allowed_rowids(corpus_kb.db, scope)
    docs = {d: (p, k, m, t) for d, p, k, m, t in corpus_kb.db.scope_rows()}
    inside = {d for d, (p, k, m, t) in docs.items() if scope.matches(d, p, k, m, t)}
    hits = create_retriever(corpus_kb, name).retrieve(query, 50, allowed)
    assert all(h.chunk.doc_id in inside for h in hits)  # the guarantee
    if allowed is not None:
        assert {h.rowid for h in hits} <= allowed
        assert allowed == corpus_kb.db.chunk_rowids_of(sorted(inside))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=scopes, query=st.sampled_from(["bonds and rates", "duration note", "yields for acme", "检索"]),
       name=st.sampled_from(["lexical", "dense", "hybrid"]))
def test_no_chunk_outside_the_scope_ever_reaches_the_gate(corpus_kb, pairs, query, name):
    """The same guarantee end to end: whatever the policies do, the gate and generator see only in-scope chunks."""
    from ragclinic.pipeline.runner import Pipeline

    scope = Scope.parse(pairs)
    docs = {d: (p, k, m, t) for d, p, k, m, t in corpus_kb.db.scope_rows()}
    inside = {d for d, (p, k, m, t) in docs.items() if scope.matches(d, p, k, m, t)}
    pipe = Pipeline(corpus_kb, settings=corpus_kb.settings.model_copy(update={"retriever": name, "llm": "none"}))
    state, trace = pipe.ask(query, pairs, top_k=20, save=False)
    assert {p.chunk.doc_id for p in state.passages} <= inside
    gate_seen = {p["hit"]["chunk"]["doc_id"] for p in trace.span("gate").outputs["passages"]}
    assert gate_seen <= inside
    assert {c.doc_id for c in state.answer.citations} <= inside
