"""The generator's hidden state read through llama.cpp's eval callback (issue 36), with the real local-small model:
the same greedy text and probabilities with the callback on and off; the vector is the last prompt token's (the
same as a separate evaluation of the prompt alone), whatever the KV cache held before; the worker carries it."""

from __future__ import annotations

import numpy as np
import pytest

from ragclinic.config import Settings
from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.structured import SCHEMAS

pytestmark = pytest.mark.slow

ASK = [Message("system", "Answer the question from the numbered sources. Reply in JSON."),
       Message("user", "[1] Duration measures how much a bond price moves when rates change.\n\n"
                       "Question: What does duration measure?")]
NONE = [Message("system", "Answer the question from the numbered sources. Reply in JSON."),
        Message("user", "[1] The coupon is the yearly interest a bond pays.\n\nQuestion: Who founded the bank?")]
LAYERS = (4, 12, 23)  # the 0.5B model has 24 layers; 23 is the last (llama.cpp keeps only the output rows there)


def _model(tmp_path_factory, capture: bool):
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(tmp_path_factory.mktemp("kb") / "kb", llm="local-small", llm_n_ctx=2048,
                      llm_isolation="inline", llm_hidden_capture=capture)
    return LlamaModel(WEIGHTS["local-small"], s)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _model(tmp_path_factory, False)


@pytest.fixture(scope="module")
def capturing(tmp_path_factory):
    return _model(tmp_path_factory, True)


def test_greedy_output_and_probabilities_are_the_same_with_the_callback(plain, capturing):
    for schema in (None, SCHEMAS["short"]):
        a = plain.chat(ASK, max_tokens=24, schema=schema)
        b = capturing.chat(ASK, max_tokens=24, schema=schema, hidden_layers=LAYERS)
        c = capturing.chat(NONE, max_tokens=24, schema=schema)  # the callback installed, nothing asked for
        assert a.text == b.text and a.completion_tokens == b.completion_tokens
        assert c.text == plain.chat(NONE, max_tokens=24, schema=schema).text and c.hidden == {}
    assert plain.next_token_probs(ASK, ["yes", "no"]) == capturing.next_token_probs(ASK, ["yes", "no"])


def test_the_vectors_are_the_last_prompt_tokens_and_do_not_depend_on_the_cache(capturing):
    capturing._memo.clear()
    first = capturing.chat(ASK, max_tokens=4, hidden_layers=LAYERS).hidden
    assert sorted(first) == list(LAYERS) and all(v.shape == (896,) and np.isfinite(v).all() for v in first.values())
    capturing._memo.clear()
    capturing.chat(NONE, max_tokens=4)  # other tokens in the cache, the same system turn live
    capturing._memo.clear()
    again = capturing.chat(ASK, max_tokens=4, hidden_layers=LAYERS).hidden
    for n in LAYERS:
        np.testing.assert_allclose(again[n], first[n], rtol=0, atol=1e-4)
    other = capturing.chat(NONE, max_tokens=4, hidden_layers=LAYERS).hidden
    assert not np.allclose(other[12], first[12], atol=1e-2)  # another prompt, another state
    # the generated tokens did not overwrite it: a longer reply reports the same vectors
    capturing._memo.clear()
    longer = capturing.chat(ASK, max_tokens=20, hidden_layers=LAYERS).hidden
    np.testing.assert_allclose(longer[12], first[12], rtol=0, atol=1e-4)


def test_a_structured_answer_reads_the_state_where_the_status_is_decided(capturing):
    """With field decoding, the last evaluated token before the first sampled one closes '{"status": "'."""
    capturing._memo.clear()
    free = capturing.chat(ASK, max_tokens=4, hidden_layers=(12,)).hidden[12]
    structured = capturing.chat(ASK, max_tokens=4, schema=SCHEMAS["short"], hidden_layers=(12,)).hidden[12]
    assert not np.allclose(free, structured, atol=1e-2)


def test_a_model_loaded_without_the_callback_reports_no_hidden_state(plain):
    assert plain.chat(ASK, max_tokens=4, hidden_layers=LAYERS).hidden == {}


def test_the_worker_carries_the_vectors(tmp_path):
    from ragclinic.models.local import create_local

    s = Settings.load(tmp_path / "kb", llm="local-small", llm_n_ctx=2048, llm_hidden_capture=True,
                      llm_warm_seconds=0)
    lm = create_local("local-small", s)
    done = lm.chat(ASK, max_tokens=4, hidden_layers=(12,))
    assert done.hidden[12].dtype == np.float32 and done.hidden[12].shape == (896,)
    assert lm.chat(ASK, max_tokens=4).hidden == {}


def test_a_node_that_cannot_be_read_never_stops_the_computation(caplog):
    """A failure inside the callback answers True (False would stop ggml's graph) and leaves the hidden state out."""
    from ragclinic.models.hidden import HiddenCapture

    cap = HiddenCapture()

    class Broken:
        def ggml_get_name(self, _t):
            return b"l_out-3"

        def ggml_element_size(self, _t):
            return 4

        def ggml_is_contiguous(self, _t):
            return True

        def ggml_nelements(self, _t):
            return 8

        def ggml_nrows(self, _t):
            return 0  # an empty tensor: no last row to read

    cap._lib = Broken()
    cap.arm((3,))
    assert cap._on_eval(None, True, None) is True  # asked for: wanted
    assert cap._on_eval(None, False, None) is True  # read: fails, computation goes on
    assert cap.take() == {} and "cannot read the hidden state" in caplog.text and not cap.armed
    assert cap._on_eval(None, True, None) is False  # disarmed: nothing asked for
