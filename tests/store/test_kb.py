"""Knowledge base: derived indexes caught up or rebuilt from SQLite, exact vs HNSW, the writer lock."""

from __future__ import annotations

import pytest

from ragclinic.errors import KnowledgeBaseLocked
from ragclinic.ingest.runner import ingest
from ragclinic.store.hnsw import HnswIndex
from ragclinic.store.kb import KnowledgeBase


def _docs(root, n=6, extra=""):
    root.mkdir(exist_ok=True)
    for i in range(n):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nDocument {i} is about topic{i} and bonds. {extra}\n")
    return root


def _open(settings):
    kb = KnowledgeBase.open(settings, create=True)
    kb.lock()
    return kb


def test_lost_stamp_rebuilds_and_old_stamp_catches_up(make_settings, tmp_path):
    kb = _open(make_settings())
    root = _docs(tmp_path / "docs")
    ingest(kb, [root])
    v1 = kb.db.version
    assert kb.lexical().stamp() == v1
    (kb.folder / "lexical" / "stamp.json").unlink()
    assert kb.sync_indexes()["lexical"] == "rebuild"
    assert len(kb.lexical()) == kb.stats()["chunks"]

    # Simulate a crash after the SQLite commit, before the index update: stamp stays at v1.
    (root / "d0.md").write_text("# Doc 0\n\nRewritten entirely: now about swaps.\n")
    (root / "d9.md").write_text("# Doc 9\n\nA new document about futures.\n")
    kb.sync_indexes = lambda: {}  # type: ignore[method-assign]  (the crash: no sync after commit)
    ingest(kb, [root])
    assert kb.lexical().stamp() == v1 and kb.db.version > v1
    kb.close()
    kb = KnowledgeBase.open(kb.settings)  # opening catches up from the change log
    assert kb.lexical().stamp() == kb.db.version
    assert len(kb.lexical()) == kb.stats()["chunks"]
    assert kb.lexical().search(["swap"], 3) and kb.lexical().search(["futur"], 3)
    assert not kb.lexical().search(["topic0"], 3)
    kb.close()


def test_stamp_older_than_pruned_log_forces_rebuild(make_settings, tmp_path):
    kb = _open(make_settings())
    ingest(kb, [_docs(tmp_path / "docs")])
    kb.lexical().set_stamp(0)
    assert kb.db.pruned_upto() > 0
    assert kb.sync_indexes()["lexical"] == "rebuild"
    assert len(kb.lexical()) == kb.stats()["chunks"]
    kb.close()


def test_hnsw_above_threshold_matches_exact(make_settings, tmp_path):
    root = _docs(tmp_path / "docs", n=30)
    exact_kb = _open(make_settings())
    ingest(exact_kb, [root])
    hnsw_kb = _open(make_settings(kb=tmp_path / "kb-hnsw", dense_exact_max=5))
    ingest(hnsw_kb, [root])
    assert list((hnsw_kb.folder / "dense").glob("hnsw-v*.bin"))
    assert isinstance(hnsw_kb.dense(), HnswIndex)
    q = exact_kb.embedder.embed_queries(["topic7 bonds"])[0]
    ex = exact_kb.dense().search(q, 5)
    hn = hnsw_kb.dense().search(q, 5)
    texts = lambda kb, hits: [kb.db.chunk_rows([r])[r]["text"] for r, _ in hits]  # noqa: E731
    assert texts(exact_kb, ex)[0] == texts(hnsw_kb, hn)[0]
    # a change is caught up into the persisted HNSW index
    (root / "d3.md").unlink()
    ingest(hnsw_kb, [root], sync=True)
    hnsw_kb.close()
    again = KnowledgeBase.open(hnsw_kb.settings)
    assert again.sync_indexes()["dense"] == "fresh"
    assert len(again.dense()) == again.stats()["chunks"]
    allowed = [r for r, _ in again.dense().search(q, 3)]
    assert {r for r, _ in again.dense().search(q, 10, allowed=allowed)} == set(allowed)
    again.close()
    exact_kb.close()


def test_second_writer_is_refused(make_settings, tmp_path):
    kb = _open(make_settings())
    other = KnowledgeBase.open(kb.settings)
    with pytest.raises(KnowledgeBaseLocked, match="another ragclinic process"):
        other.lock()
    kb.close()
    other.lock()
    other.close()


def test_lexical_only_kb_has_no_dense_index(make_settings, tmp_path):
    kb = _open(make_settings(embedder="none"))
    ingest(kb, [_docs(tmp_path / "docs")])
    assert kb.db.conn.execute("SELECT COUNT(*) FROM chunks WHERE embedding IS NOT NULL").fetchone()[0] == 0
    with pytest.raises(Exception, match="embedder='none'"):
        kb.dense()
    assert kb.lexical().search(["topic1"], 3)
    kb.close()


def test_a_damaged_lexical_index_is_set_aside_and_rebuilt_on_open(tmp_path):
    from helpers import BOND_DOCS, build_kb
    from ragclinic.store.kb import KnowledgeBase

    kb = build_kb(tmp_path, BOND_DOCS)
    settings, hits_before = kb.settings, len(kb.lexical().search(["rate"], 10))
    kb.close()
    lexical = tmp_path / "kb" / "lexical"
    for f in lexical.iterdir():
        if f.name == "meta.json":
            f.write_text("{ not json")  # tantivy cannot open this
    reopened = KnowledgeBase.open(settings)
    try:
        assert reopened.repaired and "rebuilt from the database" in reopened.repaired[0]
        assert len(reopened.lexical().search(["rate"], 10)) == hits_before > 0
        assert any(p.name.startswith("lexical.damaged-") for p in (tmp_path / "kb").iterdir())
        assert reopened.db.integrity_ok()
    finally:
        reopened.close()
