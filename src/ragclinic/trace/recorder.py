"""Recording and replaying model calls, so a trace can be replayed with its model outputs frozen.

Every call through ``RecordingModel`` is appended to the tape with the layer that made it. Given the
calls of an earlier trace, the same wrapper answers identical calls (same kind, messages and parameters)
from them instead of the model — replay is then deterministic and needs no model at all. A chat call's hidden state
(the answerability probe's input) is recorded with it and replayed, so a replay decides as the run did; it is not
part of the call's key (a trace recorded without it replays, without the probe).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ragclinic.errors import ModelCrashed, ModelError, ModelTimeExceeded
from ragclinic.models.llm import Completion, LanguageModel, Message, TokenCallback, call_extras
from ragclinic.trace.model import ModelCall, Trace


def call_key(kind: str, messages: Sequence[Message], params: dict) -> str:
    blob = json.dumps([kind, [[m.role, m.content] for m in messages], params], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


class Tape:
    def __init__(self) -> None:
        self.calls: list[ModelCall] = []
        self.layer = ""

    def add(self, **kw) -> None:
        self.calls.append(ModelCall(seq=len(self.calls), layer=self.layer, **kw))


class RecordingModel:
    """A LanguageModel that records every call on ``tape``; ``frozen`` calls are answered from the record."""

    def __init__(self, lm: LanguageModel | None, tape: Tape, frozen: Iterable[ModelCall] = (),
                 max_seconds: float | None = None, crashes: Mapping[str, ModelCrashed] | None = None) -> None:
        """``max_seconds``: model time this run may use (setting ``max_model_seconds``); a live call after it is
        spent raises ModelTimeExceeded, and the run answers the rest without the model. ``crashes`` (a replay
        without a model): by layer, the crash the recorded run met there (``recorded_crashes``) — a call the
        trace lacks in that layer meets it again, so the replay goes on without the model where the run did."""
        self.lm, self.tape, self.max_seconds, self.crashes = lm, tape, max_seconds, dict(crashes or {})
        frozen = list(frozen)
        self._frozen: dict[str, deque] = defaultdict(deque)
        for c in frozen:
            self._frozen[c.key].append(c)
        self.model_id = lm.model_id if lm is not None else (frozen[0].model_id if frozen else "frozen-replay")

    def _take(self, key: str) -> ModelCall | None:
        q = self._frozen.get(key)
        return q.popleft() if q else None

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        params = {"max_tokens": max_tokens, "temperature": temperature}
        if schema:  # only then: the keys of free-text calls recorded before schemas existed stay the same
            params["schema"] = schema
        key = call_key("chat", messages, params)
        t0 = time.perf_counter()
        if (old := self._take(key)) is not None:
            if on_token and old.output:
                on_token(old.output)
            hidden = {int(k): np.asarray(v, dtype=np.float32) for k, v in (old.hidden or {}).items()
                      if int(k) in set(hidden_layers)}
            done = Completion(old.output, old.prompt_tokens, old.completion_tokens, "stop", old.prompt_tokens,
                              hidden=hidden, logprobs=tuple((int(a), float(b)) for a, b in old.logprobs)
                              if logprobs else ())
            model_id = old.model_id
        else:
            done = self._live().chat(messages, max_tokens=max_tokens, temperature=temperature, on_token=on_token,
                                     schema=schema, **call_extras(hidden_layers, logprobs))
            model_id = self.lm.model_id
        self.tape.add(kind="chat", model_id=model_id, key=key, messages=_dump(messages), output=done.text,
                      prompt_tokens=done.prompt_tokens, completion_tokens=done.completion_tokens,
                      duration_ms=_ms(t0), params=params, prompt_reused=done.prompt_reused,
                      hidden={str(k): [round(float(x), 6) for x in v] for k, v in done.hidden.items()},
                      logprobs=[[at, round(lp, 5)] for at, lp in done.logprobs])
        return done

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        params = {"candidates": list(candidates)}
        key = call_key("probs", messages, params)
        t0 = time.perf_counter()
        if (old := self._take(key)) is not None:
            probs, model_id = dict(old.output), old.model_id
        else:
            probs, model_id = self._live().next_token_probs(messages, candidates), self.lm.model_id
        self.tape.add(kind="probs", model_id=model_id, key=key, messages=_dump(messages), output=probs,
                      prompt_tokens=_count(self.lm, messages), completion_tokens=0,
                      duration_ms=_ms(t0), params=params)
        return probs

    def _live(self) -> LanguageModel:
        if self.lm is None and (crash := self.crashes.pop(self.tape.layer, None)) is not None:
            raise crash
        if self.lm is None:
            raise ModelError("replay needs a model call that the trace did not record; "
                             "re-run with a language model (--llm) instead of a frozen replay")
        spent = sum(c.duration_ms for c in self.tape.calls) / 1000
        if self.max_seconds is not None and spent >= self.max_seconds:
            raise ModelTimeExceeded(f"the model used {spent:.0f} s on this question, the max_model_seconds limit "
                                    f"({self.max_seconds:g} s); raise it (RAGCLINIC_MAX_MODEL_SECONDS) to allow more")
        return self.lm


def recorded_crashes(trace: Trace) -> dict[str, ModelCrashed]:
    """By layer, the model crash (or spent ``max_model_seconds``) the trace's run met there: the layer's span that
    ended in an error, the class told by the answer's flag (``llm_time_limit`` or ``llm_crashed``)."""
    flags = tuple((trace.final or {}).get("flags", ()))
    out: dict[str, ModelCrashed] = {}
    for s in trace.spans:
        if s.status == "error" and s.error and s.layer not in out:
            timed = f"llm_time_limit: {s.error}; answered extractively" in flags
            out[s.layer] = (ModelTimeExceeded if timed else ModelCrashed)(s.error)
    return out


def _dump(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _count(lm, messages: Sequence[Message]) -> int:
    """Prompt tokens of a probs call (the model's tokenizer when it has one, else words)."""
    counter = getattr(lm, "count_tokens", None)
    text = "\n".join(m.content for m in messages)
    return counter(text) if counter else len(text.split())


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
