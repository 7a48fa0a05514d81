"""Generate: citation parsing and validation, outside-knowledge phrases, the extractive and LLM generators."""

from __future__ import annotations

import dataclasses

from helpers import BOND_DOCS, build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.judge import LexicalJudge, LogitJudge
from ragclinic.pipeline.generate import check_claims, violations
from ragclinic.pipeline.generate.base import GenerateInput
from ragclinic.pipeline.generate.citations import declines, parse_citations
from ragclinic.pipeline.generate.extractive import ExtractiveGenerator
from ragclinic.pipeline.generate.llm import LLMGenerator
from ragclinic.pipeline.generate.prompt import build_messages
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Chunk, Conflict, DocInfo, GateDecision, Hit, Passage

P1 = "The 10-year treasury note yields 3.9% per year. Yields are quoted annually."
P2 = "Duration measures how much a bond price moves when rates change by one point."


def _passages():
    out = []
    for n, text in enumerate([P1, P2], start=1):
        c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, "en", 20, 0)
        out.append(Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}.md", f"Doc {n}"), support=0.9))
    return out


def test_parse_citations_variants():
    assert parse_citations("A [1]. B [2][3]. C [1, 4]. D [2，5]") == [1, 2, 3, 1, 4, 2, 5]


def test_claims_are_checked_against_their_cited_passage(make_settings):
    s = make_settings()
    claims = check_claims("The 10-year note yields 3.9% per year [1]. Duration measures price moves [2]. "
                          "The note yields 7.5% per year [1]. Bonds are blue [9]. Unicorns guarantee coupons. Treasury notes pay yields annually.",
                          _passages(), LexicalJudge(), s)
    verdicts = [(c.verdict, c.cited) for c in claims]
    assert verdicts == [("supported", (1,)), ("supported", (2,)), ("unsupported", (1,)),
                        ("invalid_citation", (9,)), ("unsupported", ()), ("uncited", ())]
    assert claims[2].score <= 0.3  # the changed number caps support


def test_the_judge_rescues_paraphrases_and_catches_contradictions(make_settings):
    s = make_settings()
    para = LogitJudge(ScriptedLanguageModel(yes_prob=lambda m: 0.9 if "state or directly imply" in m[-1].content
                                            else 0.1))
    [c] = check_claims("Ten-year government paper returns about four percent annually [1].", _passages(), para, s)
    assert c.verdict == "supported" and c.checked_by.startswith("logit")
    contra = LogitJudge(ScriptedLanguageModel(yes_prob=lambda m: 0.9 if "contradict" in m[-1].content else 0.1))
    [c] = check_claims("Ten-year government paper returns nothing at all [1].", _passages(), contra, s)
    assert c.verdict == "unsupported"  # the contradiction question is off by default (uninformative, RESULTS.md)
    [c] = check_claims("Ten-year government paper returns nothing at all [1].", _passages(), contra,
                       make_settings(claim_judge_contradiction=True))
    assert c.verdict == "contradicted"


def test_violation_phrases_in_both_languages():
    assert violations("As far as I know, yields rise.") == ["as far as i know"]
    assert violations("据我所知，收益率会上升。") == ["据我所知"]
    assert violations("Yields rise [1].") == []


def test_declines_detects_a_no_answer_reply():
    assert declines("The documents do not say.") and declines("文档中没有提到。")
    assert not declines("The note yields 3.9% [1].")


def test_extractive_answer_cites_its_best_sentences():
    d = GateDecision("answer", "factual", 0.9, "ok")
    draft = ExtractiveGenerator(2).generate(GenerateInput("What does the 10-year note yield?", tuple(_passages()), d))
    assert draft.text.startswith("The 10-year treasury note yields 3.9% per year [1].")
    assert draft.generator == "extractive"


def test_extractive_states_conflicts_with_both_sources():
    d = GateDecision("answer", "factual", 0.9, "ok")
    c = Conflict("number", "c1", "c2", ("3.9 %",), ("4.1 %",), "The note yields 3.9%.", "The note yields 4.1%.")
    draft = ExtractiveGenerator().generate(GenerateInput("What does the note yield?", tuple(_passages()), d, (c,)))
    assert "disagree" in draft.text and "[1]" in draft.text and "[2]" in draft.text


def test_prompt_labels_passages_by_number_only_and_carries_the_notes():
    d = GateDecision("answer", "factual", 0.9, "false premise: the question says 1930 but passage [1] says 1921",
                     false_premise=True)
    msgs = build_messages(GenerateInput("Why 1930?", tuple(_passages()), d))
    assert msgs[0].role == "system" and '"status"' in msgs[0].content and '"evidence"' in msgs[0].content
    assert "[1] (Doc 1) The 10-year" in msgs[1].content and "[2] (Doc 2) " in msgs[1].content
    assert "Passage" not in msgs[1].content  # nothing for the model to imitate
    assert "false premise" in msgs[1].content and msgs[1].content.endswith("Question: Why 1930?")


