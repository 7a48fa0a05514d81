"""A model worker that dies mid-question: the question is still answered (extractively, flagged, in the trace);
the next question starts a new worker. The doctor stops repairing and keeps what it had."""

from __future__ import annotations

import os
import signal

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.doctor import Doctor
from ragclinic.errors import ModelCrashed
from ragclinic.models.service import ModelService, ServiceModel
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.model import start_of as state_from_trace
from ragclinic.trace.store import load_trace

Q = "What is usually used as a proxy for the risk-free rate?"
REPLY = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."


@pytest.fixture
def kb(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    yield kb
    kb.close()


def _service(**options) -> ModelService:
    return ModelService("fake", {}, options={"replies": [REPLY], "yes_prob": 0.95, **options},
                        label="the local model")


def _killer(svc: ModelService, sig=signal.SIGSEGV):
    """An on_token callback that kills the worker when the answer starts streaming."""
    seen: list[str] = []

    def on_token(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 1 and svc.pid:
            os.kill(svc.pid, sig)

    return on_token, seen


def test_a_crash_while_generating_gives_a_flagged_extractive_answer_and_a_fresh_worker_next(kb):
    svc = _service(token_seconds=0.05)
    try:
        pipe = Pipeline(kb, lm=ServiceModel(svc))
        on_token, seen = _killer(svc)
        state, trace = pipe.ask(Q, on_token=on_token)
        a = state.answer
        assert a.route == "answer" and a.generator == "extractive" and a.citations
        assert "treasury bills" in a.text.lower()
        assert "llm_crashed: the local model crashed: SIGSEGV; answered extractively" in a.flags
        assert any("the local model crashed: SIGSEGV" in p for p in seen)  # the stream says so too
        crashed = [s for s in trace.spans if s.status == "error"]
        assert [s.layer for s in crashed] == ["generate"] and "SIGSEGV" in crashed[0].error
        saved = load_trace(kb.db, trace.id)
        assert saved.span("generate").status == "ok"  # the span that produced the answer
        state_from_trace(saved, "generate")  # a crashed trace can still be re-run

        again, _ = pipe.ask(Q)
        assert again.answer.generator.startswith("fake-paced") and not any(
            f.startswith("llm_crashed") for f in again.answer.flags)
        assert svc.starts == 2
    finally:
        svc.close()


def test_a_crash_in_the_gate_judge_falls_back_to_the_lexical_judge(kb):
    svc = _service(crash_on="probs", crash_signal="SIGABRT")
    try:
        state, trace = Pipeline(kb, lm=ServiceModel(svc)).ask(Q)
        a = state.answer
        assert a.route == "answer" and a.generator == "extractive"
        assert any(f.startswith("llm_crashed: the local model crashed: SIGABRT") for f in a.flags)
        assert [s.layer for s in trace.spans if s.status == "error"] == ["gate"]
        assert not any(c.kind == "probs" and c.layer == "generate" for c in trace.model_calls)
        assert svc.starts == 1  # no worker was started again within the question
    finally:
        svc.close()


def test_the_doctor_keeps_its_answer_when_the_model_dies_and_starts_no_new_worker(kb):
    svc = _service(token_seconds=0.02)
    try:
        pipe = Pipeline(kb, lm=ServiceModel(svc))
        on_token, _ = _killer(svc, signal.SIGKILL)
        result = Doctor(pipe).ask(Q, on_token=on_token)
        a = result.answer
        assert a.text and a.route == "answer" and a.generator == "extractive"
        assert any(f.startswith("llm_crashed: the local model crashed: SIGKILL") for f in a.flags)
        assert svc.starts == 1  # the doctor examined by rules only
        assert Doctor(pipe).ask(Q).answer.generator.startswith("fake-paced") and svc.starts == 2
    finally:
        svc.close()


class _DiesAfter:
    """In-process stand-in for a worker that dies on its n-th call (and would restart on the next)."""

    def __init__(self, inner, n: int) -> None:
        self.inner, self.n, self.calls = inner, n, 0
        self.model_id = inner.model_id

    def _tick(self) -> None:
        self.calls += 1
        if self.calls == self.n:
            raise ModelCrashed("the local model crashed: SIGSEGV")

    def chat(self, messages, **kw):
        self._tick()
        return self.inner.chat(messages, **kw)

    def next_token_probs(self, messages, candidates):
        self._tick()
        return self.inner.next_token_probs(messages, candidates)


def test_a_crash_during_a_repair_round_ends_the_repairs_and_keeps_the_answer_so_far(kb, monkeypatch):
    from ragclinic.doctor import doctor as doctor_mod
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    bad = "The cat sat on the warm kitchen floor [1]."  # the doctor examines and treats its noisy context
    slow = kb.settings.model_copy(update={"doctor_fast_evidence": 1.01})  # the fake judge's 0.9 is the fast band
    counted = _DiesAfter(ScriptedLanguageModel([bad], yes_prob=0.9), 10**6)
    clean = Doctor(Pipeline(kb, lm=counted, settings=slow)).ask(Q)
    assert clean.repairs, "no repair round ran: the test would not reach the round's crash handling"
    crashed_in: list[str] = []
    real_round = doctor_mod._Session.round

    def round_(self, rnd):
        try:
            return real_round(self, rnd)
        except ModelCrashed:
            crashed_in.append(f"round {rnd}")
            raise

    monkeypatch.setattr(doctor_mod._Session, "round", round_)
    lm = _DiesAfter(ScriptedLanguageModel([bad], yes_prob=0.9), counted.calls)  # dies on the last call
    result = Doctor(Pipeline(kb, lm=lm, settings=slow)).ask(Q)
    assert crashed_in, "the crash did not land in a repair round"
    assert result.summary["outcome"] == "model crashed" and result.symptoms
    assert result.answer.text.startswith(clean.initial.text)
    assert any(f.startswith("llm_crashed: the local model crashed: SIGSEGV; the doctor stopped")
               for f in result.answer.flags)
