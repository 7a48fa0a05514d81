"""The Verifier role: a calibrated probability that a passage answers a question, supports a sentence, or
contradicts one — with what the judgement rested on.

A Verifier is also a Judge (``judge(task, passage, text) -> float``, with the Judge's task names: relevance =
sufficiency), so it plugs into every place a judgement is made today — the gate's evidence scores, the
citation and claim checks, the false-premise and conflict checks, the reranker, the doctor's examination — and
``verify`` gives the same probability with its reasons ("the passage is about 2021; the question asks about
2022") and the sentence it rested on, for the trace, ``diagnose`` and the doctor's symptom evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from ragclinic.errors import ModelError
from ragclinic.registry import Registry
from ragclinic.text.support import content_terms

Task = Literal["relevance", "support", "contradiction"]
TASKS: tuple[Task, ...] = ("relevance", "support", "contradiction")
# The names for the same three questions: sufficiency is the Judge's "relevance".
ALIASES = {"sufficiency": "relevance"}


def task_name(task: str) -> Task:
    t = ALIASES.get(task, task)
    if t not in TASKS:
        raise ValueError(f"unknown verifier task {task!r}; valid: sufficiency (= relevance), support, contradiction")
    return t  # type: ignore[return-value]


@dataclass(frozen=True)
class Verdict:
    p: float  # calibrated probability that the answer to the task's question is yes
    by: str  # the verifier's model id
    reasons: tuple[str, ...] = ()  # what the probability rested on, most telling first
    sentence: str = ""  # the passage sentence(s) the judgement rested on

    def explain(self) -> str:
        head = f"P={self.p:.2f} ({self.by})"
        return head + (": " + "; ".join(self.reasons) if self.reasons else "")


@runtime_checkable
class Verifier(Protocol):
    model_id: str
    relevance_threshold: float  # the P a passage needs to count as evidence (chosen on a validation split)

    def verify(self, task: str, passage: str, text: str) -> Verdict:
        """The verdict on ``text`` (a question for sufficiency, a sentence otherwise) given ``passage``."""
        ...

    def judge(self, task: str, passage: str, text: str) -> float:
        """``verify(...).p`` — the Judge protocol."""
        ...


VERIFIERS: Registry[Verifier] = Registry("verifier")
SHORT_ANSWER_TERMS = 4


def judge_text(claim: str, question: str) -> str:
    """A short answer ("Delhi") is judged as an answer to its question; a full sentence stands alone."""
    if question and len(content_terms(claim)) < SHORT_ANSWER_TERMS:
        return f'The answer to "{question}" is: {claim}'
    return claim


def sufficiency(verifier: Verifier, question: str, passages: Sequence[str]) -> Verdict:
    """Does this set of passages answer the question: the best single passage's verdict (an empty set: 0)."""
    verdicts = [verifier.verify("relevance", p, question) for p in passages]
    return max(verdicts, key=lambda v: v.p, default=Verdict(0.0, verifier.model_id, ("no passages",)))


def read_pinned(path: Path, sha256: str | None, what: str, target: str, pinned_in: str) -> bytes:
    """The bytes of a shipped weights file, refused (naming the fix) when unreadable or when its sha256 is not the
    pinned one (``sha256`` None: not checked — a file the caller chose)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{what} {path} cannot be read ({e}); reinstall ragclinic or run make {target}") from e
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ModelError(f"{what} {path} have sha256 {digest}, expected {sha256}: the file was changed or damaged; "
                         f"reinstall ragclinic (or, after make {target}, update SHA256 in {pinned_in})")
    return raw
