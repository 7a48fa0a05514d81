"""Context selection: the generator is shown the answer-bearing sentences and their neighbours, not passages the
verifier ruled out; citations keep the passages' numbers; the trace keeps both."""

from __future__ import annotations

import re

from helpers import BOND_DOCS, build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.base import GenerateInput
from ragclinic.pipeline.generate.prompt import build_messages
from ragclinic.pipeline.generate.select import excerpt, select_context
from ragclinic.pipeline.runner import Pipeline
from ragclinic.text.support import content_terms
from ragclinic.types import Chunk, Conflict, DocInfo, GateDecision, Hit, Passage

LONG = ("Bonds are loans to governments and companies. They pay a coupon every year. "
        "The coupon of the 2031 note is 4.5 percent. It is paid in two instalments. "
        "Prices move against rates. Analysts watch the curve. Some investors ladder their holdings.")
ZH = ("香港是一个国际化的大城市，位于中国南部沿海地区。它有很多高楼大厦，夜景非常有名，吸引了大量游客。"
      "第六届立法会共有70个议席。选举每四年举行一次，由选民投票产生议员。市民普遍关心住房和教育问题。"
      "城市的公共交通也很方便，地铁和巴士网络覆盖全港各区。")


def _p(n, text, support=0.9, by="learned-verifier:v1"):
    c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, "en", 20, 0)
    return Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}.md", f"Doc {n}"), support=support, support_by=by)


def test_the_answer_sentence_and_its_neighbours_are_kept_in_order():
    out = excerpt(LONG, content_terms("What is the coupon of the 2031 note?"))
    assert "The coupon of the 2031 note is 4.5 percent." in out
    assert "They pay a coupon every year." in out and "It is paid in two instalments." in out
    assert "ladder" not in out and out.endswith("…") and out.startswith("…")
    assert len(out) < len(LONG)


def test_chinese_sentences_are_joined_without_spaces():
    out = excerpt(ZH, content_terms("香港第六届立法会有多少个议席？"))
    assert "第六届立法会共有70个议席。" in out and "交通" not in out and " 第六届" not in out


def test_short_passages_and_passages_without_the_question_terms_are_kept_whole():
    short = "The coupon is 4.5 percent. It is paid twice. Rates rose."
    assert excerpt(short, content_terms("What is the coupon?")) == short
    assert excerpt(LONG, content_terms("Who painted the Mona Lisa?")) == LONG


def test_passages_the_verifier_rules_out_are_dropped_but_never_the_best_or_a_conflict():
    ps = [_p(1, LONG, 0.95), _p(2, "Unrelated text about weather.", 0.02), _p(3, "Another one.", 0.01),
          _p(4, "Lexically scored.", 0.0, by="lexical"), _p(5, "In a conflict.", 0.01),
          _p(6, "The 2031 note trades at par.", 0.01)]
    conflict = Conflict("number", "c1", "c5", ("4.5",), ("5.0",), "", "")
    sel = select_context("What is the coupon of the 2031 note?", ps, threshold=0.2, conflicts=[conflict])
    # 2 is among the best two; 4 was not scored by a verifier; 5 is in a conflict; 6 shares the question's terms
    assert sel.dropped == (3,)
    shown = dict(sel.excerpts)
    assert set(shown) == {1, 2, 4, 5, 6} and sel.chars_shown < sel.chars_full
    assert select_context("q?", ps, threshold=None).dropped == ()
    msgs = build_messages(GenerateInput("What is the coupon?", tuple(ps), GateDecision("answer", "factual", 0.9, ""),
                                        excerpts=sel.excerpts))
    assert "[3]" not in msgs[1].content and "[5] (Doc 5) In a conflict." in msgs[1].content
    assert "ladder" not in msgs[1].content


