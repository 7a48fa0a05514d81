"""Field-by-field decoding of a flat JSON schema: only the values are sampled, the keys and punctuation are forced;
the reply is the JSON a whole-schema grammar would give; a refusal status ends it at once."""

from __future__ import annotations

import json

import pytest

from ragclinic.models.fields import decode, plan
from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.structured import SCHEMAS, parse_reply


def test_plan_reads_a_flat_schema_in_its_required_order_and_declines_nested_ones():
    fields = plan(SCHEMAS["short"])
    assert [(f.key, f.kind) for f in fields] == [("status", "enum"), ("answer", "string"), ("evidence", "ints")]
    assert '"not_in_documents"' in fields[0].grammar
    assert "{0,2}" in fields[2].grammar  # maxItems 3
    assert plan(SCHEMAS["points"]) is None  # an array of objects: one grammar over the whole schema
    assert plan(None) is None and plan({"type": "array"}) is None


def _scripted(values):
    """A sampler that answers each field with the next scripted value (+ what a model would put after it)."""
    seen = []

    def sample(text, grammar, stops, max_tokens, on_token):
        seen.append(text)
        value = values[len(seen) - 1]
        if on_token:
            on_token(value)
        return value + stops[0] + ",", 3, "stop"

    return sample, seen


def test_decode_forces_the_keys_and_samples_the_values():
    sample, seen = _scripted(["answered", "Sundar Pichai", "2"])
    pieces = []
    text, used, finish = decode(plan(SCHEMAS["short"]), sample, 64, pieces.append)
    assert json.loads(text) == {"status": "answered", "answer": "Sundar Pichai", "evidence": [2]}
    assert "".join(pieces) == text and used == 9 and finish == "stop"
    assert seen == ['{"status": "', '{"status": "answered", "answer": "',
                    '{"status": "answered", "answer": "Sundar Pichai", "evidence": [']


def test_a_refusal_status_ends_the_reply_without_sampling_the_rest():
    sample, seen = _scripted(["not_in_documents"])
    text, used, _ = decode(plan(SCHEMAS["short"]), sample, 64)
    assert json.loads(text) == {"status": "not_in_documents", "answer": "", "evidence": []} and len(seen) == 1


def test_a_value_cut_by_the_token_limit_is_returned_as_it_is():
    def sample(text, grammar, stop, max_tokens, on_token):
        return ("answered", 1, "stop") if text.endswith('"status": "') else ("Sundar Pi", max_tokens, "length")

    text, used, finish = decode(plan(SCHEMAS["short"]), sample, 8)
    assert finish == "length" and parse_reply(text, "short").items[0].text == "Sundar Pi"


@pytest.mark.slow
def test_the_real_model_fills_the_schema_field_by_field_deterministically(tmp_path):
    from ragclinic.config import Settings
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(tmp_path / "kb", llm="local-small", llm_n_ctx=2048, llm_isolation="inline")
    model = LlamaModel(WEIGHTS["local-small"], s)
    msgs = [Message("system", 'Reply in JSON: "status" (answered or not_in_documents), "answer" (the short answer), '
                              '"evidence" (source numbers).'),
            Message("user", "[1] Duration measures how much a bond price moves when rates change.\n\n"
                            "Question: What does duration measure?")]
    pieces = []
    done = model.chat(msgs, max_tokens=48, schema=SCHEMAS["short"], on_token=pieces.append)
    data = json.loads(done.text)
    assert set(data) == {"status", "answer", "evidence"} and "".join(pieces) == done.text
    assert done.completion_tokens < len(model._llm.tokenize(done.text.encode(), add_bos=False))  # keys not sampled
    model._memo.clear()
    assert model.chat(msgs, max_tokens=48, schema=SCHEMAS["short"]).text == done.text


def test_a_string_value_may_hold_escaped_quotes_and_backslashes():
    """'Select "Save As"' and C:\\temp are answers too: an escaped quote does not end the value."""
    sample, _ = _scripted(["answered", 'Select \\"Save As\\" in C:\\\\temp', "1"])
    text, _, _ = decode(plan(SCHEMAS["short"]), sample, 64)
    assert json.loads(text)["answer"] == 'Select "Save As" in C:\\temp'
    string = plan(SCHEMAS["short"])[1]
    assert string.stops == ('",', '"}') and '\\\\" ["' in string.grammar
