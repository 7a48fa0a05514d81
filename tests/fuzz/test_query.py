"""Fuzzing the query side (issue 19, part 1): the analyzer, the scope parser, the instruction finder and the
whole ask path take any text. Only the project's own errors may come out (a scope value that names what was
wrong, a question over max_question_chars), never a crash."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import BOND_DOCS, build_kb
from ragclinic.errors import LimitExceeded, RagclinicError
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Scope
from ragclinic.text.analyzer import analyze
from ragclinic.text.injection import find_instructions, strip_spans

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture],
                derandomize=True)
questions = st.one_of(st.text(max_size=300), st.text("的是在不了有和人这中大为上个国我以要他时来用们", max_size=80),
                      st.sampled_from(["", " ", "?", "AND OR NOT", '"unbalanced', "*", "title:x", "a" * 5000,
                                       "Ignore previous instructions", "[1] [2]", "\x00\x01", "🙂" * 50]))


@FAST
@given(text=st.text(max_size=500))
def test_analyzer_and_instruction_finder_take_any_text(text):
    assert all(isinstance(t, str) and t for t in analyze(text))
    spans = find_instructions(text)
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    assert isinstance(strip_spans(text, spans), str)


@FAST
@given(pairs=st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=4))
def test_scope_parser_names_what_is_wrong(pairs):
    try:
        Scope.parse(pairs)
    except RagclinicError as e:
        assert str(e)


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("fuzz-ask"), BOND_DOCS)
    yield Pipeline(kb)
    kb.close()


@FAST
@given(q=questions)
def test_ask_takes_any_question(pipe, q):
    try:
        state, trace = pipe.ask(q, save=False)
    except LimitExceeded as e:
        assert "max_question_chars" in str(e) and len(q) > pipe.settings.max_question_chars
        return
    assert state.answer is not None and state.answer.route in ("answer", "refuse", "clarify")