def test_llm_generator_asks_for_the_schema_renders_and_streams_the_answer_field():
    lm = ScriptedLanguageModel(['{"status": "answered", "answer": "3.9% per year", "evidence": [1]}'])
    pieces = []
    d = GateDecision("answer", "factual", 0.9, "")
    draft = LLMGenerator(lm, 64).generate(GenerateInput("What does the note yield?", tuple(_passages()), d),
                                          pieces.append)
    assert lm.schemas[-1]["required"] == ["status", "answer", "evidence"]
    assert draft.text == "3.9% per year [1]." and draft.items[0].evidence == (1,) and draft.reply_form == "json"
    assert "".join(pieces) == draft.streamed == "3.9% per year"  # the marks come once the layer checked them
    assert draft.prompt_tokens > 0 and draft.generator == "fake-scripted"
    assert not any("{" in p or "status" in p for p in pieces)  # the JSON itself never reaches the user


def test_llm_generator_reads_a_free_text_reply_as_one_claim():
    """A server that refused the schema, and a model that ignored the prompt: the text is the answer."""
    lm = ScriptedLanguageModel(["The note yields 3.9% per year [1]."])
    pieces = []
    draft = LLMGenerator(lm, 64).generate(GenerateInput("q?", tuple(_passages()), GateDecision("answer", "factual",
                                                                                                 0.9, "")), pieces.append)
    assert draft.text == "The note yields 3.9% per year [1]." and draft.reply_form == "text"
    assert draft.text.startswith("".join(pieces))


