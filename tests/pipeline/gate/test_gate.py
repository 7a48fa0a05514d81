"""Gate: question types, evidence sufficiency per type, refusal in the question's language, false premises."""

from __future__ import annotations

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.judge import LexicalJudge, LogitJudge
from ragclinic.pipeline.gate import classify_rules, decide
from ragclinic.pipeline.gate.evidence import comparison_sides
from ragclinic.pipeline.gate.gate import question_type
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Chunk, DocInfo, Hit, Passage


@pytest.mark.parametrize("question,qtype", [
    ("What is the risk-free rate?", "factual"),
    ("Who wrote the report?", "factual"),
    ("How many chunks are there?", "factual"),
    ("How do I rebuild the index?", "how-to"),
    ("Compare BM25 and dense retrieval", "comparison"),
    ("What is the difference between duration and convexity?", "comparison"),
    ("Why did the parser drop the hyphen?", "causal"),
    ("Do you think hybrid search is worth it?", "opinion"),
    ("无风险利率是什么？", "factual"),
    ("如何重建索引？", "how-to"),
    ("为什么检索质量决定答案质量？", "causal"),
    ("词法检索和向量检索有什么区别？", "comparison"),
    # issue 52: 怎么 before any verb asks for a way; 比较 before an adjective compares nothing; 多长 asks a figure
    ("怎么确认我这台机器上 1 号进程到底跑的是哪个程序？", "how-to"),
    ("只想让 wheel 组的人能切换成超级用户，该怎么配置？", "how-to"),
    ("怎么办？", "how-to"),
    ("他怎么会迟到？", "causal"),
    ("建账号时口令一般取多长比较合适？", "factual"),
    ("会议室最多能订多久？", "factual"),
    ("比较一下两种检索方式", "comparison"),
])
def test_rules_classify_clear_questions(question, qtype):
    assert classify_rules(question) == (qtype, True)


def test_unsure_rules_ask_the_language_model_and_only_then():
    lm = ScriptedLanguageModel(["causal"])
    assert question_type("risk-free rate", lm) == ("causal", "llm")  # no rule matches: the model decides
    assert question_type("What is the risk-free rate?", lm) == ("factual", "rules")
    assert len(lm.calls) == 1
    assert question_type("risk-free rate", None) == ("other", "rules")  # no model: the rules' guess stands


def test_comparison_sides():
    assert comparison_sides("What is the difference between duration and convexity?") == ("duration", "convexity")
    assert comparison_sides("BM25 vs dense retrieval") == ("BM25", "dense retrieval")
    assert comparison_sides("词法检索和向量检索有什么区别？") == ("词法检索", "向量检索")


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("gate"), BOND_DOCS)
    yield Pipeline(kb)
    kb.close()


def test_absent_answer_is_refused_and_present_answer_is_answered(pipe):
    absent, _ = pipe.ask("What is the boiling point of mercury?", save=False)
    assert absent.decision.route == "refuse" and absent.answer.refused and absent.answer.route == "refuse"
    assert "threshold" in absent.decision.reason and absent.answer.citations == ()
    present, _ = pipe.ask("What is the risk-free rate?", save=False)
    assert present.decision.route == "answer" and not present.answer.refused
    assert present.decision.evidence_score >= 0.5


def test_refusal_uses_the_question_language(pipe):
    state, _ = pipe.ask("水银的沸点是多少？", save=False)
    assert state.answer.refused and "无法" in state.answer.text


def test_nothing_to_search_for_asks_back(pipe):
    state, _ = pipe.ask("what is it?", save=False)
    assert state.answer.route == "clarify" and state.answer.text.endswith("?")


def test_comparison_needs_evidence_for_both_sides(pipe):
    state, _ = pipe.ask("What is the difference between duration and the cat?", save=False)
    assert state.decision.question_type == "comparison"
    both, _ = pipe.ask("What is the difference between duration and the risk-free rate?", save=False)
    assert both.decision.route == "answer", both.decision.reason
    one, _ = pipe.ask("What is the difference between duration and a zebra crossing?", save=False)
    assert one.decision.route == "refuse" and "zebra crossing" in one.decision.reason


def _passage(text: str, n: int = 1, doc: str = "d1") -> Passage:
    chunk = Chunk(f"c{n}", doc, text, 0, len(text), (), None, "en", 10, 0)
    return Passage(n, Hit(chunk, 1.0, (), n), DocInfo(doc, f"/{doc}.md", doc))


def test_false_premise_is_marked_not_answered_as_true(make_settings):
    s = make_settings()
    p = _passage("Albert Einstein received the Nobel Prize in Physics in 1921 for the photoelectric effect.")
    d, _ = decide("Why did Albert Einstein receive the Nobel Prize in Physics in 1930?", [p], s, LexicalJudge(), None)
    assert d.route == "answer" and d.false_premise and "1930" in d.reason and "1921" in d.reason
    ok, _ = decide("Why did Albert Einstein receive the Nobel Prize in Physics in 1921?", [p], s, LexicalJudge(), None)
    assert not ok.false_premise
    # a model judge that sees no contradiction vetoes the lexical suspicion
    veto = LogitJudge(ScriptedLanguageModel(yes_prob=0.05))
    d2, _ = decide("Why did Albert Einstein receive the Nobel Prize in Physics in 1930?", [p], s, veto, None)
    assert not d2.false_premise


def test_the_judge_decides_when_word_overlap_is_unsure(make_settings):
    s = make_settings()
    p = _passage("Short-dated government bills are the usual proxy for it.")
    yes = LogitJudge(ScriptedLanguageModel(yes_prob=0.8))
    d, scored = decide("What approximates the riskless return?", [p], s, yes, None)
    assert d.route == "answer" and scored[0].support == pytest.approx(0.8) and scored[0].support_by.startswith("logit")
    no = LogitJudge(ScriptedLanguageModel(yes_prob=0.1))
    d, _ = decide("What approximates the riskless return?", [p], s, no, None)
    assert d.route == "refuse"


def test_a_same_topic_passage_without_the_answer_is_refused_by_the_judge(make_settings):
    """RGB's hard negatives share the question's words; only the judge can tell them apart."""
    s = make_settings()
    near_miss = _passage("The sixth Legislative Council election was held on 4 September 2016 in Hong Kong.")
    q = "How many seats did the sixth Legislative Council election in Hong Kong fill?"
    no = LogitJudge(ScriptedLanguageModel(yes_prob=0.2))
    d, scored = decide(q, [near_miss], s, no, None)
    assert scored[0].support_by.startswith("logit") and d.route == "refuse"
    lexical_only, _ = decide(q, [near_miss], s, LexicalJudge(), None)
    assert lexical_only.route == "answer"  # what the gate would do without a model


def test_judging_stops_at_the_first_accepted_passage(make_settings):
    s = make_settings()
    lm = ScriptedLanguageModel(yes_prob=0.95)
    ps = [_passage("Treasury bills proxy the risk-free rate.", 1), _passage("Risk-free rate basics.", 2, "d2")]
    d, scored = decide("What proxies the risk-free rate?", ps, s, LogitJudge(lm), None)
    assert d.route == "answer" and len(lm.calls) == 1
    assert [p.support_by.startswith("logit") for p in scored] == [True, False]
