"""Contract every Retriever passes (lexical, dense, hybrid and the fake): at most k hits, best first, each
naming its chunk and the retriever that found it; the allowed rows applied inside the search; the same
answer twice."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.pipeline.retrieve import RETRIEVERS, create_retriever
from ragclinic.pipeline.retrieve.base import Retriever
from ragclinic.pipeline.retrieve.fake import FakeRetriever

QUERY = "What is the usual proxy for the risk-free rate?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = build_kb(tmp_path_factory.mktemp("contract"), BOND_DOCS)
    yield base
    base.close()


@pytest.fixture(params=["lexical", "dense", "hybrid", "fake"])
def retriever(request, kb) -> Retriever:
    return FakeRetriever(kb) if request.param == "fake" else create_retriever(kb, request.param)


def test_at_most_k_hits_best_first(retriever):
    hits = retriever.retrieve(QUERY, 3)
    assert 0 < len(hits) <= 3
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert "treasury bills" in hits[0].chunk.text  # the chunk that answers ranks first on this corpus
    assert len({h.chunk.id for h in hits}) == len(hits)


def test_each_hit_names_its_chunk_and_retriever(retriever, kb):
    for h in retriever.retrieve(QUERY, 5):
        assert h.chunk.id and h.chunk.text and h.rowid in kb.db.chunks_by_rowid([h.rowid])
        assert h.sources and all(s.retriever in (retriever.name, "lexical", "dense") for s in h.sources)


def test_allowed_rows_apply_inside_the_search(retriever, kb):
    everything = retriever.retrieve(QUERY, 10)
    keep = {h.rowid for h in everything[1:]}  # without the best hit
    inside = retriever.retrieve(QUERY, 10, keep)
    assert inside and {h.rowid for h in inside} <= keep
    assert retriever.retrieve(QUERY, 10, set()) == []


def test_deterministic(retriever):
    assert [h.chunk.id for h in retriever.retrieve(QUERY, 5)] == [h.chunk.id for h in retriever.retrieve(QUERY, 5)]


def test_registry_lists_the_built_ins_and_names_the_valid_ones(kb):
    assert {"lexical", "dense", "hybrid"} <= set(RETRIEVERS.names()) and "fake" not in RETRIEVERS.names()
    with pytest.raises(Exception, match="lexical"):
        create_retriever(kb, "nonesuch")
