"""The graph kept in step with the chunks (graph/sync.py, graph/communities.py): built at ingest with --graph,
replaced per changed document, communities recomputed only where entities changed, resumable after a kill."""

from __future__ import annotations

import pytest

from ragclinic.graph import communities as comm
from ragclinic.graph import sync
from ragclinic.store import graph as store

from graph.helpers import DOCS, graph_clinic


def _entities_of(conn, doc_name: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT m.entity FROM graph_mentions m JOIN documents d ON d.doc_id = m.doc_id WHERE d.path LIKE ?",
        [f"%{doc_name}"])}


def test_ingest_with_graph_stores_mentions_relations_and_cited_communities(tmp_path):
    with graph_clinic(tmp_path) as c:
        conn = c.kb.db.conn
        assert sync.mode_of(c.kb) == "fast"
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM graph_chunks").fetchone()[0] == chunks
        assert {"nordtek components", "piotr nowak", "gdynia plant"} <= _entities_of(conn, "")
        found = store.communities(conn)
        assert found and all(c0.points for c0 in found)
        chunk_ids = {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}
        assert all(p.chunk_id in chunk_ids for c0 in found for p in c0.points)
        assert all(c0.embedding is not None for c0 in found)  # the fake embedder embedded the summaries
        assert store.dirty_entities(conn) == set()


def test_without_graph_nothing_is_extracted(tmp_path):
    with graph_clinic(tmp_path, mode="") as c:
        assert sync.mode_of(c.kb) == ""
        assert c.kb.db.conn.execute("SELECT COUNT(*) FROM graph_mentions").fetchone()[0] == 0


def test_a_changed_document_replaces_its_entities_and_only_its_communities_are_recomputed(tmp_path, monkeypatch):
    monkeypatch.setattr(comm, "FULL_SHARE", 1.0)  # this small graph would otherwise be partitioned whole again
    with graph_clinic(tmp_path) as c:
        conn = c.kb.db.conn
        before = {x.community_id: x for x in store.communities(conn, level=0)}
        # the teams document changes: Erik Dahl leaves, Sara Holm arrives
        (tmp_path / "docs" / "teams.md").write_text(DOCS["teams.md"].replace("Erik Dahl", "Sara Holm"), "utf-8")
        version = c.kb.db.version
        res = c.ingest([tmp_path / "docs"])
        assert res.updated == 1
        assert "erik dahl" not in _entities_of(conn, "teams.md") and "sara holm" in _entities_of(conn, "teams.md")
        assert res.graph["dropped"] >= 1 and res.graph["extracted"] >= 1
        after = {x.community_id: x for x in store.communities(conn, level=0)}
        assert not any("erik dahl" in x.members for x in after.values())
        untouched = [cid for cid, x in before.items() if "erik dahl" not in x.members and
                     not set(x.members) & _entities_of(conn, "teams.md")]
        assert untouched and all(cid in after for cid in untouched)  # kept as they were, summaries and all
        assert res.graph["communities"]["full"] is False
        assert c.kb.db.version > version


def test_a_removed_document_takes_its_graph_rows_with_it(tmp_path):
    with graph_clinic(tmp_path) as c:
        conn = c.kb.db.conn
        (tmp_path / "docs" / "incident-gdynia.md").unlink()
        c.ingest([tmp_path / "docs"], sync=True)
        assert _entities_of(conn, "incident-gdynia.md") == set()
        assert store.stale_chunks(conn) == []
        assert conn.execute("SELECT COUNT(*) FROM graph_chunks").fetchone()[0] == \
            conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def test_a_killed_extraction_resumes_with_the_chunks_it_had_not_done(tmp_path):
    with graph_clinic(tmp_path, mode="") as c:
        kb = c.kb
        calls = []
        real = sync._extractor

        def dying(mode, model):
            extract = real(mode, model)

            def run(todo):
                if calls:
                    raise KeyboardInterrupt  # the second batch is killed
                calls.append(len(todo))
                return extract(todo)
            return run

        kb.lock()
        try:
            sync._extractor, saved = dying, sync._extractor
            with pytest.raises(KeyboardInterrupt):
                sync.sync(kb, "fast", batch=1)
            sync._extractor = saved
            assert kb.db.conn.execute("SELECT COUNT(*) FROM graph_chunks").fetchone()[0] == 1
            res = sync.sync(kb)
        finally:
            sync._extractor = real
            kb.unlock()
        total = kb.db.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        assert res.extracted == total - 1
        assert store.communities(kb.db.conn)


def test_partition_is_deterministic_and_hubs_stay_out(tmp_path):
    with graph_clinic(tmp_path) as c:
        g = comm.load(c.kb.db.conn)
        assert comm.partition(g, g.nodes()) == comm.partition(g, g.nodes())
        g.hubs = {"nordtek components"}
        assert not any("nordtek components" in p for p in comm.partition(g, list(g.names)))


def test_an_unknown_mode_is_refused_with_the_valid_ones(tmp_path):
    from ragclinic.errors import ConfigError

    with pytest.raises(ConfigError, match="fast, model"):
        sync.check_mode("fancy")


def test_many_communities_get_a_level_above_them_with_parents(tmp_path, monkeypatch):
    monkeypatch.setattr(comm, "HIERARCHY_MIN", 1)
    with graph_clinic(tmp_path) as c:
        conn = c.kb.db.conn
        level0, level1 = store.communities(conn, level=0), store.communities(conn, level=1)
        assert len(level0) >= 2 and level1
        ids1 = {x.community_id for x in level1}
        assert all(x.parent in ids1 for x in level0 if x.parent) and any(x.parent for x in level0)
        for top in level1:  # a level-1 community holds its children's members and cites their points
            children = [x for x in level0 if x.parent == top.community_id]
            assert set(top.members) == {e for ch in children for e in ch.members}
            assert top.points and {p.chunk_id for p in top.points} <= {p.chunk_id for ch in children for p in ch.points}


def test_no_community_is_larger_than_max_size_even_where_leiden_keeps_one_whole():
    import igraph
    import leidenalg

    g = igraph.Graph.Erdos_Renyi(n=600, m=6000)  # dense and random: Leiden returns parts of hundreds
    g.es["weight"] = [1.0] * g.ecount()
    parts = comm._split(g, list(range(600)), leidenalg, 0)
    assert max(map(len, parts)) <= comm.MAX_SIZE
    assert sorted(v for p in parts for v in p) == list(range(600))  # every vertex in exactly one part
