"""Contract every Judge passes (lexical, logit judge over the fake model, logit judge over local-small)."""

from __future__ import annotations

import pytest

from ragclinic.config import Settings
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.judge import JUDGES, TASKS, Judge, LexicalJudge, LogitJudge, judge_messages

PASSAGE = "The Eiffel Tower is in Paris. It was completed in 1889 and is 330 metres tall."
OTHER = "Cats sleep for most of the day and hunt at dusk."


@pytest.fixture(params=["lexical", "logit-fake", pytest.param("logit-local-small", marks=pytest.mark.slow)])
def judge(request, tmp_path_factory) -> Judge:
    if request.param == "lexical":
        return LexicalJudge()
    if request.param == "logit-fake":
        lm = ScriptedLanguageModel(yes_prob=lambda m: 0.9 if "330 metres" in m[-1].content
                                   else 0.1)
        return LogitJudge(lm)
    from ragclinic.models.llama import load_llama

    settings = Settings.load(tmp_path_factory.mktemp("kb"), cache_dir=tmp_path_factory.mktemp("cache"),
                             llm_n_ctx=1024)
    return LogitJudge(load_llama("local-small", settings))


def test_satisfies_the_protocol(judge):
    assert isinstance(judge, Judge) and judge.model_id


@pytest.mark.parametrize("task", TASKS)
def test_scores_are_probabilities(judge, task):
    assert 0.0 <= judge.judge(task, PASSAGE, "How tall is the Eiffel Tower?") <= 1.0


def test_relevant_passage_scores_above_an_unrelated_one(judge):
    q = "How tall is the Eiffel Tower?"
    assert judge.judge("relevance", PASSAGE, q) > judge.judge("relevance", OTHER, q)


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="valid: relevance, support, contradiction"):
        judge_messages("vibes", PASSAGE, "x")  # type: ignore[arg-type]


def test_registry_names():
    assert {"llm", "lexical"} <= set(JUDGES.names())
