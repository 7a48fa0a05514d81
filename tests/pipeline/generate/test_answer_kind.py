"""An answer that holds nothing of the kind the question asks for (a number, a year) is answered again, asked for
that kind — issue 52: "…a city whose population at the 2010 census was what?" answered "Charlestown" from the
passage that gives 7,585; the peer gave 7,585."""

from __future__ import annotations

import re

import pytest

from helpers import build_kb
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.answer_kind import asked_kind, mistyped
from ragclinic.pipeline.runner import Pipeline
from ragclinic.types import Chunk, Claim, DocInfo, Hit, Passage

CITY = ("Charlestown is a city in Clark County, Indiana, United States. The population was 7,585 at the 2010 "
        "census.")
BORN = "Barclay Henley was a lawyer and politician. He was born in Charlestown, Clark County, Indiana."


@pytest.mark.parametrize("question,kind", [
    ("Barclay Henley was born in a city whose population at the 2010 census was what?", "number"),
    ("what's the population of the town where the festival is held", "number"),
    ("How many seats does the council have?", "number"),
    ("该市2010年的人口是多少？", "number"),
    ("In which year did the company move to Dublin?", "date"),
    ("这座桥是哪一年建成的？", "date"),
    ("When should I rotate the API keys?", None),  # "when" of a how-to: not a date
    ("Who directed the 2018 reboot?", None),
    ("Which is larger, the 1990 figure or the 1995 one?", None),  # a choice names its answer
])
def test_the_kind_a_question_asks_for(question, kind):
    assert asked_kind(question) == kind


def _p(n: int, text: str) -> Passage:
    c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, "en", 20, 0)
    return Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}.md", f"Doc {n}"), support=0.9)


def _claim(text: str, *cited: int) -> Claim:
    return Claim(text, cited, "supported", 0.9, "c1", "test")


def test_an_answer_without_the_asked_kind_names_the_passages_that_have_it():
    ps = [_p(1, BORN), _p(2, CITY)]
    q = "Barclay Henley was born in a city whose population at the 2010 census was what?"
    assert mistyped(q, [_claim("Charlestown", 1, 2)], ps) == ("number", (ps[1],))
    assert mistyped(q, [_claim("7,585", 2)], ps) == ("", ())
    assert mistyped(q, [_claim("Charlestown", 1)], [ps[0]]) == ("", ())  # no passage has a number either
    assert mistyped("Who was Barclay Henley?", [_claim("A lawyer", 1)], ps) == ("", ())


def _model(calls: list[str], second: str):
    def answer(messages):
        calls.append(messages[0].content + "\n" + messages[-1].content)
        prompt = messages[-1].content
        n = next((m.group(1) for m in re.finditer(r"^\[(\d+)\]([^\n]*)", prompt, re.M) if "7,585" in m.group(2)), "1")
        if len(calls) == 1:
            return f'{{"status": "answered", "answer": "Charlestown", "evidence": [{n}]}}'
        return second.replace("N", n)
    return answer


def test_the_pipeline_answers_again_asking_for_the_number(tmp_path):
    kb = build_kb(tmp_path, {"city.md": "# Charlestown\n\n" + CITY + "\n", "henley.md": "# Henley\n\n" + BORN + "\n"})
    calls: list[str] = []
    lm = ScriptedLanguageModel([_model(calls, '{"status": "answered", "answer": "7,585", "evidence": [N]}')],
                               yes_prob=0.9)
    q = "Barclay Henley was born in a city whose population at the 2010 census was what?"
    a = Pipeline(kb, lm=lm).ask(q)[0].answer
    assert a.route == "answer" and a.text.startswith("7,585 [") and "Charlestown" not in a.text
    assert any(f.startswith("type_regenerated: the question asks for a number") for f in a.flags)
    assert "asks for a number" in calls[1] and "asks for a number" not in calls[0]
    kb.close()


def test_the_first_answer_stands_flagged_when_asking_again_gives_no_number(tmp_path):
    kb = build_kb(tmp_path, {"city.md": "# Charlestown\n\n" + CITY + "\n"})
    calls: list[str] = []
    lm = ScriptedLanguageModel([_model(calls, '{"status": "answered", "answer": "Charlestown", "evidence": [N]}')],
                               yes_prob=0.9)
    a = Pipeline(kb, lm=lm).ask("Charlestown's population at the 2010 census was what?")[0].answer
    assert a.text.startswith("Charlestown") and len(calls) == 2
    assert any(f.startswith("type_mismatch: the question asks for a number; the answer 'Charlestown") for f in a.flags)
    kb.close()
