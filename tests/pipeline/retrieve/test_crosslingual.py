"""A question in another language than the documents is searched in theirs too (issue 35 item 3)."""

from __future__ import annotations

from helpers import build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.retrieve.crosslingual import target_language
from ragclinic.pipeline.runner import Pipeline

DOCS = {
    "connections.md": "# Connections\n\nmax_connections determines the maximum number of concurrent connections to "
                      "the database server. The default is typically 100 connections.\n",
    "locks.md": "# Locks\n\ndeadlock_timeout is the amount of time to wait on a lock before checking to see if there "
                "is a deadlock condition. The default is one second.\n",
    "vacuum.md": "# Vacuum\n\nautovacuum_naptime specifies the minimum delay between autovacuum runs on any given "
                 "database. The default is one minute.\n",
}
QUESTION = "刚装好的服务器，最多能同时有多少个客户端连着？"
TRANSLATION = "On a fresh install, what is the maximum number of concurrent client connections to the server?"


SEEN: list[str] = []


def _reply(messages):
    SEEN.append(messages[0].content)
    if messages[0].content.startswith("Translate the user's question into English"):
        return TRANSLATION
    return '{"status": "answered", "answer": "100", "evidence": [1]}'


def test_a_chinese_question_over_english_documents_is_searched_in_english_too(tmp_path):
    kb = build_kb(tmp_path, DOCS)
    lm = ScriptedLanguageModel([_reply] * 4, yes_prob=0.9)
    state, trace = Pipeline(kb, lm=lm).ask(QUESTION)
    assert trace.span("retrieve").output.queries == (TRANSLATION, QUESTION)  # the translation leads
    assert "max_connections" in state.hits[0].chunk.text
    assert [c.layer for c in trace.model_calls][:1] == ["retrieve"]  # the translation is in the trace
    kb.close()


def test_no_translation_in_the_documents_language_without_a_model_or_when_turned_off(tmp_path):
    kb = build_kb(tmp_path, DOCS)
    lm = ScriptedLanguageModel([_reply] * 4, yes_prob=0.9)
    SEEN.clear()
    state, _ = Pipeline(kb, lm=lm).ask("What is the default maximum number of concurrent connections?")
    assert SEEN and not any(m.startswith("Translate") for m in SEEN)
    state, trace = Pipeline(kb).ask(QUESTION)  # no model: the question alone
    assert trace.span("retrieve").output.queries == (QUESTION,)
    off = Pipeline(kb, lm=ScriptedLanguageModel([_reply] * 4, yes_prob=0.9),
                   settings=kb.settings.model_copy(update={"crosslingual": False}))
    SEEN.clear()
    state, trace = off.ask(QUESTION)
    assert SEEN and not any(m.startswith("Translate") for m in SEEN)
    assert trace.span("retrieve").output.queries == (QUESTION,)
    kb.close()


def test_which_language_the_documents_are_in():
    assert target_language("刚装好的服务器？", {"en": 0.97, "zh": 0.03}) == "en"
    assert target_language("刚装好的服务器？", {"en": 0.7, "zh": 0.3}) is None  # the documents have Chinese too
    assert target_language("How many clients?", {"zh": 1.0}) == "zh"
    assert target_language("How many clients?", {"en": 0.4, "zh": 0.35, "fr": 0.25}) is None
    assert target_language("How many clients?", {}) is None
