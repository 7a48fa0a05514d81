"""Contract every Verifier passes (learned, fake, lexical, the language model's judge over the fake model)."""

from __future__ import annotations

import json

import pytest

from ragclinic.errors import ModelError
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.judge import Judge
from ragclinic.verify import Verdict, Verifier, create_judge, create_verifier, sufficiency, task_threshold
from ragclinic.verify.judge import JudgeVerifier
from ragclinic.verify.learned import LearnedVerifier, weights_path

PASSAGE = "The Eiffel Tower is in Paris. It was completed in 1889 and is 330 metres tall."
OTHER = "Cats sleep for most of the day and hunt at dusk."
QUESTION = "How tall is the Eiffel Tower?"


@pytest.fixture(params=["learned", "learned-cross", "fake", "lexical", "llm-fake"])
def verifier(request) -> Verifier:
    if request.param == "llm-fake":
        lm = ScriptedLanguageModel(yes_prob=lambda m: 0.9 if "330 metres" in m[-1].content else 0.1)
        return create_verifier("llm", lm)
    return create_verifier(request.param)


def test_satisfies_both_protocols(verifier):
    assert isinstance(verifier, Verifier) and isinstance(verifier, Judge) and verifier.model_id
    assert 0.0 < verifier.relevance_threshold < 1.0


@pytest.mark.parametrize("task", ["sufficiency", "relevance", "support", "contradiction"])
def test_verdicts_are_probabilities_with_reasons(verifier, task):
    v = verifier.verify(task, PASSAGE, QUESTION)
    assert isinstance(v, Verdict) and 0.0 <= v.p <= 1.0 and v.by == verifier.model_id and v.reasons
    assert verifier.judge(task, PASSAGE, QUESTION) == pytest.approx(v.p)


def test_answering_passage_scores_above_an_unrelated_one(verifier):
    assert verifier.judge("relevance", PASSAGE, QUESTION) > verifier.judge("relevance", OTHER, QUESTION)


def test_set_sufficiency_is_the_best_passage(verifier):
    best = sufficiency(verifier, QUESTION, [OTHER, PASSAGE])
    assert best.p == pytest.approx(verifier.judge("relevance", PASSAGE, QUESTION))
    assert sufficiency(verifier, QUESTION, []).p == 0.0


def test_unknown_task_names_the_valid_ones(verifier):
    with pytest.raises(ValueError, match="sufficiency"):
        verifier.verify("vibes", PASSAGE, QUESTION)


# ---------------------------------------------------------------------------------------- the learned verifier
def test_learned_rejects_the_neighbouring_year_and_says_why():
    v = create_verifier("learned")
    q = "Who won the 2022 Nobel Prize in Literature?"
    right = "The 2022 Nobel Prize in Literature was awarded to Annie Ernaux for her courage and acuity."
    wrong = "The 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah for his uncompromising work."
    ok, bad = v.verify("sufficiency", right, q), v.verify("sufficiency", wrong, q)
    assert ok.p >= v.relevance_threshold > bad.p
    assert any("2021" in r and "2022" in r for r in bad.reasons)


def test_learned_support_catches_a_changed_number_and_a_changed_name():
    v = create_verifier("learned")
    need = task_threshold(v, "support", 0.5)
    passage = "The 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah. The prize is worth 10 million kronor."
    assert v.judge("support", passage, "Abdulrazak Gurnah won the 2021 Nobel Prize in Literature.") >= need  # reworded
    assert v.judge("support", passage, "The prize is worth 10 million kronor.") >= need
    assert v.judge("support", passage, "The prize is worth 12 million kronor.") < need
    assert v.judge("support", passage, "Annie Ernaux won the 2021 Nobel Prize in Literature.") < need
    assert v.judge("contradiction", passage, "The prize is worth 12 million kronor.") >= task_threshold(
        v, "contradiction", 0.5)


def test_learned_weights_are_hash_checked(tmp_path):
    bad = tmp_path / "verifier-v1.json"
    doc = json.loads(weights_path().read_text())
    doc["heads"]["relevance"]["threshold"] = 0.01
    bad.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="sha256"):
        LearnedVerifier(path=bad, sha256="0" * 64)
    doc["features"] = doc["features"][:-1]
    bad.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="other features"):
        LearnedVerifier(path=bad, sha256=None)


def test_create_judge_by_setting():
    assert isinstance(create_judge("learned"), LearnedVerifier) and create_judge("learned").cross is None
    assert create_judge("learned-cross").cross is not None
    assert create_judge("llm", None).model_id == "lexical-judge"  # no model: word overlap
    assert isinstance(create_verifier("lexical"), JudgeVerifier)
    with pytest.raises(Exception, match="valid names"):
        create_judge("oracle")
