"""The gate with the learned verifier (the product default): every passage scored, the reason named."""

from __future__ import annotations

from helpers import build_kb
from ragclinic.pipeline.runner import Pipeline

DOCS = {
    "prize-2021.md": "# Prize\n\nThe 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah for his "
                     "uncompromising and compassionate work.\n",
    "cats.md": "# Cats\n\nThe cat sat on the warm kitchen floor all afternoon.\n",
}


def test_the_neighbouring_year_is_refused_with_the_verifiers_reason(tmp_path):
    kb = build_kb(tmp_path, DOCS, judge="learned")
    state, trace = Pipeline(kb).ask("Who won the 2022 Nobel Prize in Literature?")
    answer = state.answer
    assert answer.route == "refuse"
    gate = trace.span("gate").outputs
    assert gate["support_by"] == ["learned-verifier:verifier-v1"]  # every passage scored by the verifier
    reason = gate["decision"]["reason"]
    assert "learned-verifier" in reason and "2021" in reason and "2022" in reason
    assert all(p["support_why"] for p in gate["passages"])


def test_the_year_asked_about_is_answered(tmp_path):
    kb = build_kb(tmp_path, DOCS, judge="learned")
    state, trace = Pipeline(kb).ask("Who won the 2021 Nobel Prize in Literature?")
    answer = state.answer
    assert answer.route == "answer" and "Gurnah" in answer.text
    from ragclinic.verify import create_verifier

    assert trace.span("gate").outputs["decision"]["evidence_score"] >= create_verifier("learned").relevance_threshold


def test_an_answer_no_passage_states_is_refused_and_kept_in_the_trace(tmp_path):
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    kb = build_kb(tmp_path, DOCS, judge="learned", gate_threshold_judge=0.0)  # the gate lets it through
    lm = ScriptedLanguageModel(["The 2022 prize went to Annie Ernaux of France [1]."])
    state, trace = Pipeline(kb, lm=lm).ask("Who won the 2022 Nobel Prize in Literature?")
    assert state.answer.route == "refuse" and state.answer.claims == ()
    assert any(f.startswith("answer_unsupported:") for f in state.answer.flags)
    draft = trace.span("generate").outputs["unsupported_draft"]
    assert "Ernaux" in draft["text"] and draft["claims"][0]["verdict"] in ("unsupported", "contradicted")


def test_a_supported_model_answer_stands(tmp_path):
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    kb = build_kb(tmp_path, DOCS, judge="learned")
    lm = ScriptedLanguageModel(["Abdulrazak Gurnah won the 2021 Nobel Prize in Literature [1]."])
    state, _ = Pipeline(kb, lm=lm).ask("Who won the 2021 Nobel Prize in Literature?")
    assert state.answer.route == "answer" and state.answer.claims[0].verdict == "supported"


def test_an_unsupported_answer_is_answered_again_from_the_verified_passages(tmp_path):
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    docs = dict(DOCS, **{"prize-2022.md": "# Prize 2022\n\nThe 2022 Nobel Prize in Literature was awarded to Annie "
                                         "Ernaux for the courage and clinical acuity of her writing.\n"})
    kb = build_kb(tmp_path, docs, judge="learned")
    first = "The 2022 prize went to Abdulrazak Gurnah [{n21}]."
    again = "Annie Ernaux won the 2022 Nobel Prize in Literature [{n22}]."
    replies = []

    def reply(messages):  # cite the passages by the numbers the prompt gave them
        import re

        prompt = messages[-1].content
        nums = {name: next((m.group(1) for m in re.finditer(r"^\[(\d+)\]([^\n]*)", prompt, re.M)
                            if name in m.group(2)), "9") for name in ("Gurnah", "Ernaux")}
        replies.append(prompt)
        return (first if len(replies) == 1 else again).format(n21=nums["Gurnah"], n22=nums["Ernaux"])

    lm = ScriptedLanguageModel([reply])
    state, trace = Pipeline(kb, lm=lm).ask("Who won the 2022 Nobel Prize in Literature?")
    assert state.answer.route == "answer" and "Ernaux" in state.answer.text
    assert any(f.startswith("answer_regenerated:") for f in state.answer.flags)
    assert "Gurnah" in trace.span("generate").outputs["unsupported_draft"]["text"]
    assert len(replies) == 2 and "Gurnah" not in replies[1]  # the second prompt holds only verified passages


def test_a_decline_over_a_passage_the_verifier_is_sure_of_is_answered_again(tmp_path):
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    kb = build_kb(tmp_path, DOCS, judge="learned", decline_retry_evidence=0.5)
    lm = ScriptedLanguageModel(["The documents do not say.",
                                "Abdulrazak Gurnah won the 2021 Nobel Prize in Literature [1]."])
    state, trace = Pipeline(kb, lm=lm).ask("Who won the 2021 Nobel Prize in Literature?")
    assert state.answer.route == "answer" and "Gurnah" in state.answer.text
    assert any(f.startswith("answer_regenerated: the model said") for f in state.answer.flags)
    assert "Read the sources from the most relevant one" in lm.calls[-1][1][0].content  # variant 2
    assert trace.span("generate").outputs["unsupported_draft"]["text"].startswith("I can't answer this")


def test_a_decline_stays_a_refusal_when_the_verifier_is_not_sure(tmp_path):
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    kb = build_kb(tmp_path, DOCS, judge="learned", decline_retry_evidence=1.01)
    # the second reading (the peer's wording) finds nothing either: the decline stands, not asked a third time
    lm = ScriptedLanguageModel(["The documents do not say.", "insufficient information", "Gurnah [1]."])
    state, _ = Pipeline(kb, lm=lm).ask("Who won the 2021 Nobel Prize in Literature?")
    assert state.answer.route == "refuse" and len([c for c in lm.calls if c[0] == "chat"]) == 2
