"""Contract every debugger Probe passes (the six layer probes, run in data-flow order as the debugger runs
them, and the scripted fake): a LayerReport whose status is ok, fault or not_reached, whose evidence has a
summary and is plain JSON, and a fault always names its fix."""

from __future__ import annotations

import json

import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.debugger import Expectation
from ragclinic.debugger.base import STATUSES, Case, LayerReport, Probe, fault
from ragclinic.debugger.debugger import PROBES
from ragclinic.debugger.fake import ScriptedProbe
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline
from ragclinic.trace.model import LAYERS

CASES = [  # (question, expectation, the model's reply)
    ("What is usually used as a proxy for the risk-free rate?", Expectation((("treasury bills",),)),
     "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."),
    ("What is usually used as a proxy for the risk-free rate?", Expectation((("treasury bills",),)),
     "The cat sat on the warm kitchen floor [1]."),
    ("Who won the 1998 chess olympiad?", Expectation(expect_refusal=True), "Kasparov won it [1]."),
    ("What does duration measure?", Expectation(gold_doc="duration.md"), "Duration measures price moves [1]."),
    ("What is the capital of Atlantis?", Expectation((("Poseidonia",),)), "The documents do not say."),
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    kb = build_kb(tmp_path_factory.mktemp("probes"), BOND_DOCS)
    out = []
    duration = next(d["path"] for d in kb.db.documents() if d["path"].endswith("duration.md"))
    for q, expect, reply in CASES:
        if expect.gold_doc:  # Debugger.diagnose insists that it names a document of the knowledge base
            expect = Expectation(gold_doc=duration)
        pipe = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9))
        _, trace = pipe.ask(q)
        case = Case(pipe, trace, expect)
        case.satisfied = expect.satisfied_by(trace.final)
        out.append(case)
    yield out
    kb.close()


def _check(report: LayerReport) -> None:
    assert isinstance(report, LayerReport) and report.status in STATUSES
    assert isinstance(report.evidence.get("summary"), str) and report.evidence["summary"]
    json.dumps(report.to_json())  # plain JSON: `diagnose --json` prints it
    if report.status == "fault":
        assert report.suggestion, "a fault names its fix"


def test_the_probes_cover_the_layers_in_order():
    assert tuple(PROBES) == LAYERS
    assert all(callable(p) for p in PROBES.values())


def test_every_probe_reports_in_the_contracts_terms(cases):
    statuses = set()
    for case in cases:
        for layer, probe in PROBES.items():  # in data-flow order: each fills what the next reads
            report = probe(case)
            _check(report)
            statuses.add(report.status)
    assert statuses == set(STATUSES)  # the cases reach every status somewhere


def test_the_scripted_probe_is_a_probe(cases):
    probe: Probe = ScriptedProbe(fault("scripted", "do the scripted thing"))
    _check(probe(cases[0]))
    assert probe.seen == [cases[0]]
