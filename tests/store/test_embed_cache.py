from __future__ import annotations

import numpy as np

from ragclinic.models.fake import FakeEmbedder
from ragclinic.store.embed_cache import EmbeddingCache, embed_with_cache


def test_never_embeds_the_same_text_twice(tmp_path):
    emb = FakeEmbedder()
    cache = EmbeddingCache(tmp_path)
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon zeta"]
    m1, n1 = embed_with_cache(emb, cache, texts, batch_size=2)
    assert n1 == 3 and emb.calls == 3  # the repeated text is embedded once
    assert np.allclose(m1[0], m1[2])
    m2, n2 = embed_with_cache(emb, cache, texts, batch_size=2)
    assert n2 == 0 and emb.calls == 3
    assert np.allclose(m1, m2)


def test_cache_is_shared_across_instances_and_keyed_by_model(tmp_path):
    emb = FakeEmbedder()
    embed_with_cache(emb, EmbeddingCache(tmp_path), ["one text"], 4)
    again = EmbeddingCache(tmp_path)
    assert again.count(emb.model_id) == 1 and again.count("other-model") == 0
    assert again.get_many("other-model", [b"x"], emb.dim) == {}


def test_works_without_a_cache():
    m, n = embed_with_cache(FakeEmbedder(), None, ["a", "b"], 8)
    assert m.shape == (2, 64) and n == 2
