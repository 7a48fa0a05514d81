"""Contract every Embedder backend passes (the fake included), plus e5's language checks."""

from __future__ import annotations

import numpy as np
import pytest

from ragclinic.models.embedder import EMBEDDERS, Embedder
from ragclinic.models.factory import create_embedder


@pytest.fixture(params=["fake", "e5", "wordllama"])
def embedder(request) -> Embedder:
    return create_embedder(request.param)


def test_shapes_dtype_and_norms(embedder):
    p = embedder.embed_passages(["a passage about bonds", "检索增强生成", "x"])
    q = embedder.embed_queries(["what is a bond"])
    assert p.shape == (3, embedder.dim) and q.shape == (1, embedder.dim)
    assert p.dtype == np.float32 and q.dtype == np.float32
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
    assert embedder.embed_passages([]).shape == (0, embedder.dim)


def test_deterministic(embedder):
    a = embedder.embed_passages(["the same text twice"])
    b = embedder.embed_passages(["the same text twice"])
    assert np.allclose(a, b, atol=1e-6)


def test_related_text_scores_higher(embedder):
    q = embedder.embed_queries(["interest rate of government bonds"])[0]
    p = embedder.embed_passages(["Government bonds pay an interest rate set at issue.",
                                 "The cat sat on the warm kitchen floor."])
    assert p[0] @ q > p[1] @ q


def test_model_id_names_model_and_version(embedder):
    assert embedder.model_id and ":" in embedder.model_id or embedder.model_id.startswith("fake")


def test_e5_is_cross_lingual():
    e5 = create_embedder("e5")
    q = e5.embed_queries(["retrieval augmented generation"])[0]
    p = e5.embed_passages(["检索增强生成把搜索和语言模型结合起来。", "今天天气很好，我们去公园散步。"])
    assert p[0] @ q > p[1] @ q


def test_unknown_name_lists_valid_ones():
    with pytest.raises(Exception) as e:
        EMBEDDERS.get("nope")
    assert "e5" in str(e.value) and "wordllama" in str(e.value)
