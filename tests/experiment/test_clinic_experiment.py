"""An experiment through the Clinic: each question runs in its session's arm with the arm's settings, the arm is in
the trace and the answer, the answer cache is per arm, ratings reach the report, a tenant's report counts only its own
requests, and stopping it returns every question to the knowledge base's settings."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from ragclinic.clinic.question import Question
from ragclinic.errors import ConfigError
from ragclinic.experiment.design import Arm
from ragclinic.experiment.service import NoExperiment
from ragclinic.models.fake_llm import ScriptedLanguageModel

RIGHT = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."
Q = "What is usually used as a proxy for the risk-free rate?"


@pytest.fixture
def clinic(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in BOND_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel([RIGHT] * 400, yes_prob=0.9), embedder="fake",
                    judge="llm", cache_dir=tmp_path / "cache")
    c.ingest([root])
    yield c
    c.close()


def _arms():
    return [Arm("A", 50.0, (("doctor", False),)), Arm("B", 50.0, (("doctor", False), ("top_k", 3)))]


def _unit_in(c, arm: str) -> str:
    design = c.experiments.running()
    return next(u for u in (f"user-{i}" for i in range(100)) if design.assign(u).name == arm)


def test_each_session_runs_in_its_arm_with_the_arms_settings(clinic):
    clinic.experiments.start("exp", _arms())
    a, b = _unit_in(clinic, "A"), _unit_in(clinic, "B")
    for unit, arm, top_k in ((a, "A", 10), (b, "B", 3)):
        seen = clinic.answer(Question(Q, session=unit, cache=False))
        assert seen.experiment == {"name": "exp", "arm": arm} and seen.to_json()["experiment"]["arm"] == arm
        trace = clinic.trace(seen.answer.trace_id)
        assert trace.experiment == {"name": "exp", "arm": arm, "unit": unit}
        assert trace.spans[0].input.top_k == top_k  # the arm's settings ran
        assert trace.symptoms == () and not trace.doctor  # doctor = false in both arms
    status = clinic.experiments.status("exp")
    assert [(x["name"], x["requests"]) for x in status["arms"]] == [("A", 1), ("B", 1)]


def test_the_answer_cache_is_kept_per_arm(clinic):
    clinic.experiments.start("exp", _arms())
    a, b = _unit_in(clinic, "A"), _unit_in(clinic, "B")
    first = clinic.answer(Question(Q, session=a))
    assert not first.cached and clinic.answer(Question(Q, session=a)).cached
    other = clinic.answer(Question(Q, session=b))
    assert not other.cached and other.experiment["arm"] == "B"  # B never gets A's answer


def test_ratings_refusals_followups_and_tokens_reach_the_report(clinic):
    clinic.experiments.start("exp", _arms(), min_rated=1)
    a, b = _unit_in(clinic, "A"), _unit_in(clinic, "B")
    ta = clinic.answer(Question(Q, session=a, cache=False)).answer.trace_id
    clinic.answer(Question("what is usually the proxy for the risk-free rate", session=a, cache=False))  # rephrased
    tb = clinic.answer(Question(Q, session=b, cache=False)).answer.trace_id
    clinic.feedback(ta, 1)
    clinic.feedback(tb, -1, "wrong")
    rep = clinic.experiments.report("exp")
    arms = {x["arm"]: x for x in rep["arms"]}
    assert (arms["A"]["requests"], arms["A"]["rated"], arms["A"]["helpful_ratio"]) == (2, 1, 1.0)
    assert (arms["B"]["rated"], arms["B"]["helpful_ratio"]) == (1, 0.0)
    assert arms["A"]["followup_rate"] == 0.5 and arms["B"]["followup_rate"] == 0.0
    assert arms["A"]["tokens_mean"] > 0 and arms["A"]["p50_ms"] > 0
    [cmp] = rep["comparisons"]
    assert cmp["baseline"] == "A" and cmp["arm"] == "B" and cmp["difference"] == -1.0 and not cmp["stop"]
    assert len(cmp["p_always_valid_trail"]) == 2


def test_a_tenants_report_counts_only_its_own_requests(clinic):
    clinic.experiments.start("exp", _arms())
    clinic.answer(Question(Q, session="u1", cache=False, enforced={"tenant": "acme"}))
    clinic.answer(Question(Q, session="u2", cache=False, enforced={"tenant": "globex"}))
    clinic.answer(Question(Q, session="u3", cache=False))
    assert clinic.experiments.report("exp")["requests"] == 3
    mine = clinic.experiments.report("exp", {"tenant": "acme"})
    assert mine["requests"] == 1 and mine["tenant"] == {"tenant": "acme"}


def test_one_experiment_at_a_time_and_stopping_ends_the_split(clinic):
    clinic.experiments.start("exp", _arms())
    with pytest.raises(ConfigError, match="is running; stop it first"):
        clinic.experiments.start("exp2", _arms())
    clinic.experiments.stop("exp")
    seen = clinic.answer(Question(Q, session="u1", cache=False))
    assert seen.experiment is None and "experiment" not in seen.to_json()
    assert clinic.trace(seen.answer.trace_id).experiment == {}
    with pytest.raises(ConfigError, match="exists already"):
        clinic.experiments.start("exp", _arms())
    with pytest.raises(ConfigError, match="not running"):
        clinic.experiments.stop("exp")
    with pytest.raises(NoExperiment, match="there are: exp"):
        clinic.experiments.report("nope")


def test_the_evaluation_harness_never_joins_an_experiment(clinic, tmp_path):
    clinic.experiments.start("exp", _arms())
    with Clinic(clinic.settings, model=clinic.lm, kb=clinic.kb, experiments=False) as harness:
        seen = harness.answer(Question(Q, session="u1", cache=False))
    assert seen.experiment is None and clinic.experiments.report("exp")["requests"] == 0


def test_a_background_repair_runs_and_is_kept_in_the_answers_arm(clinic):
    clinic.experiments.start("exp", [Arm("A", 50.0), Arm("B", 50.0, (("top_k", 3),))])
    a, b = _unit_in(clinic, "A"), _unit_in(clinic, "B")
    q = Question(Q, session=b, repair="async")
    plain = clinic.answer(q)
    assert plain.repair_pending and plain.experiment["arm"] == "B"
    settings, pipeline, key = clinic.arm_of(clinic.trace(plain.trace.id))
    assert settings.top_k == 3 and pipeline.settings.top_k == 3 and key
    clinic.repair(q, plain.trace.id)
    assert clinic.answer(Question(Q, session=b)).cached  # the repaired answer, in B's cache
    assert not clinic.answer(Question(Q, session=a)).cached  # not in A's


def test_the_report_never_gives_the_salt_that_would_tell_whose_arm_is_whose(clinic):
    clinic.experiments.start("exp", _arms())
    clinic.answer(Question(Q, session="u1", cache=False, enforced={"tenant": "acme"}))
    salt = clinic.experiments.running().salt
    assert salt not in str(clinic.experiments.report("exp")) and salt not in str(clinic.experiments.listed())


@pytest.mark.parametrize("in_experiment", [False, True])
def test_an_answer_from_the_cache_loads_no_model(tmp_path, in_experiment):
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in BOND_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp_path / "cache", "llm": "fake"}
    with Clinic.open(tmp_path / "kb", **settings) as c:
        c.ingest([root])
        if in_experiment:
            c.experiments.start("exp", _arms())
        c.answer(Question(Q, session="u1", doctor=False))
    with Clinic.open(tmp_path / "kb", **settings) as c:  # a new process's clinic: nothing loaded yet
        seen = c.answer(Question(Q, session="u1", doctor=False))
        assert seen.cached and not c.parts._lm_loaded