def test_pipeline_flags_bad_citations_and_outside_knowledge(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    reply = ('{"status": "answered", "points": [{"text": "As far as I know, the risk-free rate is 12%", '
             '"evidence": [1]}, {"text": "It is set by the moon", "evidence": [7]}]}')
    lm = ScriptedLanguageModel([reply], yes_prob=lambda m: 0.9 if "contain the answer" in m[-1].content else 0.1)
    state, trace = Pipeline(kb, lm=lm).ask("What is the risk-free rate?")
    a = state.answer
    assert "violation: as far as i know" in a.flags
    assert any(f.startswith("invalid_citation") for f in a.flags)
    assert any(f.startswith("unsupported_citation") for f in a.flags)
    assert "[7]" not in a.text  # a number no passage has is never printed
    assert a.confidence < 0.75
    refusal = '{"status": "not_in_documents", "answer": "", "evidence": []}'
    declined, _ = Pipeline(kb, lm=ScriptedLanguageModel([refusal])).ask("What is the risk-free rate?")
    assert declined.answer.route == "refuse" and declined.answer.refused
    kb.close()


def test_sentences_never_split_inside_quotations():
    from ragclinic.pipeline.generate.citations import answer_sentences as _sentences

    assert _sentences('He said "Stop! Now." and left. Then it rained.') == ['He said "Stop! Now." and left.',
                                                                          "Then it rained."]


def test_a_short_answer_whose_number_no_cited_passage_has_is_unsupported_whatever_the_judge_says(make_settings):
    """"How many legs does a spider have?" answered "6 [1]" from passages without a 6: never a clean answer."""
    judge = LogitJudge(ScriptedLanguageModel(yes_prob=0.99))
    from ragclinic.pipeline.generate.citations import check_items
    from ragclinic.pipeline.generate.base import Item

    claims = check_items([Item("6", (1,))], _passages(), judge, make_settings(), "How many legs does a spider have?")
    assert claims[0].verdict == "unsupported" and claims[0].checked_by.startswith("numbers: 6")
    claims = check_items([Item("3.9% per year", (1,))], _passages(), judge, make_settings(), "What does it yield?")
    assert claims[0].verdict == "supported"


def test_the_stream_ends_with_exactly_the_answer_the_pipeline_returns(tmp_path):
    """The terminal shows what `--json` returns: the answer field streams, then its checked citation marks — only
    the cited passages that state the claim (the small model lists every passage it was shown)."""
    kb = build_kb(tmp_path, BOND_DOCS)

    def reply(messages):
        import re

        ns = re.findall(r"^\[(\d+)\]", messages[-1].content, re.M)
        return ('{"status": "answered", "answer": "Duration measures how much a bond price moves when interest '
                'rates change", "evidence": [' + ", ".join(ns[:3]) + "]}")

    pieces = []
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask("What does duration measure?",
                                                                               on_token=pieces.append)
    a = state.answer
    assert a.route == "answer" and "".join(pieces) == a.text
    assert len(a.citations) == 1 and "duration" in a.citations[0].text.lower()  # the others do not state it
    assert a.text.endswith(f"[{a.citations[0].n}].")
    kb.close()


def test_a_short_answer_that_only_echoes_the_questions_number_is_unsupported(make_settings):
    """"6" to "第六届立法会有多少个议席？" (the model echoed the ordinal) — however sure the verifier is."""
    from ragclinic.pipeline.generate.citations import check_items
    from ragclinic.pipeline.generate.base import Item

    zh = _passages()[:1]
    zh = [dataclasses.replace(zh[0], hit=dataclasses.replace(zh[0].hit, chunk=dataclasses.replace(
        zh[0].chunk, text="第六届立法会选举于2016年举行，共有6个选区。", language="zh")))]
    judge = LogitJudge(ScriptedLanguageModel(yes_prob=0.99))
    q = "香港第六届立法会选举有多少个议席？"
    assert check_items([Item("6", (1,))], zh, judge, make_settings(), q)[0].verdict == "unsupported"
    # a number the question does not hold, and a choice between the question's numbers, are judged as usual
    assert check_items([Item("2016", (1,))], zh, judge, make_settings(), "第六届立法会选举在哪一年举行？")[0].verdict \
        == "supported"
    assert check_items([Item("6", (1,))], zh, judge, make_settings(), "选区是6个还是7个？")[0].verdict == "supported"


def test_a_decline_written_into_the_answer_field_is_a_refusal(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    for said in ("The documents do not mention what the risk-free rate is.", "文档中没有提到。"):
        reply = '{"status": "answered", "answer": "%s", "evidence": [1]}' % said
        state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask("What is the risk-free rate?")
        assert state.answer.refused and state.answer.route == "refuse", said
    kb.close()


def test_a_points_answer_streams_once_exactly_as_returned(tmp_path):
    """Steps are numbered and cited in the answer: the stream shows that text once, never the points run together."""
    kb = build_kb(tmp_path, BOND_DOCS)
    reply = ('{"status": "answered", "points": [{"text": "Duration measures how much a bond price moves", '
             '"evidence": [1]}, {"text": "Short-dated treasury bills are the usual proxy for the risk-free rate", '
             '"evidence": [1]}]}')
    pieces = []
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "How do I use duration and the risk-free rate?", on_token=pieces.append)
    a = state.answer
    assert a.route == "answer" and "".join(pieces) == a.text and a.text.count("Duration measures") == 1
    kb.close()


def test_a_right_answer_cited_to_the_wrong_passage_is_recited_not_refused(make_settings):
    """The 1.5B model answered "apt-cacher-ng" citing [2][3] while the table row naming it was [1]; the check refused
    a right answer. Another shown passage that backs the claim becomes its citation; none: it stays unsupported."""
    from ragclinic.pipeline.generate.citations import check_items
    from ragclinic.pipeline.generate.base import Item
    from ragclinic.verify.fake import FakeVerifier

    class CheapVerifier(FakeVerifier):
        cheap = True

    row = "| apt-cacher-ng | V:4, I:5 | 1816 | a caching proxy for Debian packages |"
    c = Chunk("c3", "d3", row, 0, len(row), (), None, "en", 20, 0)
    passages = _passages() + [Passage(3, Hit(c, 1.0, (), 3), DocInfo("d3", "/d3.md", "Doc 3"), support=0.9)]
    judge = CheapVerifier(rules={"caching proxy": 0.95})
    q = "Our office has dozens of Debian machines; which tool keeps one shared cache of the packages they download?"
    [claim] = check_items([Item("apt-cacher-ng", (1, 2))], passages, judge, make_settings(), q, recite=True)
    assert claim.verdict == "supported" and claim.cited == (3,) and claim.checked_by.endswith("+recited")
    [claim] = check_items([Item("apt-cacher-ng", (1, 2))], passages[:2], judge, make_settings(), q, recite=True)
    assert claim.verdict == "unsupported" and claim.cited == (1, 2)
    # a free-text answer keeps its own marks in its text: not re-cited
    [claim] = check_items([Item("apt-cacher-ng", (1, 2))], passages, judge, make_settings(), q)
    assert claim.verdict == "unsupported" and claim.cited == (1, 2)
    # an answer that only echoes the question's number is no answer, whichever passage has the number
    echo = [Passage(4, Hit(dataclasses.replace(c, id="c4", text="There are 6 regional mirrors."), 1.0, (), 4),
                    DocInfo("d4", "/d4.md", "Doc 4"), support=0.9)]
    [claim] = check_items([Item("6", (1,))], passages + echo, CheapVerifier(rules={"mirrors": 0.95}), make_settings(),
                          "How many packages does the 6th mirror hold?", recite=True)
    assert claim.verdict == "unsupported" and claim.cited == (1,)
