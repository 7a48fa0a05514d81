"""The Verifier role (issue 13): sufficiency, support and contradiction as calibrated probabilities."""

import ragclinic.verify.fake  # noqa: F401  (importing registers the backends)
import ragclinic.verify.judge  # noqa: F401
import ragclinic.verify.learned  # noqa: F401
from ragclinic.models.judge import JUDGES, LexicalJudge
from ragclinic.verify.base import VERIFIERS, Verdict, Verifier, sufficiency, task_name


def create_verifier(name: str, lm=None) -> Verifier:
    """``learned`` (the shipped heads), ``llm`` (the language model's yes/no logits), ``lexical``, ``fake``."""
    return VERIFIERS.create(name, lm)


def create_judge(name: str, lm=None):
    """The judge every layer and the doctor use, by the ``judge`` setting: ``learned`` (the trained verifier; needs
    no language model), ``llm`` (the model's yes/no logits; word overlap without a model), ``lexical``, or any
    other registered Judge or Verifier."""
    if name == "lexical" or (name == "llm" and lm is None):
        return LexicalJudge()
    if name in JUDGES.names() and name != "lexical":
        return JUDGES.create(name, lm)
    return create_verifier(name, lm)


def cheap(judge) -> bool:
    """A judge cheap enough to score every passage (the learned verifier: ~50 ms a pair; the 1.5B judge: ~1 s)."""
    return bool(getattr(judge, "cheap", False))


def task_threshold(judge, task: str, default: float) -> float:
    """The P above which ``judge`` says yes to ``task``: a verifier's own (chosen on its validation split), else
    ``default`` (the setting that goes with an uncalibrated judge)."""
    own = getattr(judge, "threshold", None)
    return own(task) if callable(own) else default


__all__ = ["task_threshold", "cheap", "create_judge", "VERIFIERS", "Verdict", "Verifier", "create_verifier", "sufficiency", "task_name"]
