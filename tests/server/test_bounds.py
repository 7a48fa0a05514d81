"""Work and state per request are bounded by settings (issue 32): scope keys and sizes, question length, chat
messages, feedback notes, upload tags. An over-limit request is refused with 422 naming the field, the limit and
the setting, before anything is stored — one request cannot grow the knowledge base by megabytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragclinic.errors import LimitExceeded

from .conftest import ACME, ADMIN, auth

Q = "What is the refund window?"


def _settings(served):
    return served.app.state.rc.settings


def _kb_bytes(kb: Path) -> int:
    return sum(p.stat().st_size for p in kb.rglob("*") if p.is_file())


def _refused(r, field: str, setting: str) -> None:
    assert r.status_code == 422, (r.status_code, r.text[:300])
    message = r.json()["error"]["message"]
    assert field in message and setting in message and f"RAGCLINIC_{setting.upper()}" in message, message


def test_a_one_megabyte_scope_value_is_refused_and_the_kb_does_not_grow(served):
    kb = _settings(served).kb
    served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ADMIN))  # the KB exists and is warm
    before = _kb_bytes(kb)
    big = {"note": "x" * 1_000_000}  # under the fixture's 1 MiB body limit
    for doctor in (False, True):
        r = served.post("/v1/ask", json={"question": Q, "scope": big, "doctor": doctor}, headers=auth(ACME))
        _refused(r, "scope", "max_scope_value_chars")
        assert str(_settings(served).max_scope_value_chars) in r.json()["error"]["message"]
    assert _kb_bytes(kb) - before < 64 * 1024, "the refused requests were stored"


@pytest.mark.parametrize("route", ["/v1/ask", "/v1/retrieval", "/v1/diagnose", "/v1/chat/completions"])
def test_every_json_route_bounds_the_scope(served, route):
    s = _settings(served)
    question = {"/v1/retrieval": {"query": Q}, "/v1/chat/completions": {"messages": [{"role": "user", "content": Q}]},
                "/v1/diagnose": {"question": Q, "expected": ["45 days"]}}.get(route, {"question": Q})
    too_many = {f"k{i}": "v" for i in range(s.max_scope_keys + 1)}
    long_key = {"k" * (s.max_scope_key_chars + 1): "v"}
    long_value = {"k": "v" * (s.max_scope_value_chars + 1)}
    for scope, setting in ((too_many, "max_scope_keys"), (long_key, "max_scope_key_chars"),
                           (long_value, "max_scope_value_chars")):
        r = served.post(route, json={**question, "scope": scope, "doctor": False}, headers=auth(ADMIN))
        _refused(r, "scope", setting)
    within = {f"k{i}": "v" * s.max_scope_value_chars for i in range(s.max_scope_keys)}
    r = served.post(route, json={**question, "scope": within, "doctor": False}, headers=auth(ADMIN))
    assert r.status_code == 200, r.text[:300]


def test_questions_are_bounded_by_the_setting(served):
    n = _settings(served).max_question_chars + 1
    _refused(served.post("/v1/ask", json={"question": "x" * n}, headers=auth(ADMIN)), "question", "max_question_chars")
    _refused(served.post("/v1/retrieval", json={"query": "x" * n}, headers=auth(ADMIN)), "query", "max_question_chars")
    _refused(served.post("/v1/diagnose", json={"question": "x" * n}, headers=auth(ADMIN)), "question",
             "max_question_chars")
    r = served.post("/v1/diagnose", json={"question": Q, "expected": ["x" * n]}, headers=auth(ADMIN))
    _refused(r, "expected", "max_question_chars")


def test_chat_messages_are_bounded(served):
    s = _settings(served)
    many = [{"role": "user", "content": "hi"}] * (s.max_chat_messages + 1)
    _refused(served.post("/v1/chat/completions", json={"messages": many}, headers=auth(ADMIN)), "messages",
             "max_chat_messages")
    long = [{"role": "system", "content": "x" * (s.max_chat_message_chars + 1)}, {"role": "user", "content": Q}]
    _refused(served.post("/v1/chat/completions", json={"messages": long}, headers=auth(ADMIN)), "messages",
             "max_chat_message_chars")
    parts = [{"role": "user", "content": [{"type": "text", "text": "x" * (s.max_chat_message_chars + 1)}]}]
    _refused(served.post("/v1/chat/completions", json={"messages": parts}, headers=auth(ADMIN)), "messages",
             "max_chat_message_chars")


def test_feedback_notes_are_bounded(served):
    tid = served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ACME)).json()["trace_id"]
    note = "x" * (_settings(served).max_feedback_note_chars + 1)
    r = served.post("/v1/feedback", json={"trace_id": tid, "rating": 1, "note": note}, headers=auth(ACME))
    _refused(r, "note", "max_feedback_note_chars")
    r = served.post("/ui/feedback", data={"trace_id": tid, "rating": "1", "note": note}, headers=auth(ACME))
    _refused(r, "note", "max_feedback_note_chars")


def test_the_ui_routes_bound_their_parameters(served):
    s = _settings(served)
    long_tag = f"k={'v' * (s.max_scope_value_chars + 1)}"
    r = served.get("/ui/ask/stream", params={"q": Q, "tags": long_tag}, headers=auth(ADMIN))
    _refused(r, "scope", "max_scope_value_chars")
    r = served.get("/ui/ask/stream", params={"q": "x" * (s.max_question_chars + 1)}, headers=auth(ADMIN))
    _refused(r, "question", "max_question_chars")
    r = served.post("/ui/retrieval", data={"q": "x" * (s.max_question_chars + 1)}, headers=auth(ADMIN))
    _refused(r, "query", "max_question_chars")
    files = [("files", ("a.md", b"# A\n\nalpha\n", "text/markdown"))]
    r = served.post("/ui/upload", files=files, data={"tags": long_tag}, headers=auth(ADMIN))
    _refused(r, "tags", "max_scope_value_chars")
    r = served.post("/v1/ingest", files=files, data={"tags": [long_tag]}, headers=auth(ADMIN))
    _refused(r, "tags", "max_scope_value_chars")


def test_library_users_get_the_same_bounds(served):
    s = _settings(served)
    with served.app.state.rc.pool.reader() as clinic:
        with pytest.raises(LimitExceeded, match="max_scope_value_chars"):
            clinic.consult(Q, {"k": "v" * (s.max_scope_value_chars + 1)}, doctor=False)
        with pytest.raises(LimitExceeded, match="max_scope_keys"):
            clinic.consult(Q, {f"k{i}": "v" for i in range(s.max_scope_keys + 1)}, doctor=True)


@pytest.mark.parametrize("content_type", ["application/JSON", "Application/Json; charset=utf-8"])
def test_a_json_body_is_bounded_whatever_the_case_of_its_content_type(served, content_type):
    """FastAPI parses `application/JSON` as JSON: the bounds must see it too (a 500 KB note was stored)."""
    import json

    tid = served.post("/v1/ask", json={"question": Q, "doctor": False}, headers=auth(ACME)).json()["trace_id"]
    note = "x" * (_settings(served).max_feedback_note_chars + 1)
    body = json.dumps({"trace_id": tid, "rating": 1, "note": note})
    r = served.post("/v1/feedback", content=body, headers={**auth(ACME), "Content-Type": content_type})
    _refused(r, "note", "max_feedback_note_chars")
    query = "y" * (_settings(served).max_question_chars + 1)
    r = served.post("/v1/retrieval", content=json.dumps({"query": query}),
                    headers={**auth(ACME), "Content-Type": content_type})
    _refused(r, "query", "max_question_chars")
