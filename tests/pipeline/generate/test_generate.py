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


def test_prompt_numbers_passages_and_carries_the_notes():
    d = GateDecision("answer", "factual", 0.9, "false premise: the question says 1930 but passage [1] says 1921",
                     false_premise=True)
    msgs = build_messages(GenerateInput("Why 1930?", tuple(_passages()), d))
    assert msgs[0].role == "system" and "only the passages" in msgs[0].content
    assert "Passage [1] (Doc 1):\nThe 10-year" in msgs[1].content and "Passage [2] (Doc 2):" in msgs[1].content
    assert "false premise" in msgs[1].content and msgs[1].content.endswith("Question: Why 1930?")


def test_llm_generator_streams_and_reports_tokens():
    lm = ScriptedLanguageModel(["The note yields 3.9% per year [1]."])
    pieces = []
    draft = LLMGenerator(lm, 64).generate(GenerateInput("q?", tuple(_passages()), GateDecision("answer", "factual",
                                                                                                 0.9, "")), pieces.append)
    assert "".join(pieces) == draft.text and draft.prompt_tokens > 0 and draft.generator == "fake-scripted"


def test_pipeline_flags_bad_citations_and_outside_knowledge(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    lm = ScriptedLanguageModel(["As far as I know, the risk-free rate is 12% [1]. It is set by the moon [7]."],
                              yes_prob=lambda m: 0.9 if "contain the answer" in m[-1].content else 0.1)
    state, trace = Pipeline(kb, lm=lm).ask("What is the risk-free rate?")
    a = state.answer
    assert "violation: as far as i know" in a.flags
    assert any(f.startswith("invalid_citation") for f in a.flags)
    assert any(f.startswith("unsupported_citation") for f in a.flags)
    assert a.confidence < 0.75
    declined, _ = Pipeline(kb, lm=ScriptedLanguageModel(["The documents do not say."])).ask("What is the risk-free rate?")
    assert declined.answer.route == "refuse" and declined.answer.refused
    kb.close()


def test_attribution_cites_uncited_sentences_in_both_languages():
    from ragclinic.pipeline.generate.citations import attribute_citations

    text, n = attribute_citations("The 10-year note yields 3.9% per year. Unicorns pay coupons.", _passages(), 0.5)
    assert text == "The 10-year note yields 3.9% per year [1]. Unicorns pay coupons." and n == 1
    zh = _passages()[:1]
    zh = [dataclasses.replace(zh[0], hit=dataclasses.replace(zh[0].hit, chunk=dataclasses.replace(
        zh[0].chunk, text="知识库为每个段落建立词法索引和向量索引。", language="zh")))]
    text, n = attribute_citations("知识库为每个段落建立了词法索引和向量索引。", zh, 0.5)
    assert text == "知识库为每个段落建立了词法索引和向量索引[1]。" and n == 1


def test_citations_never_land_inside_code_spans_format_tokens_or_quotations():
    """From a Rust manual in HTML: the citation step used to split `{:?}` and `vec!` ("{: [1]?}", "`vec [1]!`")."""
    from ragclinic.pipeline.generate.citations import answer_sentences as _sentences, attribute_citations

    text = ("A value printed with {:?} uses the Debug trait. The vec! macro builds a vector. "
            "Use the `vec!` macro to build a vector.")
    c = Chunk("c1", "d1", text, 0, len(text), (), None, "en", 30, 0)
    ps = [Passage(1, Hit(c, 1.0, (), 1), DocInfo("d1", "/rust.html", "Rust"), support=0.9)]
    answer = "Values printed with {:?} use the Debug trait. Use the `vec!` macro to build a vector."
    cited, n = attribute_citations(answer, ps, 0.5)
    assert "{:?}" in cited and "`vec!`" in cited and n == 2
    assert cited == "Values printed with {:?} use the Debug trait [1]. Use the `vec!` macro to build a vector [1]."
    assert _sentences('He said "Stop! Now." and left. Then it rained.') == ['He said "Stop! Now." and left.',
                                                                          "Then it rained."]
    glued, n = attribute_citations("The vec!macro builds a vector.", ps, 0.5)  # a split inside a token
    assert "vec![" not in glued and "vec [" not in glued


class _CheapFake:
    """A cheap verifier (as the learned one is) scripted by word coverage."""
    cheap = True

    def __init__(self):
        from ragclinic.verify.fake import FakeVerifier

        self._fake = FakeVerifier()
        self.model_id = self._fake.model_id

    def judge(self, task, passage, text):
        return self._fake.judge(task, passage, text)


def test_a_claim_citing_the_wrong_passage_is_recited_to_the_one_that_states_it():
    from ragclinic.pipeline.generate.citations import recite

    v = _CheapFake()
    text, moved = recite("Duration measures how much a bond price moves when rates change [1].", _passages(), v)
    assert moved == 1 and text.endswith("[2].")
    # with the question: only a passage that answers it (it has the claim's answer and what is asked about)
    q = "What does duration measure?"
    text, moved = recite("Duration measures how much a bond price moves when rates change [1].", _passages(), v, q)
    assert (text, moved) == ("Duration measures how much a bond price moves when rates change [2].", 1)
    # a claim its cited passage supports stays; a claim no passage supports keeps its (wrong) number for the checks
    right = "The 10-year treasury note yields 3.9% per year [1]. Unicorns guarantee blue coupons forever [2]."
    assert recite(right, _passages(), v) == (right, 0)
    # not without a cheap verifier: the 1.5B judge is not asked about every passage
    wrong = "Duration measures how much a bond price moves when rates change [1]."
    assert recite(wrong, _passages(), LexicalJudge()) == (wrong, 0)
    # several markers collapse into the one supporting passage; the checks then find the claim supported
    text, moved = recite("Duration measures how much a bond price moves [1] when rates change [1].", _passages(), v)
    assert text == "Duration measures how much a bond price moves [2] when rates change." and moved == 1
    # a claim the other passage states that does not answer the question is not moved there
    off = "Duration measures how much a bond price moves when rates change [1]."
    assert recite(off, _passages(), v, "What does the 10-year treasury note yield?") == (off, 0)
