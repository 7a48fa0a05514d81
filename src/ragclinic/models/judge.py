"""The Judge role: P(yes) for a yes/no question about a passage — reranker and entailment judge in one.

No registry package ships a cross-encoder or an NLI model, so the built-in judge asks the language model
and reads P(yes) from its next-token logits (one forward pass, no generation). A real cross-encoder plugs
in through the same Protocol. ``lexical`` is the model-free judge used with ``--llm none`` and in tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from ragclinic.models.llm import LanguageModel, Message
from ragclinic.registry import Registry
from ragclinic.text.support import coverage, lexical_support

Task = Literal["relevance", "support", "contradiction"]
TASKS: tuple[Task, ...] = ("relevance", "support", "contradiction")

_SYSTEM = "You are a strict fact checker. Use only the passage. Answer with one word: yes or no."
_QUESTIONS = {
    "relevance": "Does the passage contain the answer to this question: {text}",
    "support": "Does the passage state or directly imply this statement: {text}",
    "contradiction": "Does the passage contradict this statement: {text}",
}


@runtime_checkable
class Judge(Protocol):
    model_id: str

    def judge(self, task: Task, passage: str, text: str) -> float:
        """P(yes) in 0..1 for ``task`` asked about ``text`` (a question or a claim) given ``passage``."""
        ...


JUDGES: Registry[Judge] = Registry("judge")

# P(yes) thresholds for "the passage contains the answer", per language-model backend, measured by
# bench/gate_calibration_bench.py (bench/RESULTS.md, "Gate calibration"); other models get 0.5.
CALIBRATED_RELEVANCE = {"local": 0.8, "local-small": 0.5}
UNCALIBRATED = 0.5


def relevance_threshold(judge: Judge, override: float | None = None) -> float:
    """The P(yes) a passage needs to count as evidence: the setting if given, else the model's calibration."""
    if override is not None:
        return override
    return getattr(judge, "relevance_threshold", UNCALIBRATED)


def judge_messages(task: Task, passage: str, text: str) -> list[Message]:
    if task not in _QUESTIONS:
        raise ValueError(f"unknown judge task {task!r}; valid: {', '.join(TASKS)}")
    return [Message("system", _SYSTEM),
            Message("user", f"Passage:\n{passage}\n\n{_QUESTIONS[task].format(text=text)}\nAnswer yes or no.")]


@JUDGES.register("llm")
class LogitJudge:
    """P(yes) / (P(yes) + P(no)) of the language model's first reply token."""

    def __init__(self, lm: LanguageModel) -> None:
        self.lm = lm
        self.model_id = f"logit-judge:{lm.model_id}"
        backend = lm.model_id.split(":", 1)[0]
        self.relevance_threshold = CALIBRATED_RELEVANCE.get(backend, UNCALIBRATED)

    def judge(self, task: Task, passage: str, text: str) -> float:
        return self.lm.next_token_probs(judge_messages(task, passage, text), ["yes", "no"])["yes"]


@JUDGES.register("lexical")
class LexicalJudge:
    """Word and number overlap: blind to paraphrase and negation, exact about numbers; needs no model."""

    model_id = "lexical-judge"

    def __init__(self, lm: LanguageModel | None = None) -> None:
        pass

    def judge(self, task: Task, passage: str, text: str) -> float:
        if task == "relevance":
            return coverage(text, passage)
        if task == "support":
            return lexical_support(text, passage)
        if task == "contradiction":
            return 0.0  # cannot tell a contradiction from silence without a model
        raise ValueError(f"unknown judge task {task!r}; valid: {', '.join(TASKS)}")


def judge_many(judge: Judge, task: Task, passages: Sequence[str], text: str) -> list[float]:
    return [judge.judge(task, p, text) for p in passages]
