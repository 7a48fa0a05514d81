"""Contract every Generator passes: a Draft naming its generator, streamed pieces that make up the text,
citations only of passages that were given, and a plain statement when nothing fits."""

from __future__ import annotations

import pytest

from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate import GENERATORS, Draft, Generator, GenerateInput
from ragclinic.pipeline.generate.citations import parse_citations
from ragclinic.pipeline.generate.extractive import ExtractiveGenerator
from ragclinic.pipeline.generate.llm import LLMGenerator
from ragclinic.types import Chunk, DocInfo, GateDecision, Hit, Passage

TEXTS = ["Short-dated treasury bills are the usual proxy for the risk-free rate.",
         "Duration measures how much a bond price moves when rates change."]


def _inp(question="What is the usual proxy for the risk-free rate?") -> GenerateInput:
    ps = []
    for n, t in enumerate(TEXTS, start=1):
        c = Chunk(f"c{n}", f"d{n}", t, 0, len(t), (), None, "en", 12, 0)
        ps.append(Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}", f"D{n}"), support=0.8))
    return GenerateInput(question, tuple(ps), GateDecision("answer", "factual", 0.8, "ok"))


@pytest.fixture(params=["extractive", "llm-fake"])
def generator(request) -> Generator:
    if request.param == "extractive":
        return ExtractiveGenerator()
    return LLMGenerator(ScriptedLanguageModel(["Treasury bills are the usual proxy [1]."]), max_tokens=64)


def test_draft_and_stream(generator):
    pieces: list[str] = []
    d = generator.generate(_inp(), pieces.append)
    assert isinstance(d, Draft) and d.text and d.generator
    # what streamed is the answer, or (a structured draft) its start: the marks come once the layer checked them
    streamed = "".join(pieces).strip()
    assert streamed == d.text or (d.items is not None and streamed == d.streamed and d.text.startswith(streamed))


def test_cites_only_given_passages(generator):
    d = generator.generate(_inp())
    cited = parse_citations(d.text)
    assert cited and set(cited) <= {1, 2} and 1 in cited


def test_registry():
    assert {"llm", "extractive"} <= set(GENERATORS.names())