def test_the_pipeline_shows_the_selection_and_keeps_citations_on_the_right_chunk(tmp_path):
    docs = {**BOND_DOCS, "notes.md": "# Notes\n\n" + LONG + "\n"}
    kb = build_kb(tmp_path, docs)
    lm = ScriptedLanguageModel(["Short-dated treasury bills are the usual proxy for the risk-free rate [1]."])
    state, trace = Pipeline(kb, lm=lm).ask("What is the coupon of the 2031 note?")
    ctx = trace.span("generate").outputs["context"]
    prompt = next(m for kind, m in lm.calls if kind == "chat")[-1].content
    assert ctx["chars_shown"] < ctx["chars_full"] and "ladder" not in prompt
    for n, text in ctx["shown"].items():
        assert re.search(rf"^\[{n}\] ", prompt, re.M) and text in prompt
    assert not any(re.search(rf"^\[{n}\] ", prompt, re.M) for n in ctx["dropped"])
    whole = {p["n"]: p for p in trace.span("gate").outputs["passages"]}
    assert any("ladder" in str(p) for p in whole.values())  # the trace keeps the passages whole
    assert all(c.chunk_id == next(p.chunk.id for p in state.passages if p.n == c.n) for c in state.answer.citations)
    kb.close()


def test_context_selection_can_be_turned_off(tmp_path):
    kb = build_kb(tmp_path, {"notes.md": "# Notes\n\n" + LONG + "\n"})
    lm = ScriptedLanguageModel(["The coupon is 4.5 percent [1]."])
    _, trace = Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update={"context_select": False})).ask(
        "What is the coupon of the 2031 note?")
    assert "context" not in trace.span("generate").outputs and "ladder" in next(m for k, m in lm.calls if k == "chat")[-1].content
    kb.close()


def test_a_low_score_alone_never_drops_a_passage_on_the_question_topic():
    ps = [_p(1, "Treasury bills are the usual proxy for the risk-free rate.", 0.95),
          _p(2, "The risk-free rate has no default risk.", 0.9),
          _p(3, "Duration measures how much a bond price moves when rates change.", 0.05),
          _p(4, "Coupons are paid twice a year.", 0.04)]
    sel = select_context("What is duration and what is the usual proxy for the risk-free rate?", ps, threshold=0.2)
    assert sel.dropped == (4,)
    assert select_context("When was the film released?", [_p(1, "A film review.", 0.9), _p(2, "Cast list.", 0.8),
                          _p(3, "The film was released on 12 February 2021.", 0.02)], threshold=0.2).dropped == ()


def test_a_sentence_with_a_question_term_the_kept_ones_lack_is_kept():
    text = ("Steve Conrad, screenwriter. I watched it on new year's morning and cried at the end. "
            "The ending was known from the start, but the journey mattered. "
            "Many people love The Pursuit of Happyness and watch it again every year with family.")
    out = excerpt(text, content_terms("Who is the screenwriter of The Pursuit of Happyness?"))
    assert "Steve Conrad, screenwriter." in out and "Pursuit of Happyness" in out


def test_kept_sentences_are_the_passage_text_as_it_stands():
    text = ("Jun 24, 2020 ... 《当幸福来敲门》. 导演: 加布里尔·穆奇诺. 编剧: Steve Conrad ... 幸福就在我们身边。"
            "我们要珍惜每一点一滴。天气很好。我们去公园散步。晚上吃了饺子，很好吃。")
    out = excerpt(text, content_terms("《当幸福来敲门》的编剧是谁"))
    for piece in out.strip("…").split(" … "):
        assert piece in text  # no space added or removed
    assert "编剧: Steve Conrad" in out


def test_a_paraphrased_question_sees_the_passage_whole():
    """The user's words are not the passage's ("seats" / "议席" asked as "位子"): overlap cannot tell which sentence
    answers, so under the floor the passage is shown whole; a question in the passage's own words is still cut."""
    asked = content_terms("全港的新一届议会一共坐多少人？")  # "全港" is only in the last sentence
    assert excerpt(ZH, asked, floor=0.4) == ZH
    assert excerpt(ZH, asked, floor=0.02) != ZH  # the old rule cut it: the answering sentence went missing
    assert "70个议席" not in excerpt(ZH, asked, floor=0.02)
    own_words = content_terms("香港第六届立法会有多少个议席？")
    assert excerpt(ZH, own_words, floor=0.4) != ZH and "第六届立法会共有70个议席。" in excerpt(ZH, own_words, floor=0.4)
