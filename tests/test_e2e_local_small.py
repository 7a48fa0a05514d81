"""End to end with the real local-small model (llama.cpp, Qwen2.5-Coder-0.5B): one answerable question
answered with a valid citation, one unanswerable question refused. (The 0.5B judge separates answerable
from unanswerable questions weakly — bench/RESULTS.md, "Gate calibration" — so the questions are ones
it scores clearly; some off-topic questions get through it, and their answers are flagged unsupported.)"""

from __future__ import annotations

import re

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.pipeline.runner import Pipeline
from ragclinic.wiring import language_model as load_language_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("e2e"), BOND_DOCS, llm="local-small", llm_n_ctx=2048)
    lm, flags = load_language_model(kb.settings)
    assert lm is not None and not flags
    yield Pipeline(kb, lm=lm)
    kb.close()


def test_answerable_question_is_answered_from_the_passages(pipe):
    pieces: list[str] = []
    state, trace = pipe.ask("What does duration measure?", on_token=pieces.append)
    a = state.answer
    assert a.route == "answer" and not a.refused, a
    assert "price" in a.text.lower()
    uncited = lambda t: re.sub(r"\s*\[\d+\]", "", t).strip()  # noqa: E731 (attribution may add [n])
    assert uncited("".join(pieces)) == uncited(a.text)
    assert a.citations and all(c.verdict == "supported" for c in a.claims)
    assert a.generator.startswith("local-small")
    assert all(c.n in {p.n for p in state.passages} for c in a.citations)
    assert any(c.kind == "chat" and c.completion_tokens > 0 for c in trace.model_calls)


def test_unanswerable_question_never_gets_a_clean_answer(pipe):
    """Refused by the gate, or — when the weak 0.5B judge lets it through (its P(yes) for off-topic passages
    sits near its 0.5 threshold and moves by a few hundredths with the process's earlier native work) —
    answered with every claim flagged unsupported and a low confidence. Never an answer that looks fine."""
    state, _ = pipe.ask("How many legs does a spider have?")
    a = state.answer
    if a.refused:
        assert a.route == "refuse" and not a.citations
    else:
        assert a.claims and all(c.verdict in ("unsupported", "contradicted", "invalid_citation") for c in a.claims)
        assert any(f.startswith("unsupported_citation") for f in a.flags) and a.confidence < 0.5
