"""The Generator role: question + numbered passages (+ gate notes) → answer text with [n] citations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragclinic.models.llm import TokenCallback
from ragclinic.registry import Registry
from ragclinic.types import Conflict, GateDecision, Passage
from ragclinic.verify.probe import ProbeScore


@dataclass(frozen=True)
class Item:
    """One claim of the answer: its text (no citation marks) and the passage numbers the model gave for it."""
    text: str
    evidence: tuple[int, ...] = ()


@dataclass(frozen=True)
class GenerateInput:
    question: str
    passages: tuple[Passage, ...]
    decision: GateDecision
    conflicts: tuple[Conflict, ...] = ()
    sub_questions: tuple[str, ...] = ()  # answer each (a compound question, or readings of an ambiguous one)
    show_relevance: bool = False  # show each passage's evidence score in the prompt
    variant: int = 0  # prompt variant (0 = standard; the doctor's voting tries others)
    excerpts: tuple[tuple[int, str], ...] | None = None  # (n, text shown) from context selection; None = all, whole
    prompt_version: int = 2  # the answer prompt's wording (setting answer_prompt; 1: before issue 35)


@dataclass(frozen=True)
class Draft:
    text: str  # what the user reads
    generator: str  # model id or "extractive"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    # a structured answer (generate/structured.py): its claims and status; None = the claims are read from ``text``
    items: tuple[Item, ...] | None = None
    status: str = "answered"  # "answered", "not_in_documents", "conflict"
    reply_form: str = ""  # "json": the model followed the schema; "text": a free-text reply read as one item
    streamed: str = ""  # what the user has seen of it so far (the answer field; the marks come once checked)
    probe: ProbeScore | None = None  # the answerability probe's reading of the model's state (verify/probe.py)
    # each claim's token confidence (generate/active.py), when the model was asked for log-probabilities
    confidence: tuple = ()


class Generator(Protocol):
    name: str

    def generate(self, inp: GenerateInput, on_token: TokenCallback | None = None) -> Draft: ...


GENERATORS: Registry[Generator] = Registry("generator")


def number_of(passages: Sequence[Passage], chunk_id: str) -> int | None:
    return next((p.n for p in passages if p.chunk.id == chunk_id), None)
