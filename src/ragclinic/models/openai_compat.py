"""Any OpenAI-compatible chat endpoint (llama.cpp server, vLLM, Ollama, hosted APIs) via the openai client."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragclinic import cancel
from ragclinic.errors import ModelError
from ragclinic.models.llm import LANGUAGE_MODELS, Completion, Message, TokenCallback, candidate_variants


@LANGUAGE_MODELS.register("openai")
class OpenAIModel:
    def __init__(self, settings, client=None) -> None:
        if not settings.openai_model:
            raise ModelError("--llm openai needs a model name: set RAGCLINIC_OPENAI_MODEL "
                             "(and RAGCLINIC_OPENAI_BASE_URL for a local server)")
        if client is None:
            import openai  # on use: ~0.7 s to import, only for --llm openai

            key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed"
            client = openai.OpenAI(base_url=settings.openai_base_url, api_key=key,
                                   timeout=settings.openai_timeout, max_retries=settings.openai_max_retries)
        self._client = client
        self._model = settings.openai_model
        self.schema_refused = ""  # why the server refused response_format (then the prompt alone asks for JSON)
        self.logprobs_refused = ""  # why the server refused logprobs (then answers come without token confidences)
        self.model_id = f"openai:{settings.openai_model}@{settings.openai_base_url or 'api.openai.com'}"

    def _call(self, **kwargs):
        import openai  # on use: ~0.7 s to import, only for --llm openai

        try:
            return self._client.chat.completions.create(model=self._model, **kwargs)
        except openai.OpenAIError as e:
            raise ModelError(f"{self.model_id}: {e}") from e

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        extra = self._response_format(schema)
        if logprobs and not self.logprobs_refused:
            extra["logprobs"] = True
        for _ in range(3):  # at most: without response_format, then without logprobs
            try:
                return self._chat(msgs, max_tokens, temperature, on_token, extra)
            except ModelError as e:
                if "response_format" in extra and _refused_format(e):
                    # the server does not take response_format: the prompt asks for the JSON, read as such
                    self.schema_refused = str(e)[:200]
                    extra.pop("response_format")
                elif "logprobs" in extra and "logprob" in str(e).lower():
                    self.logprobs_refused = str(e)[:200]  # the answer comes without token confidences
                    extra.pop("logprobs")
                else:
                    raise
        return self._chat(msgs, max_tokens, temperature, on_token, extra)

    def _response_format(self, schema: dict | None) -> dict:
        if not schema or self.schema_refused:
            return {}
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "answer", "schema": schema, "strict": True}}}

    def _chat(self, msgs, max_tokens: int, temperature: float, on_token, extra: dict) -> Completion:
        if on_token is None:
            r = self._call(messages=msgs, max_tokens=max_tokens, temperature=temperature, **extra)
            usage, choice = r.usage, r.choices[0]
            return Completion(choice.message.content or "", getattr(usage, "prompt_tokens", 0) or 0,
                              getattr(usage, "completion_tokens", 0) or 0, choice.finish_reason or "stop",
                              logprobs=_marks(_content(choice)))
        pieces, finish, usage, tokens = [], "stop", None, []
        stream = self._call(messages=msgs, max_tokens=max_tokens, temperature=temperature, stream=True,
                            stream_options={"include_usage": True}, **extra)
        for part in stream:
            if cancel.requested():  # the client left (ragclinic/cancel.py): the HTTP stream is closed, the server stops
                getattr(stream, "close", lambda: None)()
                raise cancel.Withdrawn("the client disconnected: the reply was stopped")
            if part.choices:
                delta = part.choices[0].delta.content or ""
                if delta:
                    pieces.append(delta)
                    on_token(delta)
                tokens += _content(part.choices[0])
                finish = part.choices[0].finish_reason or finish
            if getattr(part, "usage", None):
                usage = part.usage
        return Completion("".join(pieces), getattr(usage, "prompt_tokens", 0) or 0,
                          getattr(usage, "completion_tokens", 0) or 0, finish, logprobs=_marks(tokens))

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        r = self._call(messages=[{"role": m.role, "content": m.content} for m in messages], max_tokens=1,
                       temperature=0.0, logprobs=True, top_logprobs=20)
        content = (r.choices[0].logprobs and r.choices[0].logprobs.content) or []
        if not content:
            raise ModelError(f"{self.model_id} returned no logprobs; the judge needs an endpoint that supports them")
        mass = {c: 0.0 for c in candidates}
        for top in content[0].top_logprobs:
            for c in candidates:
                if top.token in candidate_variants(c):
                    mass[c] += math.exp(top.logprob)
        total = sum(mass.values())
        return {c: (m / total if total > 0 else 1.0 / len(candidates)) for c, m in mass.items()}


def _content(choice) -> list:
    """A choice's (or a streamed chunk's) token log-probabilities, [] when the server sent none."""
    lp = getattr(choice, "logprobs", None)
    return list(getattr(lp, "content", None) or [])


def _marks(tokens: list) -> tuple[tuple[int, float], ...]:
    """(character offset, log-probability) per token, offsets from the tokens' bytes where the server gives them (a
    token may end inside a character)."""
    out, raw = [], b""
    for t in tokens:
        out.append((len(raw.decode("utf-8", errors="ignore")), float(t.logprob)))
        raw += bytes(t.bytes) if getattr(t, "bytes", None) else (t.token or "").encode("utf-8")
    return tuple(out)


def _refused_format(error: ModelError) -> bool:
    """The server rejected the request because of ``response_format`` (a 400/422 naming it, or an unknown field)."""
    text = str(error).lower()  # it must name the field: "model not supported" is not about the format
    return any(w in text for w in ("response_format", "json_schema", "response format", "structured output"))
