"""The LanguageModel role: chat messages → a completion, optionally streamed, plus next-token probabilities.

``next_token_probs`` is what the Judge reads (P(yes) from the logits of the first answer token); a backend
that cannot expose logits raises ModelError there and the judge falls back to the lexical support check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragclinic.config.names import accept_from
from ragclinic.registry import Registry

TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user", "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop", "length", "error"
    prompt_reused: int = 0  # prompt tokens not evaluated again (a kept KV prefix, or a remembered identical call)


@runtime_checkable
class LanguageModel(Protocol):
    model_id: str

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None) -> Completion:
        """The model's reply; ``on_token`` receives each piece of text as it is generated. ``schema``: a JSON
        schema the reply must follow (a grammar locally, ``response_format`` over a server); None: free text."""
        ...

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """P(first reply token = c) for each candidate word (case/space variants summed), renormalised."""
        ...


LANGUAGE_MODELS: Registry[LanguageModel] = Registry("language model")
accept_from("llm", LANGUAGE_MODELS.names)  # the settings accept the names plugins register


def candidate_variants(word: str) -> list[str]:
    """Surface forms a tokenizer may emit for an answer word ("yes" → "yes", "Yes", " yes", " Yes", "YES")."""
    forms = {word, word.lower(), word.capitalize(), word.upper()}
    return sorted(forms | {" " + f for f in forms})
