"""A scripted verifier for tests: P from word coverage, or from rules a test sets (substring → P)."""

from __future__ import annotations

from ragclinic.text.support import coverage, lexical_support
from ragclinic.verify.base import VERIFIERS, Verdict, task_name
from ragclinic.verify.instructions import cued


@VERIFIERS.register("fake")
class FakeVerifier:
    model_id = "fake-verifier"
    relevance_threshold = 0.5

    def __init__(self, lm=None, rules: dict[str, float] | None = None) -> None:
        self.rules = dict(rules or {})  # a passage containing the key gets that P, for every task
        self.calls: list[tuple[str, str, str]] = []

    def verify(self, task: str, passage: str, text: str) -> Verdict:
        t = task_name(task)
        self.calls.append((t, passage, text))
        for key, p in self.rules.items():
            if key in passage:
                return Verdict(p, self.model_id, (f"rule {key!r}",), passage)
        if t == "contradiction":
            return Verdict(0.0, self.model_id, ("the fake sees no contradictions",), passage)
        p = coverage(text, passage) if t == "relevance" else lexical_support(text, passage)
        return Verdict(round(p, 4), self.model_id, ("word coverage",), passage)

    def judge(self, task: str, passage: str, text: str) -> float:
        return self.verify(task, passage, text).p


class FakeInstructionDetector:
    """The instruction detector's fake (verify/instructions.py): a cued sentence holding one of ``phrases`` scores
    0.9, any other 0.0; ``seen`` records what it was asked to score."""

    model_id = "fake-instructions"
    threshold = 0.5

    def __init__(self, phrases=("note for the bot",)) -> None:
        self.phrases = tuple(p.lower() for p in phrases)
        self.seen: list[str] = []

    def scores(self, sentences):
        self.seen += [s for s in sentences if cued(s)]
        return [0.9 if cued(s) and any(p in s.lower() for p in self.phrases) else 0.0 for s in sentences]

    def flags(self, sentences):
        return [p >= self.threshold for p in self.scores(sentences)]
