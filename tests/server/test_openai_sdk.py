"""The openai Python SDK, unchanged, against /v1/chat/completions on a real socket: plain and streamed
completions carry the cited answer, its citations and the trace id."""

from __future__ import annotations

from .conftest import ADMIN, ACME


def _client(base: str, key: str):
    from openai import OpenAI

    return OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=60)


def test_a_plain_completion(live):
    r = _client(live, ADMIN).chat.completions.create(
        model="anything", messages=[{"role": "user", "content": "What is usually used as a proxy for the risk-free rate?"}])
    assert "treasury bills" in r.choices[0].message.content and r.choices[0].finish_reason == "stop"
    extra = r.model_extra
    assert extra["x_trace_id"] and extra["citations"][0]["path"].endswith("bonds.md")
    assert r.usage.prompt_tokens > 0


def test_a_streamed_completion_ends_with_the_citations(live):
    stream = _client(live, ADMIN).chat.completions.create(
        model="gpt-4o", stream=True,
        messages=[{"role": "system", "content": "be brief"},
                  {"role": "user", "content": "What is usually used as a proxy for the risk-free rate?"}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "treasury bills" in text
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert last.model_extra["citations"] and last.model_extra["x_trace_id"]


def test_follow_ups_and_tenants(live):
    c = _client(live, ACME)
    r = c.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "What is the refund window?"},
        {"role": "assistant", "content": "45 days."},
        {"role": "user", "content": "and for refunds?"}])
    assert "7 days" not in r.choices[0].message.content  # globex's window never reaches acme
    from openai import AuthenticationError
    import pytest

    with pytest.raises(AuthenticationError):
        _client(live, "wrong-key-000").chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
