"""Symptoms and the detectors that find them: each reads a finished run (state + trace) and says how
strongly one thing looks wrong, at the cheapest tier that can tell.

Tiers, cheapest first: ``rules`` (words, numbers, patterns, the trace's own scores) always run; ``small``
(the knowledge base's e5 embedder) only when a rule is unsure; ``model`` (the judge, which costs language
model calls) only when still unsure and the budget allows. A detector reports ``sure=False`` when a higher
tier could change its mind; the doctor then asks it again with that tier allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from ragclinic.models.judge import Judge
from ragclinic.pipeline.gate import is_model_judge
from ragclinic.types import AskState, Symptom
from ragclinic.registry import Registry
from ragclinic.trace.model import Trace
from ragclinic.doctor.lexicon import lexicon_of

TIERS = ("rules", "small", "model")


@dataclass
class Exam:
    """What a detector may look at, and which tiers it may use."""

    state: AskState
    trace: Trace
    kb: Any  # KnowledgeBase (for the lexicon and the embedder)
    settings: Any
    judge: Judge | None = None  # a model judge whose calls count against the budget
    budget: Any = None  # doctor.budget.Budget
    tier: str = "rules"
    interactive: bool = False
    symptoms: list[Symptom] = field(default_factory=list)  # present ones, for treatments that combine them
    cache: dict[str, Any] = field(default_factory=dict)
    _lexicon: Any = field(default=None, repr=False)

    @property
    def question(self) -> str:
        return self.state.request.question

    @property
    def answer(self):
        return self.state.answer

    @property
    def passages(self):
        return self.state.passages

    def allows(self, tier: str) -> bool:
        if TIERS.index(tier) > TIERS.index(self.tier):
            return False
        if tier == "small":
            return self.kb is not None and getattr(self.kb.settings, "embedder", "none") != "none"
        if tier == "model":
            return is_model_judge(self.judge) and (self.budget is None or self.budget.can_call())
        return True

    def lexicon(self):
        """How many chunks use a word (doctor/lexicon.py): the tenant's chunks for a request that enforces a
        tenant, else the whole lexical index; None when the knowledge base has none. Made once per exam."""

        if self._lexicon is None:
            self._lexicon = lexicon_of(self.kb, self.state.request.enforced) or False
        return self._lexicon or None

    def embed(self, texts: list[str]):
        """e5 vectors (normalised) for texts, cached per exam; None when the KB has no embedder."""
        emb = self.kb.embedder if self.kb is not None else None
        if emb is None:
            return None
        todo = [t for t in texts if t not in self.cache]
        if todo:
            for t, v in zip(todo, emb.embed_passages(todo)):
                self.cache[t] = v
        return [self.cache[t] for t in texts]


class Detector(Protocol):
    name: str
    layer: str
    tier: str  # the highest tier it may escalate to

    def detect(self, exam: Exam) -> Symptom | None:
        """The symptom (with a score, possibly below threshold) or None when it does not apply."""
        ...


DETECTORS: Registry[Detector] = Registry("detector")


def clamp(x: float) -> float:
    return max(0.0, min(1.0, x))
