"""What the debugger's probes share: the expectation, a layer's report, the case under examination, and
showing where an answer is in a text. Every comparison of an expected answer with a text — a document, its raw
file, a chunk, an answer — goes through text/answers.py (``locate``, ``answer_correct``), the rule eval uses:
punctuation, spaces, case, width and number formats do not matter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ragclinic.errors import RagclinicError
from ragclinic.text.answers import answer_correct, locate, locate_any
from ragclinic.types import AskRequest, AskState
from ragclinic.trace.model import LAYERS, Trace
from ragclinic.types import Chunk, Hit, Passage

__all__ = ["LAYERS", "STATUSES", "Case", "Expectation", "Fix", "LayerReport", "Probe", "around", "locate",
           "locate_any"]

STATUSES = ("ok", "fault", "not_reached")


@dataclass(frozen=True)
class Expectation:
    """What a correct outcome is: an expected answer (parts × alternatives, as in the eval sets), the
    document that should have been used, or a refusal."""

    answers: tuple[tuple[str, ...], ...] = ()
    gold_doc: str = ""  # a doc id, source path, or record key
    expect_refusal: bool = False

    def __post_init__(self) -> None:
        if not (self.answers or self.gold_doc or self.expect_refusal):
            raise RagclinicError("say what a correct outcome is: --expected TEXT, --gold-doc DOC or --expect-refusal")
        if self.expect_refusal and (self.answers or self.gold_doc):
            raise RagclinicError("--expect-refusal says no document answers the question: do not combine it with "
                                 "--expected or --gold-doc")

    @property
    def texts(self) -> list[str]:
        return [a for alts in self.answers for a in alts]

    def satisfied_by(self, answer: dict[str, Any]) -> bool | None:
        """Whether an answer (its JSON) is right; None when only the gold document is known."""
        if self.expect_refusal:
            return bool(answer.get("refused"))
        if not self.answers:
            return None
        return not answer.get("refused") and answer_correct(answer.get("answer", ""), self.answers)


@dataclass(frozen=True)
class Fix:
    """One way to carry out a suggestion on a copy (debugger/apply.py): any of a settings overlay (query-time
    settings), request changes (top_k, context_k, retriever, rerank, max_per_doc, prompt_variant, scope), settings
    that define the knowledge base (chunk sizes: a copy rebuilt from the sources), documents re-parsed on a
    snapshot (``reparse``, with parse settings such as keep_hyphens), tags changed on a snapshot (``retag``: doc id →
    tags), or the graph rebuilt on a snapshot (``graph``: its mode)."""

    what: str  # what it does, in a user's words
    settings: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    kb_settings: dict[str, Any] = field(default_factory=dict)
    reparse: tuple[str, ...] = ()
    retag: dict[str, dict[str, str]] = field(default_factory=dict)
    graph: str = ""

    @property
    def needs_copy(self) -> bool:
        """Whether it changes stored data (a snapshot of the knowledge base is changed), not only a run's settings."""
        return bool(self.kb_settings or self.reparse or self.retag or self.graph)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in (("what", self.what), ("settings", self.settings), ("request", self.request),
                                  ("kb_settings", self.kb_settings), ("reparse", list(self.reparse)),
                                  ("retag", self.retag), ("graph", self.graph)) if v}


@dataclass(frozen=True)
class LayerReport:
    status: str  # ok | fault | not_reached
    evidence: dict[str, Any]
    suggestion: str = ""
    fixes: tuple[Fix, ...] = ()  # the suggestion as changes `diagnose --apply` can try, in order; () = none

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "evidence": self.evidence,
                **({"suggestion": self.suggestion} if self.suggestion else {}),
                **({"fixes": [f.to_json() for f in self.fixes]} if self.fixes else {})}


def ok(summary: str, **evidence) -> LayerReport:
    return LayerReport("ok", {"summary": summary, **evidence})


def fault(summary: str, suggestion: str, *fixes: Fix, **evidence) -> LayerReport:
    return LayerReport("fault", {"summary": summary, **evidence}, suggestion, tuple(fixes))


def not_reached(summary: str, **evidence) -> LayerReport:
    return LayerReport("not_reached", {"summary": summary, **evidence})


@dataclass
class Case:
    """The question under examination and what the probes learn, in data-flow order (parse finds the gold
    documents, chunk the gold chunks, retrieve their ranks...). Probes read the trace's typed states."""

    pipeline: Any  # ragclinic.pipeline.runner.Pipeline (typed Any: the debugger sits above the pipeline's runner)
    trace: Trace  # the Trace being explained
    expect: Expectation
    gold_docs: list[dict[str, Any]] = field(default_factory=list)  # rows: doc_id, path, record_key, text, tags
    located: dict[str, tuple[int, int]] = field(default_factory=dict)  # doc_id → answer span in the parsed text
    gold_chunks: list[tuple[int, Chunk]] = field(default_factory=list)  # (rowid, chunk)
    gold_hits: list[Hit] = field(default_factory=list)  # the gold chunks as hits (for injection)
    said: list[Any] = field(default_factory=list)  # debugger/said.Said: parts said in other words, and where
    satisfied: bool | None = None  # is the trace's answer right (None: only the gold document is known)
    counterfactual: tuple | None = None  # (state, trace) of the gate probe's re-run with the gold chunk

    @property
    def kb(self):
        return self.pipeline.kb

    @property
    def request(self) -> AskRequest:
        return self.state_after("retrieve").request if self.trace.span("retrieve") else AskState(
            AskRequest(self.trace.query)).request

    def state_after(self, layer: str) -> AskState:
        return self.trace.state_after(layer)

    def passages(self) -> tuple[Passage, ...]:
        """The context as the generator got it (scored by the gate), or as the scope left it."""
        for layer in ("gate", "scope"):
            if self.trace.span(layer) is not None:
                return self.state_after(layer).passages
        return ()

    def hits(self) -> tuple[Hit, ...]:
        return self.state_after("retrieve").hits if self.trace.span("retrieve") else ()

    def gold_ids(self) -> set[str]:
        return {c.id for _, c in self.gold_chunks}


class Probe(Protocol):
    """A layer's counterfactual check: the case in, the layer's report out (ok, fault with a fix, or
    not_reached with why). One per layer, in ``debugger.PROBES``."""

    def __call__(self, case: Case) -> LayerReport: ...


# ---------------------------------------------------------------- showing an answer in text
def around(text: str, span: tuple[int, int], width: int = 40) -> str:
    a, b = span
    return (("…" if a > width else "") + text[max(0, a - width):a] + "⟦" + text[a:b] + "⟧" + text[b:b + width]
            + ("…" if b + width < len(text) else "")).replace("\n", "⏎")

