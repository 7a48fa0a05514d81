"""The doctor's budget: repair rounds, extra language-model calls and extra wall time per query.

The limits count what the doctor adds on top of the plain pipeline's answer. Every model call the doctor
causes (its judge calls and the re-runs' calls) goes through ``LimitedModel``, which refuses the call that
would exceed the budget, so a treatment cannot overrun it: its re-run stops and is discarded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ragclinic.errors import RagclinicError
from ragclinic.models.llm import Completion, LanguageModel, Message, TokenCallback, call_extras


class BudgetExceeded(RagclinicError):
    """The doctor's budget ran out in the middle of a treatment."""


class Budget:
    def __init__(self, max_rounds: int, max_calls: int, max_seconds: float,
                 seconds_setting: str = "doctor_max_seconds") -> None:
        self.max_rounds, self.max_calls, self.max_seconds = max_rounds, max_calls, max_seconds
        self.seconds_setting = seconds_setting  # the setting that gave max_seconds, named when it runs out
        self.calls = 0
        self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def can_call(self) -> bool:
        return self.calls < self.max_calls and not self.out_of_time()

    def out_of_time(self) -> bool:
        return self.elapsed >= self.max_seconds

    def spend(self) -> None:
        if self.calls >= self.max_calls:
            raise BudgetExceeded(f"doctor budget: {self.max_calls} language-model calls used "
                                 f"(raise doctor_max_lm_calls to allow more)")
        if self.out_of_time():
            raise BudgetExceeded(f"doctor budget: {self.max_seconds:g} s used (raise {self.seconds_setting})")
        self.calls += 1

    def summary(self) -> dict:
        return {"lm_calls": self.calls, "max_lm_calls": self.max_calls, "seconds": round(self.elapsed, 3),
                "max_seconds": self.max_seconds, "max_rounds": self.max_rounds}


class LimitedModel:
    """A LanguageModel that charges every call to a budget (and refuses calls beyond it)."""

    def __init__(self, lm: LanguageModel, budget: Budget) -> None:
        self.lm, self.budget = lm, budget
        self.model_id = lm.model_id

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        self.budget.spend()
        return self.lm.chat(messages, max_tokens=max_tokens, temperature=temperature, on_token=on_token,
                            schema=schema, **call_extras(hidden_layers, logprobs))

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self.budget.spend()
        return self.lm.next_token_probs(messages, candidates)

    def __getattr__(self, name: str):  # count_tokens and other optional extras
        return getattr(self.lm, name)
