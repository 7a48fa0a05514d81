"""The LanguageModel role: chat messages → a completion, optionally streamed, plus next-token probabilities.

``next_token_probs`` is what the Judge reads (P(yes) from the logits of the first answer token); a backend
that cannot expose logits raises ModelError there and the judge falls back to the lexical support check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    # the residual stream at the last token evaluated before the first sampled one, per layer asked for
    # (``hidden_layers``; models/hidden.py); empty where the backend has no hidden state (a server, a fake)
    hidden: dict = field(default_factory=dict, compare=False, repr=False)
    # each sampled token of ``text`` when asked for (``logprobs``): (offset in ``text`` where it starts, natural log
    # of its probability), in order; tokens the backend did not sample (the keys of a field-decoded JSON reply) are
    # absent, and a backend that cannot read them leaves it empty
    logprobs: tuple[tuple[int, float], ...] = field(default=(), compare=False, repr=False)


@runtime_checkable
class LanguageModel(Protocol):
    model_id: str

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        """The model's reply; ``on_token`` receives each piece of text as it is generated. ``schema``: a JSON
        schema the reply must follow (a grammar locally, ``response_format`` over a server); None: free text.
        ``hidden_layers``: layers whose output at the last prompt token comes back in ``Completion.hidden``, where
        the backend can read it (else it is left empty). ``logprobs``: each sampled token's log-probability comes
        back in ``Completion.logprobs`` (active retrieval reads them; empty where the backend cannot say)."""
        ...

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        """P(first reply token = c) for each candidate word (case/space variants summed), renormalised."""
        ...


LANGUAGE_MODELS: Registry[LanguageModel] = Registry("language model")
accept_from("llm", LANGUAGE_MODELS.names)  # the settings accept the names plugins register


def call_extras(layers: Sequence[int] = (), logprobs: bool = False) -> dict:
    """``hidden_layers`` and ``logprobs`` for a wrapped model's ``chat`` only when asked for (a plugin backend written
    before the arguments existed keeps working)."""
    return ({"hidden_layers": tuple(layers)} if layers else {}) | ({"logprobs": True} if logprobs else {})


def candidate_variants(word: str) -> list[str]:
    """Surface forms a tokenizer may emit for an answer word ("yes" → "yes", "Yes", " yes", " Yes", "YES")."""
    forms = {word, word.lower(), word.capitalize(), word.upper()}
    return sorted(forms | {" " + f for f in forms})
