"""Active retrieval while answering (FLARE): a claim the model wrote with a low-probability token is searched
again with its uncertain words masked, the answer regenerated from what that search finds, and only the answer
kept reaches the user — recorded as a span of its own, replayed from the trace."""

from __future__ import annotations

import json
import math

import pytest

from helpers import build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.confidence import claim_confidence
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.model import ACTIVE
from ragclinic.trace.store import load_trace

DOCS = {"a.md": "# Harbor Bridge\n\nThe Harbor Bridge is painted grey every ten years by the city.\n",
        "b.md": "# Steel arch\n\nThe steel arch was drawn by the engineer Ada Brunel in 1924.\n",
        "c.md": "# Ferries\n\nFerries cross the harbor every hour in summer.\n"}
Q = "Who designed the Harbor Bridge?"
GUESS = json.dumps({"status": "answered", "answer": "The steel arch was drawn by Smith", "evidence": [1]})
FOUND = json.dumps({"status": "answered", "answer": "Ada Brunel drew the steel arch", "evidence": [1]})


def _unsure_of(*words):
    return lambda w: 0.1 if any(x in w for x in words) else 0.95


@pytest.fixture
def kb(tmp_path):
    kb = build_kb(tmp_path, DOCS, active_retrieval=0.5, top_k=1, context_k=1)
    yield kb
    kb.close()


def _ask(kb, lm, **settings):
    pipe = Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=settings) if settings else None)
    pieces: list[str] = []
    state, trace = pipe.ask(Q, on_token=pieces.append)
    return state, trace, "".join(pieces)


def test_an_unsure_claim_is_searched_again_and_only_the_answer_from_the_new_passage_is_shown(kb):
    lm = ScriptedLanguageModel([GUESS], rules=[("Ada Brunel", FOUND)], yes_prob=0.9, token_prob=_unsure_of("Smith"))
    state, trace, shown = _ask(kb, lm)
    a = state.answer
    assert a.text == "Ada Brunel drew the steel arch [1]." and shown.endswith(a.text)
    assert "Smith" not in shown  # the guess never reached the user
    assert [c.path.rsplit("/", 1)[-1] for c in a.citations] == ["b.md"]
    span = trace.span(ACTIVE)
    assert span is not None and span.output["triggered"] and span.output["kept"] == "second"
    assert span.output["queries"] == [f"{Q} The steel arch was drawn by"]  # the unsure word masked
    assert span.output["claims"][0]["lowest"] == pytest.approx(0.1)
    saved = load_trace(kb.db, trace.id)  # the stored trace answers from the passages the answer cites
    assert [p.doc.path.rsplit("/", 1)[-1] for p in saved.state_after("generate").passages] == ["b.md"]
    assert saved.span(ACTIVE).output == span.output


def test_a_confident_answer_is_not_searched_again(kb):
    lm = ScriptedLanguageModel([GUESS], yes_prob=0.9, token_prob=lambda w: 0.99)
    state, trace, shown = _ask(kb, lm)
    span = trace.span(ACTIVE)
    assert span is not None and not span.output["triggered"]
    assert state.answer.text.startswith("The steel arch was drawn by Smith") and shown.endswith(state.answer.text)
    assert sum(kind == "chat" for kind, _ in lm.calls) == 1
    assert [p.doc.path.rsplit("/", 1)[-1] for p in state.passages] == ["a.md"]


def test_a_second_answer_no_more_confident_leaves_the_first(kb):
    unsure_too = json.dumps({"status": "answered", "answer": "Ada Brunel or Jones drew it", "evidence": [1]})
    lm = ScriptedLanguageModel([GUESS], rules=[("Ada Brunel", unsure_too)], yes_prob=0.9,
                               token_prob=lambda w: 0.05 if "Jones" in w else 0.1 if "Smith" in w else 0.95)
    state, trace, _ = _ask(kb, lm)
    out = trace.span(ACTIVE).output
    assert out["triggered"] and out["kept"] == "first" and "no more confident" in out["why"]
    assert state.answer.text.startswith("The steel arch was drawn by Smith")
    assert [p.doc.path.rsplit("/", 1)[-1] for p in state.passages] == ["a.md"]


def test_off_or_without_log_probabilities_the_answer_streams_as_before(kb):
    for lm, settings in ((ScriptedLanguageModel([GUESS], yes_prob=0.9, token_prob=_unsure_of("Smith")),
                          {"active_retrieval": 0.0}),
                         (ScriptedLanguageModel([GUESS], yes_prob=0.9), {})):  # a backend that cannot say
        state, trace, shown = _ask(kb, lm, **settings)
        assert trace.span(ACTIVE) is None
        assert state.answer.text.startswith("The steel arch was drawn by Smith") and shown.endswith(state.answer.text)
        assert sum(kind == "chat" for kind, _ in lm.calls) == 1


