"""Contract every VectorIndex backend must pass, plus a differential test of HNSW against exact search."""

from __future__ import annotations

import numpy as np
import pytest

from ragclinic.store.exact import ExactIndex
from ragclinic.store.hnsw import HnswIndex

DIM = 16


def _unit(rng, n):
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(params=["exact", "hnsw"])
def index(request):
    return ExactIndex(DIM) if request.param == "exact" else HnswIndex(DIM, capacity=8)


def test_finds_itself_first(index):
    rng = np.random.default_rng(1)
    x = _unit(rng, 200)
    index.add(np.arange(100, 300), x)
    assert len(index) == 200
    hits = index.search(x[7], 5)
    assert hits[0][0] == 107 and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_remove_is_idempotent_and_hides_ids(index):
    rng = np.random.default_rng(2)
    x = _unit(rng, 50)
    index.add(np.arange(50), x)
    index.remove([3, 3, 999])
    index.remove([3])
    assert len(index) == 49
    assert all(i != 3 for i, _ in index.search(x[3], 10))


def test_readding_an_id_replaces_it(index):
    rng = np.random.default_rng(3)
    x = _unit(rng, 20)
    index.add(np.arange(20), x)
    index.add(np.array([5]), x[9:10])
    assert len(index) == 20
    top = index.search(x[9], 2)
    assert {i for i, _ in top} == {5, 9}


def test_allowed_prefilter_never_returns_other_ids(index):
    rng = np.random.default_rng(4)
    x = _unit(rng, 300)
    index.add(np.arange(300), x)
    allowed = {1, 50, 77, 299}
    hits = index.search(x[0], 10, allowed=allowed)
    assert {i for i, _ in hits} == allowed
    assert index.search(x[0], 10, allowed=set()) == []


def test_empty_index_returns_nothing(index):
    assert index.search(np.ones(DIM, np.float32) / 4, 5) == []


def test_hnsw_recall_against_exact():
    rng = np.random.default_rng(5)
    x = _unit(rng, 3000)
    ex, hn = ExactIndex(DIM), HnswIndex(DIM)
    ex.add(np.arange(3000), x)
    hn.add(np.arange(3000), x)
    recalls = []
    for q in _unit(rng, 50):
        truth = {i for i, _ in ex.search(q, 10)}
        recalls.append(len(truth & {i for i, _ in hn.search(q, 10)}) / 10)
    assert np.mean(recalls) >= 0.95


def test_hnsw_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(6)
    x = _unit(rng, 100)
    hn = HnswIndex(DIM)
    hn.add(np.arange(100), x)
    hn.remove([4])
    hn.save(tmp_path, 12)
    loaded, version = HnswIndex.load(tmp_path, DIM, 16, 200, 128)
    assert version == 12 and len(loaded) == 99
    assert loaded.search(x[10], 1)[0][0] == 10
    hn.save(tmp_path, 13)
    assert [p.name for p in tmp_path.glob("hnsw-v*.bin")] == ["hnsw-v13.bin"]
