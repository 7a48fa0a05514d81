"""The six-layer debugger: counterfactual probes over a recorded trace name the layer that broke a bad
answer — parse → chunk → retrieve → scope → gate → generate, the first layer in data-flow order whose probe
fails — with each layer's evidence and a fix at that layer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragclinic.debugger.apply import OTHERS, Applied
from ragclinic.debugger.apply import apply as apply_fix
from ragclinic.debugger.base import LAYERS, Case, Expectation, Fix, LayerReport, not_reached
from ragclinic.debugger.graph import probe_graph
from ragclinic.errors import RagclinicError
from ragclinic.trace.layers import SPECS, resolve
from ragclinic.trace.store import load_trace
from ragclinic.debugger.source import gold_documents

def _unprobed(case: Case) -> LayerReport:
    """A layer the table names no probe for (one added without one): reported, never blamed."""
    return not_reached("this layer has no probe of its own (trace/layers.py); it was not examined")


PROBES: dict[str, Callable[[Case], LayerReport]] = {  # from the layer table (trace/layers.py)
    s.name: resolve(s.probe) if s.probe else _unprobed for s in SPECS}


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # a layer (or "graph" in a KB with a graph), or "none" when the answer is right / no probe failed
    layers: dict[str, LayerReport]
    suggestion: str
    trace_id: str
    question: str
    answer: str
    answer_right: bool | None
    applied: Applied | None = None  # `--apply`: the fix carried out on a copy, and whether it worked (apply.py)

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """The verdict layer's suggestion as changes `--apply` can try, in order (() when none can be)."""
        return self.layers[self.verdict].fixes if self.verdict in self.layers else ()

    @property
    def fix(self) -> str:
        """What to change at the verdict's layer (the suggestion)."""
        return self.suggestion

    @property
    def evidence(self) -> dict[str, Any]:
        """The verdict layer's evidence ("summary" and the probe's figures); with no verdict, the generate
        probe's (what the answer rests on)."""
        layer = self.verdict if self.verdict in self.layers else "generate"
        return dict(self.layers[layer].evidence) if layer in self.layers else {}

    def to_json(self) -> dict[str, Any]:
        """The `ragclinic diagnose --json` contract (extended, never renamed)."""
        return {"verdict": self.verdict, "layers": {k: v.to_json() for k, v in self.layers.items()},
                "suggestion": self.suggestion, "trace_id": self.trace_id, "question": self.question,
                "answer": self.answer, "answer_right": self.answer_right, "fixes": [f.to_json() for f in self.fixes],
                **({"applied": self.applied.to_json()} if self.applied is not None else {})}


class Debugger:
    def __init__(self, pipeline) -> None:
        self.pipeline = pipeline

    def diagnose(self, expect: Expectation, *, question: str | None = None, scope: dict[str, str] | None = None,
                 trace_id: str | None = None, apply: bool = False, keep: bool = False, others: int = OTHERS,
                 eval_set: Sequence[tuple[str, Expectation]] = (), rebuild: bool = True) -> Diagnosis:
        """Explain the answer of ``trace_id`` (or of asking ``question`` now, without the doctor). ``apply``: carry
        out the verdict layer's fix on a copy, re-ask, and check ``others`` recent questions (or ``eval_set``) for
        side effects (apply.py); ``keep``: promote a fix that worked with nothing worse; ``rebuild``: fixes that
        rebuild the knowledge base may run."""
        if trace_id:

            trace = load_trace(self.pipeline.kb.db, trace_id)
        elif question:
            _, trace = self.pipeline.ask(question, scope)
        else:
            raise RagclinicError("give a question (--question) or a trace id (--trace) to diagnose")
        if expect.gold_doc:

            if not gold_documents(self.pipeline.kb.db, expect.gold_doc):
                raise RagclinicError(f"--gold-doc {expect.gold_doc!r} names no document of this knowledge base; "
                                     "`ragclinic kb docs` lists ids and paths (ingest it first if it is missing)")
        case = Case(self.pipeline, trace, expect)
        case.satisfied = expect.satisfied_by(trace.final)
        layers = {name: _run(probe, case) for name, probe in PROBES.items()}
        order = list(LAYERS)
        graph = _run(probe_graph, case)
        if graph is not None:  # a knowledge base with a graph: its probe reports as the "graph" layer
            layers["graph"] = graph
            # a question answered over communities rests on the graph before the search; otherwise the graph
            # only adds to what the search found (expansion), so it is judged after the scope
            global_path = graph.evidence.get("path") not in (None, "", "chunks")
            order.insert(order.index("retrieve") if global_path else order.index("gate"), "graph")
        first = next((name for name in order if layers[name].status == "fault"), None)
        verdict = "none" if case.satisfied or first is None else first
        if verdict != "none":
            suggestion = layers[verdict].suggestion
        elif case.satisfied:
            suggestion = "the answer is right: nothing to fix"
        elif case.satisfied is None:
            suggestion = "no probe failed: the gold document was found, kept and used"
        else:
            unrun = [n for n in LAYERS if layers[n].status == "not_reached"]
            suggestion = ("no probe failed, yet the answer is wrong: " + (
                f"the {', '.join(unrun)} probe(s) could not run (see their evidence)" if unrun else
                "with the gold passage in place the pipeline answers right — check the expected answer"))
        found = Diagnosis(verdict, layers, suggestion, trace.id, trace.query, trace.final.get("answer", ""),
                          case.satisfied)
        if apply and verdict != "none":
            return replace(found, applied=apply_fix(self.pipeline, trace, found.fixes, expect, others=others,
                                                    eval_set=eval_set, keep=keep, rebuild=rebuild))
        return found


def _run(probe: Callable[[Case], LayerReport | None], case: Case) -> LayerReport | None:
    try:
        return probe(case)
    except Exception as e:  # noqa: BLE001 - a probe that cannot run says why; the others still report
        return not_reached(f"the probe could not run: {type(e).__name__}: {e}")
