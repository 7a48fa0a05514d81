"""A scripted fake language model for tests: replies come from a script, in order or by matching a prompt."""

from __future__ import annotations

import math
import os
import re
import signal
import time
from collections.abc import Callable, Sequence

from ragclinic import cancel
from ragclinic.models.llm import LANGUAGE_MODELS, Completion, Message, TokenCallback

Reply = str | Callable[[Sequence[Message]], str]


class ScriptedLanguageModel:
    """``replies``: used in order (the last one repeats); ``rules``: (regex over the last user message, reply)
    pairs tried first. ``yes_prob`` answers ``next_token_probs`` (a number or a function of the messages).
    ``hidden_state``: (messages, layers) → {layer: vector}, the hidden state a chat call reports when asked for
    layers (None: none, as a server backend). ``token_prob``: word → its probability, what a chat call asked for
    ``logprobs`` reports for each word of the reply (its tokens here; None: no log-probabilities, as a backend that
    cannot read them)."""

    model_id = "fake-scripted"

    def __init__(self, replies: Sequence[Reply] = ("I do not know.",),
                 rules: Sequence[tuple[str, Reply]] = (), yes_prob: float | Callable[[Sequence[Message]], float] = 0.5,
                 hidden_state: Callable[[Sequence[Message], tuple[int, ...]], dict] | None = None,
                 token_prob: Callable[[str], float] | None = None):
        self.replies, self.rules, self.yes_prob = list(replies), list(rules), yes_prob
        self.hidden_state, self.token_prob = hidden_state, token_prob
        self.calls: list[tuple[str, list[Message]]] = []  # ("chat" | "probs", messages)
        self.schemas: list[dict | None] = []  # each chat call's JSON schema (None: free text)
        self._next = 0

    def _reply(self, messages: Sequence[Message]) -> str:
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        for pattern, reply in self.rules:
            if re.search(pattern, last, re.S):
                return reply(messages) if callable(reply) else reply
        reply = self.replies[min(self._next, len(self.replies) - 1)]
        self._next += 1
        return reply(messages) if callable(reply) else reply

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        self.calls.append(("chat", list(messages)))
        self.schemas.append(schema)
        words = self._reply(messages).split(" ")
        finish = "length" if len(words) > max_tokens else "stop"
        text = " ".join(words[:max_tokens])
        if on_token:
            for i, w in enumerate(text.split(" ")):
                cancel.check("the rest of the reply")  # between tokens, as the real backends do
                on_token(w if i == 0 else " " + w)
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        hidden = self.hidden_state(messages, tuple(hidden_layers)) if self.hidden_state and hidden_layers else {}
        marks = _word_marks(text, self.token_prob) if logprobs and self.token_prob else ()
        return Completion(text, prompt_tokens, len(text.split()), finish, hidden=hidden, logprobs=marks)

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self.calls.append(("probs", list(messages)))
        p = self.yes_prob(messages) if callable(self.yes_prob) else self.yes_prob
        if list(candidates) == ["yes", "no"]:
            return {"yes": p, "no": 1.0 - p}
        return {c: 1.0 / len(candidates) for c in candidates}


def _word_marks(text: str, prob: Callable[[str], float]) -> tuple[tuple[int, float], ...]:
    """(offset, log-probability) of each space-separated word of ``text``."""
    return tuple((m.start(), math.log(max(1e-9, prob(m.group())))) for m in re.finditer(r"\S+", text))


LANGUAGE_MODELS.register("fake", lambda settings: ScriptedLanguageModel())


class PacedLanguageModel(ScriptedLanguageModel):
    """The scripted fake, streaming one word every ``token_seconds``: what the model-service tests run in a
    worker process (a call lasts long enough to be interrupted); ``token_probs``: word → probability, the
    ``token_prob`` of a fake that must cross a process boundary (the others' 0.99). ``crash_on`` ("chat" or "probs") makes the
    process kill itself with ``crash_signal`` on that kind of call, as a native crash would."""

    model_id = "fake-paced"

    def __init__(self, replies: Sequence[Reply] = ("I do not know.",), token_seconds: float = 0.0,
                 yes_prob: float = 0.5, crash_on: str = "", crash_signal: str = "SIGSEGV",
                 token_probs: dict[str, float] | None = None) -> None:
        super().__init__(replies, yes_prob=yes_prob,
                         token_prob=(lambda w: token_probs.get(w, 0.99)) if token_probs is not None else None)
        self.token_seconds, self.crash_on, self.crash_signal = token_seconds, crash_on, crash_signal

    def _maybe_crash(self, kind: str) -> None:
        if self.crash_on == kind:
            os.kill(os.getpid(), getattr(signal, self.crash_signal))

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        self._maybe_crash("chat")

        def paced(piece: str) -> None:
            time.sleep(self.token_seconds)
            if on_token:
                on_token(piece)

        return super().chat(messages, max_tokens=max_tokens, temperature=temperature, on_token=paced, schema=schema,
                            hidden_layers=hidden_layers, logprobs=logprobs)

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        self._maybe_crash("probs")
        return super().next_token_probs(messages, candidates)
