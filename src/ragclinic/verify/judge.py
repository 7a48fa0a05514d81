"""Any Judge (the language model's yes/no logits, or word overlap) as a Verifier: same P, reasons named."""

from __future__ import annotations

from ragclinic.models.judge import LexicalJudge, LogitJudge
from ragclinic.verify.base import VERIFIERS, Verdict, task_name


class JudgeVerifier:
    def __init__(self, judge) -> None:
        self.inner = judge
        self.model_id = judge.model_id
        self.relevance_threshold = getattr(judge, "relevance_threshold", 0.5)

    def verify(self, task: str, passage: str, text: str) -> Verdict:
        t = task_name(task)
        p = float(self.inner.judge(t, passage, text))
        return Verdict(round(p, 4), self.model_id, (f"{self.model_id} answered yes with P={p:.2f}",), "")

    def judge(self, task: str, passage: str, text: str) -> float:
        return self.verify(task, passage, text).p


@VERIFIERS.register("llm")
def _llm(lm) -> JudgeVerifier:
    return JudgeVerifier(LogitJudge(lm))


@VERIFIERS.register("lexical")
def _lexical(lm=None) -> JudgeVerifier:
    return JudgeVerifier(LexicalJudge())
