"""A trace whose model died mid-question (or ran out of ``max_model_seconds``) was answered without the model from
there on; its replay does the same at the same place, with no model call, and gives the recorded answer (it
answered "replay needs a model call that the trace did not record", or an answer without the crash's flag)."""

from __future__ import annotations

import time

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic import Clinic
from ragclinic.errors import ModelCrashed
from ragclinic.models.fake_llm import ScriptedLanguageModel

Q = "What is usually used as a proxy for the risk-free rate?"
REPLY = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."


class CrashingModel(ScriptedLanguageModel):
    """Answers the judge's yes/no calls; its worker dies on the first chat (generate)."""

    def chat(self, messages, **kw):
        raise ModelCrashed("the local model crashed: SIGSEGV")


class SlowModel(ScriptedLanguageModel):
    """Each yes/no call takes 30 ms: a small ``max_model_seconds`` is spent before generate."""

    def next_token_probs(self, messages, candidates):
        time.sleep(0.03)
        return super().next_token_probs(messages, candidates)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay_crash")
    build_kb(root, BOND_DOCS).close()
    return root


@pytest.mark.parametrize("model, settings, flag", [
    (CrashingModel([REPLY], yes_prob=0.9), {}, "llm_crashed"),
    (SlowModel([REPLY], yes_prob=0.9), {"max_model_seconds": 0.01}, "llm_time_limit"),
])
def test_a_trace_answered_after_a_crash_replays_to_its_answer(folder, model, settings, flag):
    with Clinic.open(folder / "kb", model=model, llm="local", embedder="fake", judge="llm",
                     cache_dir=folder / "cache", answer_cache=False, **settings) as c:
        r = c.consult(Q, doctor=False, cache=False)
        t = c.trace(r.trace.id)
        assert any(f.startswith(flag) for f in t.final["flags"]) and t.model_calls  # a crash after recorded calls
        assert [s.status for s in t.spans].count("error") == 1
        calls = len(model.calls)
        again = c.replay(t.id)
        assert again.model_calls == 0 and len(model.calls) == calls
        assert again.to_json() == t.final
