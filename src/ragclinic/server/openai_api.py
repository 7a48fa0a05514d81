"""``POST /v1/chat/completions`` and ``GET /v1/models``: the OpenAI chat API over ragclinic, so OpenAI clients
work unchanged (several list the models first).

The last user message is the question; a short follow-up ("and in 2023?") is asked together with the user
message before it, as `ragclinic chat` does. The reply's content is the cited answer; extra fields carry the
citations (the `ask --json` citations) and the trace id. Streamed, the answer's tokens arrive as they are
generated; when the checked answer differs from what was streamed (citations re-placed, sentences rephrased,
a claim withdrawn, the doctor's repair), a last delta gives it ("[final answer] ..."), and the final chunk
carries the citations.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from ragclinic.limits import check_question, over
from ragclinic.server.api import AskBody, bounded, consult
from ragclinic.server.deps import Caller, state
from ragclinic.server.auth import Principal
from ragclinic.server.errors import ApiError
from ragclinic.server.admission import holder_of
from ragclinic.server.sse import Job, JobResponse

router = APIRouter(prefix="/v1", dependencies=[Depends(bounded)])
MODEL = "ragclinic"  # the one model served: the knowledge base's answers, whatever name a request gives
STARTED = int(time.time())


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None


class ChatBody(BaseModel):
    model: str = Field(MODEL, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)  # at most max_chat_messages (check_messages)
    stream: bool = False
    # ragclinic's own, optional: the same as /v1/ask's
    scope: dict[str, str] | None = None
    doctor: bool = True
    # OpenAI's end-user id: a running experiment assigns the arm by it (default: the key)
    user: str | None = Field(None, min_length=1, max_length=128)


def _text(m: ChatMessage) -> str:
    if isinstance(m.content, list):  # content parts: the text ones
        return " ".join(str(p.get("text", "")) for p in m.content if p.get("type") == "text").strip()
    return (m.content or "").strip()


def check_messages(settings, messages: list[ChatMessage]) -> None:
    """How many messages, and how long each (its text parts together), against the settings."""
    if len(messages) > settings.max_chat_messages:
        raise over("messages", "the number of messages", len(messages), "messages", "max_chat_messages",
                   settings.max_chat_messages, "send fewer (the last user message is the question)")
    for i, m in enumerate(messages):
        n = len(m.content) if isinstance(m.content, str) else sum(len(str(p.get("text", ""))) for p in m.content or ())
        if n > settings.max_chat_message_chars:
            raise over("messages", f"message {i}", n, "characters", "max_chat_message_chars",
                       settings.max_chat_message_chars, "shorten it")


def question_of(messages: list[ChatMessage], settings) -> str:
    users = [_text(m) for m in messages if m.role == "user" and _text(m)]
    if not users:
        raise ApiError(422, "invalid_request", "messages: no user message with text to answer")
    q = users[-1]
    if len(users) > 1 and len(q.split()) <= 4 and len(q) <= 24:  # a follow-up refers to the question before
        q = f"{users[-2]} {q}"
    check_question(settings, q, "messages")
    return q


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": STARTED, "owned_by": "ragclinic"}


@router.get("/models", tags=["answers"])
def models(_who: Principal = Caller) -> dict:
    """The model this server serves, in the OpenAI shape (clients that list the models first find it)."""
    return {"object": "list", "data": [_model(MODEL)]}


@router.get("/models/{model_id}", tags=["answers"])
def model(model_id: str, _who: Principal = Caller) -> dict:
    if model_id != MODEL:
        raise ApiError(404, "not_found", f"no model {model_id!r} here: this server serves {MODEL!r}")
    return _model(MODEL)


@router.post("/chat/completions", tags=["answers"])
async def chat_completions(body: ChatBody, request: Request, who: Principal = Caller):
    rc = state(request)
    check_messages(rc.settings, body.messages)
    ask = AskBody(question=question_of(body.messages, rc.settings), scope=body.scope, doctor=body.doctor,
                  session=body.user)
    created = int(time.time())
    holder = holder_of(request, who)
    if body.stream:
        def work(j: Job) -> None:
            j.emit("final", consult(rc, ask, who, lambda piece: j.emit("delta", piece), None))

        job = Job(asyncio.get_running_loop()).start(rc.asks, holder, work)  # 429 here, before the stream
        return JobResponse(job, _chunks(job, request, body.model, created))
    rc.asks.admit(holder)
    seen = await rc.asks.answer(holder, lambda: consult(rc, ask, who, None, None))
    p = seen.to_json()
    return {"id": f"chatcmpl-{p.get('trace_id', '')}", "object": "chat.completion", "created": created,
            "model": body.model, "choices": [{"index": 0, "message": {"role": "assistant", "content": p["answer"]},
                                              "finish_reason": "stop", "logprobs": None}],
            "usage": _usage(seen), "citations": p.get("citations", []), "x_trace_id": p.get("trace_id", "")}


def _usage(seen) -> dict[str, int]:
    calls = getattr(seen.trace, "model_calls", ()) or ()
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def _chunks(job: Job, request: Request, model: str, created: int):
    streamed: list[str] = []
    cid = f"chatcmpl-{int(time.time() * 1000)}"

    def chunk(delta: dict, finish: str | None = None, **extra) -> str:
        return "data: " + json.dumps({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra},
                                     ensure_ascii=False) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    async for item in job.stream(request.is_disconnected):
        if item is None:
            yield ": keep-alive\n\n"
            continue
        event, data = item
        if event == "delta":
            streamed.append(data)
            yield chunk({"content": data})
        elif event == "error":
            yield "data: " + json.dumps(data, ensure_ascii=False) + "\n\n"
        elif event == "final":
            p = data.to_json()
            if "".join(streamed).strip() != p["answer"].strip():
                yield chunk({"content": ("\n\n[final answer] " if streamed else "") + p["answer"]})
            yield chunk({}, "stop", citations=p.get("citations", []), x_trace_id=p.get("trace_id", ""),
                        usage=_usage(data))
    yield "data: [DONE]\n\n"
