"""No token processed twice, deterministically: the system turn's KV state is reused between calls, and a
call that reuses it gives exactly what the same call gives from an empty cache (greedy text, next-token
probabilities), with the real local-small model."""

from __future__ import annotations

import pytest

from ragclinic.config import Settings
from ragclinic.models.llm import Message

pytestmark = pytest.mark.slow

SYSTEM = "Answer the question using only the passages. Answer in one sentence and cite the passage number."
ASK = [Message("system", SYSTEM),
       Message("user", "Passage [1]: Duration measures how much a bond price moves when rates change.\n"
                       "Question: What does duration measure?")]
OTHER = [Message("system", SYSTEM),
         Message("user", "Passage [1]: The coupon is the yearly interest a bond pays, as a share of its face "
                         "value.\nQuestion: What is a coupon?")]
ELSE = [Message("system", "You are a terse assistant."), Message("user", "Say hello.")]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(tmp_path_factory.mktemp("kb") / "kb", llm="local-small", llm_n_ctx=2048,
                      llm_isolation="inline")
    return LlamaModel(WEIGHTS["local-small"], s)


def _fresh(model, call):
    """The call with nothing reusable in the cache (another system turn ran last) and no remembered result."""
    model._memo.clear()
    model.chat(ELSE, max_tokens=4)
    model._memo.clear()
    model._prefixes._saved.clear()  # nor a kept system turn
    hits = model.prefix_hits
    out = call()
    assert model.prefix_hits == hits, "the fresh call must not have reused a prefix"
    return out


def _reused(model, call):
    """The call right after another question with the same system turn: its KV state is reused."""
    model._memo.clear()
    model.chat(OTHER, max_tokens=12)
    model._memo.clear()
    hits = model.prefix_hits
    out = call()
    assert model.prefix_hits == hits + 1, "the call should have reused the system turn"
    return out


def test_a_reused_system_turn_gives_exactly_the_fresh_greedy_answer(model):
    fresh = _fresh(model, lambda: model.chat(ASK, max_tokens=32))
    reused = _reused(model, lambda: model.chat(ASK, max_tokens=32))
    assert (reused.text, reused.prompt_tokens, reused.completion_tokens, reused.finish_reason) == (
        fresh.text, fresh.prompt_tokens, fresh.completion_tokens, fresh.finish_reason)
    assert fresh.completion_tokens > 0 and fresh.prompt_tokens > 0
    assert fresh.prompt_reused == 0 and 0 < reused.prompt_reused < reused.prompt_tokens


def test_a_reused_system_turn_gives_exactly_the_fresh_probabilities(model):
    fresh = _fresh(model, lambda: model.next_token_probs(ASK, ["yes", "no"]))
    reused = _reused(model, lambda: model.next_token_probs(ASK, ["yes", "no"]))
    assert reused == fresh


def test_the_system_turn_boundary_is_where_the_user_text_starts(model):
    prompt = model._prompt(ASK)
    tokens = model._llm.tokenize(prompt.encode("utf-8"), special=True)
    cut = model._system_cut(ASK, prompt, tokens)
    assert 0 < cut < len(tokens)
    head = model._llm.detokenize(tokens[:cut]).decode("utf-8")
    assert SYSTEM in head and "Duration" not in head
    assert model._system_cut([Message("user", "hi")], model._prompt([Message("user", "hi")]), tokens) == 0


def test_a_system_turn_kept_aside_is_restored_exactly(model):
    """Another system turn ran in between: the kept KV state of the first is copied back, not recomputed."""
    fresh = _fresh(model, lambda: model.chat(ASK, max_tokens=32))
    fresh_p = _fresh(model, lambda: model.next_token_probs(ASK, ["yes", "no"]))
    model._memo.clear()
    model.chat(OTHER, max_tokens=12)  # SYSTEM is evaluated and kept
    model._memo.clear()
    model.chat(ELSE, max_tokens=4)  # another system turn replaces it in the live cache
    model._memo.clear()
    hits = model.prefix_hits
    again = model.chat(ASK, max_tokens=32)
    assert model.prefix_hits == hits + 1 and again.prompt_reused > 0
    assert (again.text, again.completion_tokens) == (fresh.text, fresh.completion_tokens)
    model._memo.clear()
    model.chat(ELSE, max_tokens=4)
    model._memo.clear()
    assert model.next_token_probs(ASK, ["yes", "no"]) == fresh_p


def test_token_log_probabilities_leave_the_answer_unchanged_and_line_up_with_its_text(model):
    """Active retrieval reads each sampled token's log-probability; asking for them changes nothing the model
    writes, and each offset is a place in the reply (field decoding: inside the values only)."""
    from ragclinic.pipeline.generate.structured import SCHEMAS

    for schema in (None, SCHEMAS["short"]):
        model._memo.clear()
        plain = model.chat(ASK, max_tokens=24, schema=schema)
        model._memo.clear()
        read = model.chat(ASK, max_tokens=24, schema=schema, logprobs=True)
        assert read.text == plain.text and not plain.logprobs
        offsets = [at for at, _ in read.logprobs]
        assert read.logprobs and offsets == sorted(offsets) and offsets[-1] < len(read.text)
        assert all(lp <= 0.0 for _, lp in read.logprobs)
        if schema:  # the keys are evaluated, never sampled: no token of '"answer": "' is read
            key = read.text.index('"answer"')
            assert not any(key <= at < key + len('"answer": "') for at in offsets)
        remembered = model.chat(ASK, max_tokens=24, schema=schema, logprobs=True)
        assert remembered.logprobs == read.logprobs  # a remembered call brings its log-probabilities too