def test_a_replay_of_the_trace_gives_the_same_answer_without_the_model(kb):
    lm = ScriptedLanguageModel([GUESS], rules=[("Ada Brunel", FOUND)], yes_prob=0.9, token_prob=_unsure_of("Smith"))
    state, trace, _ = _ask(kb, lm)
    replayed, again = Pipeline(kb, lm=None).rerun(trace, "retrieve", frozen=True, save=False)
    assert replayed.answer.text == state.answer.text
    assert again.span(ACTIVE).output["kept"] == "second"


def _marks(text: str, probs: dict[str, float]):
    import re

    return tuple((m.start(), math.log(probs.get(m.group(), 0.9))) for m in re.finditer(r"\S+", text))


def test_claim_confidence_reads_each_claim_and_masks_whole_words():
    raw = ('{"status": "answered", "points": [{"text": "Turn the valve clockwise", "evidence": [1]}, '
           '{"text": "then wait 30 minutes", "evidence": [2]}]}')
    marks = _marks(raw, {'clockwise",': 0.3, "30": 0.2})
    got = claim_confidence(raw, marks, threshold=0.5)
    assert [c.lowest for c in got] == [pytest.approx(0.3), pytest.approx(0.2)]
    assert [c.masked for c in got] == ["Turn the valve", "then wait minutes"]
    assert claim_confidence(raw, (), 0.5) == ()
    free = "Paris is the capital"  # a free-text reply is one claim
    assert claim_confidence(free, _marks(free, {"Paris": 0.1}), 0.5)[0].masked == "is the capital"


def test_a_chinese_claim_masks_only_its_uncertain_characters():
    raw = '{"status": "answered", "answer": "埃菲尔铁塔建于1889年", "evidence": [1]}'
    start = raw.index("埃")
    marks = tuple((start + i, math.log(0.1 if ch in "18" else 0.9)) for i, ch in enumerate("埃菲尔铁塔建于1889年"))
    (c,) = claim_confidence(raw, marks, 0.5)
    assert c.lowest == pytest.approx(0.1) and c.masked == "埃菲尔铁塔建于 年"  # 1889 masked whole, 年 kept


def test_a_rerun_from_the_gate_keeps_the_context_it_was_given(kb):
    """The debugger's and the doctor's re-runs change the context on purpose: no second search undoes it."""
    lm = ScriptedLanguageModel([GUESS], rules=[("Ada Brunel", FOUND)], yes_prob=0.9, token_prob=_unsure_of("Smith"))
    pipe = Pipeline(kb, lm=lm)
    _, trace = pipe.ask(Q)
    again, run = pipe.rerun(trace, "gate")
    assert run.span(ACTIVE) is None and "Ada Brunel" not in again.answer.text


def test_a_replay_after_an_ingest_starts_from_the_passages_the_answer_was_written_from(tmp_path):
    from ragclinic import Clinic

    lm = ScriptedLanguageModel([GUESS], rules=[("Ada Brunel", FOUND)], yes_prob=0.9, token_prob=_unsure_of("Smith"))
    kb = build_kb(tmp_path, DOCS, active_retrieval=0.5, top_k=1, context_k=1)
    kb.close()
    with Clinic.open(tmp_path / "kb", model=lm, embedder="fake", judge="llm", cache_dir=tmp_path / "cache",
                     active_retrieval=0.5, top_k=1, context_k=1) as c:
        a = c.ask(Q, doctor=False)
        assert a.text == "Ada Brunel drew the steel arch [1]."
        trace = c.trace(a.trace_id)
        assert trace.state_after("generate").decision.route == "answer"
        (tmp_path / "docs" / "d.md").write_text("# Tolls\n\nThe bridge toll is two euros.\n", encoding="utf-8")
        c.ingest(tmp_path / "docs")
        assert c.kb.db.version != trace.kb_version
        again = c.replay(a.trace_id)
        assert again.text == a.text and again.model_calls == 0


def test_a_chinese_claim_never_widens_a_mask_over_its_characters():
    raw = '{"status": "answered", "answer": "铁塔建于1889年由埃菲尔设计", "evidence": [1]}'
    start = raw.index("铁")
    text = "铁塔建于1889年由埃菲尔设计"
    marks = tuple((start + i, math.log(0.1 if i == 4 else 0.9)) for i in range(len(text)))
    (c,) = claim_confidence(raw, marks, 0.5)
    assert c.masked == "铁塔建于 年由埃菲尔设计"  # the number goes (a whole word), the characters around it stay
