"""The tantivy lexical index: contract behaviour and a differential BM25 check against a reference."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from ragclinic.store.lexical import TantivyIndex

DOCS = {
    1: "retriev augment generat combin search with languag model",
    2: "risk free rate bond yield risk",
    3: "检索 增强 生成 retriev",
    4: "languag model hallucin when context is noisi",
    5: "bond price fall when rate rise rate rate",
}


@pytest.fixture
def index(tmp_path):
    ix = TantivyIndex(tmp_path / "lex")
    ix.add(DOCS.items())
    ix.commit()
    return ix


def _bm25(query, docs, k1=1.2, b=0.75):
    """Reference BM25 (Robertson/Lucene idf), as tantivy computes it."""
    n = len(docs)
    lens = {i: len(t.split()) for i, t in docs.items()}
    avg = sum(lens.values()) / n
    scores = {}
    for i, text in docs.items():
        tf = Counter(text.split())
        s = 0.0
        for term in set(query):
            df = sum(1 for t in docs.values() if term in t.split())
            if not df or not tf[term]:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * lens[i] / avg))
        if s:
            scores[i] = s
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


@pytest.mark.parametrize("query", [["rate"], ["retriev"], ["risk", "rate"], ["languag", "model"], ["检索"]])
def test_scores_match_reference_bm25(index, query):
    got = index.search(query, 10)
    want = _bm25(query, DOCS)
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, g), (_, w) in zip(got, want):
        assert g == pytest.approx(w, rel=1e-3)


def test_prefilter_restricts_inside_the_search(index):
    assert [i for i, _ in index.search(["rate"], 10, allowed=[5])] == [5]
    assert index.search(["rate"], 10, allowed=[]) == []
    full = dict(index.search(["rate"], 10))
    assert dict(index.search(["rate"], 10, allowed=[2, 5])) == pytest.approx(full)


def test_replay_is_idempotent_and_remove_works(index):
    index.add([(2, "risk free rate bond yield risk")])  # replayed add: replaces, no duplicate
    index.remove([5, 42])
    index.commit()
    assert len(index) == 4
    assert [i for i, _ in index.search(["rate"], 10)] == [2]


def test_stamp_round_trip_and_reopen(index, tmp_path):
    assert index.stamp() is None
    index.set_stamp(7)
    again = TantivyIndex(tmp_path / "lex")
    assert again.stamp() == 7 and len(again) == 5


def test_empty_query_returns_nothing(index):
    assert index.search([], 10) == []
