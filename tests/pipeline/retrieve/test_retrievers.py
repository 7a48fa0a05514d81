"""Contract every Retriever passes, reciprocal rank fusion by hand, and the allowed-rows pre-filter."""

from __future__ import annotations

import pytest

from ragclinic.errors import ConfigError
from ragclinic.ingest.runner import ingest
from ragclinic.pipeline.retrieve import RETRIEVERS, create_retriever, rrf
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Chunk, Hit, SourceScore

DOCS = {
    "bonds.md": "# Bonds\n\nThe risk-free rate is the return on a riskless investment such as treasury bills.\n",
    "duration.md": "# Duration\n\nDuration measures how much a bond price moves when interest rates change.\n",
    "rag.md": "# RAG\n\nRetrieval augmented generation grounds answers in retrieved passages.\n",
    "zh.md": "# 检索\n\n检索增强生成先检索相关段落，再让语言模型依据这些段落作答。\n",
    "cats.md": "# Cats\n\nThe cat sat on the warm kitchen floor all afternoon.\n",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    from ragclinic.config import Settings

    root = tmp_path_factory.mktemp("docs")
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    settings = Settings.load(tmp_path_factory.mktemp("kb"), embedder="fake",
                             cache_dir=tmp_path_factory.mktemp("cache"))
    base = KnowledgeBase.open(settings, create=True)
    base.lock()
    ingest(base, [root])
    yield base
    base.close()


def _rowid_of(kb, word):
    return next(r for r, t in kb.db.iter_chunk_texts() if word in t)


@pytest.fixture(params=["lexical", "dense", "hybrid"])
def retriever(request, kb):
    return create_retriever(kb, request.param)


def test_finds_the_relevant_chunk_first(retriever, kb):
    hits = retriever.retrieve("risk-free rate treasury bills", 3)
    assert hits and "risk-free" in hits[0].chunk.text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.chunk.text == kb.db.chunk_rows([h.rowid])[h.rowid]["text"] for h in hits)


def test_each_hit_says_who_found_it_and_at_which_rank(retriever):
    for hit in retriever.retrieve("bond interest rates", 5):
        assert hit.sources and all(s.rank >= 1 for s in hit.sources)
        assert set(hit.retrievers) <= {"lexical", "dense"}


def test_allowed_rows_are_a_prefilter(retriever, kb):
    only = {_rowid_of(kb, "cat sat")}
    hits = retriever.retrieve("risk-free rate", 5, allowed=only)
    assert {h.rowid for h in hits} <= only
    assert retriever.retrieve("risk-free rate", 5, allowed=set()) == []


def test_k_bounds_the_result(retriever):
    assert len(retriever.retrieve("the", 2)) <= 2


def test_chinese_query_finds_the_chinese_chunk(kb):
    hits = create_retriever(kb, "lexical").retrieve("检索增强生成", 2)
    assert hits and "检索增强生成" in hits[0].chunk.text


def _hit(rowid, name, rank):
    chunk = Chunk(id=f"c{rowid}", doc_id="d", text=str(rowid), start=0, end=1, section=(), page=None,
                  language="en", tokens=1, ordinal=0)
    return Hit(chunk=chunk, score=0.0, sources=(SourceScore(name, rank, 1.0 / rank),), rowid=rowid)


def test_rrf_by_hand():
    lexical = [_hit(1, "lexical", 1), _hit(2, "lexical", 2)]
    dense = [_hit(2, "dense", 1), _hit(3, "dense", 2)]
    fused = rrf({"lexical": lexical, "dense": dense}, {"lexical": 1.0, "dense": 1.0}, rrf_k=60, k=10)
    assert [h.rowid for h in fused] == [2, 1, 3]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61) and fused[2].score == pytest.approx(1 / 62)
    assert fused[0].retrievers == ("lexical", "dense")
    weighted = rrf({"lexical": lexical, "dense": dense}, {"lexical": 3.0, "dense": 1.0}, rrf_k=60, k=1)
    assert [h.rowid for h in weighted] == [2]  # 3/62 + 1/61 beats 3/61
    # w/61 > w/62 + 1/61 needs w > 62: a lexical weight of 100 lets its rank 1 win outright
    assert rrf({"lexical": lexical, "dense": dense}, {"lexical": 100.0, "dense": 1.0}, 60, 1)[0].rowid == 1


def test_dense_on_a_lexical_only_kb_names_the_fix(tmp_path):
    from ragclinic.config import Settings

    base = KnowledgeBase.open(Settings.load(tmp_path / "kb", embedder="none"), create=True)
    with pytest.raises(ConfigError, match="embedder='none'"):
        create_retriever(base, "dense")
    assert [p.name for p in create_retriever(base, "hybrid").parts] == ["lexical"]
    base.close()


def test_unknown_retriever_lists_the_valid_names(kb):
    with pytest.raises(ConfigError, match="dense, hybrid, lexical, question_terms, questions"):
        create_retriever(kb, "bm42")
    assert RETRIEVERS.names() == ["dense", "hybrid", "lexical", "question_terms", "questions"]


@pytest.mark.parametrize("query", ["risk-free rate", "bond price", "检索 段落", "cat floor", "nothing matches zzz"])
def test_hybrid_fast_path_equals_fusion_of_full_hits(kb, query):
    """Fusing (rowid, score) lists and loading only the winners gives exactly rrf() over full Hit lists."""
    h = create_retriever(kb, "hybrid")
    slow = rrf({p.name: p.retrieve(query, h.depth, None) for p in h.parts}, h.weights, h.rrf_k, 3, h.method)
    assert [(x.rowid, x.score, x.sources) for x in h.retrieve(query, 3)] == \
        [(x.rowid, x.score, x.sources) for x in slow]


def test_convex_fusion_by_hand():
    from ragclinic.pipeline.retrieve.hybrid import fuse

    lexical = [(1, 12.0), (2, 8.0), (3, 4.0)]  # min-max → 1.0, 0.5, 0.0
    dense = [(3, 0.9), (1, 0.7), (4, 0.5)]  # → 1.0, 0.5, 0.0
    f = fuse({"lexical": lexical, "dense": dense}, "convex", {"lexical": 1.0, "dense": 1.0})
    assert f == pytest.approx({1: 0.75, 2: 0.25, 3: 0.5, 4: 0.0})
    w = fuse({"lexical": lexical, "dense": dense}, "convex", {"lexical": 3.0, "dense": 1.0})
    assert w[1] == pytest.approx(0.75 * 1.0 + 0.25 * 0.5)
    assert fuse({"lexical": [(9, 5.0)]}, "convex", {}) == {9: 1.0}  # one candidate: normalised to 1
    with pytest.raises(ConfigError, match="valid: convex, rrf"):
        fuse({}, "borda", {})


@pytest.mark.parametrize("method", ["convex", "rrf"])
def test_hybrid_fast_path_matches_for_both_fusions(kb, method):
    from ragclinic.pipeline.retrieve.hybrid import HybridRetriever

    h = HybridRetriever(kb)
    h.method = method
    slow = rrf({p.name: p.retrieve("risk-free bond rates", h.depth, None) for p in h.parts}, h.weights, h.rrf_k, 4,
               method)
    assert [x.rowid for x in h.retrieve("risk-free bond rates", 4)] == [x.rowid for x in slow]
