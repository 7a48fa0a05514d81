"""Contract every LanguageModel passes: the scripted fake, an OpenAI-compatible server on loopback, and the
real local-small model (llama.cpp, weights from the registry packages)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragclinic.config import Settings
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.models.llm import Completion, LanguageModel, Message

MSGS = [Message("system", "Reply briefly."), Message("user", "Is Paris the capital of France? Answer yes or no.")]


class _OpenAIHandler(BaseHTTPRequestHandler):
    """Just enough of /v1/chat/completions: plain, streamed (SSE) and logprobs replies."""

    def log_message(self, *a):
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = ["Yes,", "Paris", "is", "the", "capital."][: body.get("max_tokens", 16)]
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i, w in enumerate(words):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "delta": {"content": (" " if i else "") + w},
                                      "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            end = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                   "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": len(words), "total_tokens": 25}}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            return
        logprobs = None
        if body.get("logprobs"):
            logprobs = {"content": [{"token": "Yes", "logprob": -0.1, "bytes": None, "top_logprobs": [
                {"token": "Yes", "logprob": -0.1, "bytes": None}, {"token": "No", "logprob": -2.5, "bytes": None},
                {"token": "The", "logprob": -4.0, "bytes": None}]}]}
        reply = {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": " ".join(words)},
                              "finish_reason": "stop", "logprobs": logprobs}],
                 "usage": {"prompt_tokens": 20, "completion_tokens": len(words), "total_tokens": 25}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def openai_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


@pytest.fixture(scope="module")
def local_small(tmp_path_factory):
    from ragclinic.models.llama import load_llama

    settings = Settings.load(tmp_path_factory.mktemp("kb"), cache_dir=tmp_path_factory.mktemp("cache"),
                             llm_n_ctx=1024)
    return load_llama("local-small", settings)


@pytest.fixture(params=["fake", "openai", pytest.param("local-small", marks=pytest.mark.slow)])
def lm(request, openai_server, tmp_path) -> LanguageModel:
    if request.param == "fake":
        return ScriptedLanguageModel(["Yes, Paris is the capital."], yes_prob=0.9)
    if request.param == "openai":
        from ragclinic.models.openai_compat import OpenAIModel

        return OpenAIModel(Settings.load(tmp_path / "kb", openai_base_url=openai_server, openai_model="m",
                                         openai_max_retries=0))
    return request.getfixturevalue("local_small")


def test_satisfies_the_protocol(lm):
    assert isinstance(lm, LanguageModel) and lm.model_id


def test_chat_returns_a_completion_with_token_counts(lm):
    done = lm.chat(MSGS, max_tokens=16)
    assert isinstance(done, Completion) and done.text.strip()
    assert done.prompt_tokens > 0 and 0 < done.completion_tokens <= 16
    assert done.finish_reason in ("stop", "length")


def test_streamed_pieces_make_up_the_completion(lm):
    pieces: list[str] = []
    done = lm.chat(MSGS, max_tokens=16, on_token=pieces.append)
    assert len(pieces) >= 1 and "".join(pieces) == done.text


def test_deterministic_at_temperature_zero(lm):
    assert lm.chat(MSGS, max_tokens=12).text == lm.chat(MSGS, max_tokens=12).text


def test_max_tokens_bounds_the_reply(lm):
    done = lm.chat([Message("user", "Count from one to fifty in words, separated by spaces.")], max_tokens=3)
    assert done.completion_tokens <= 3


def test_token_log_probabilities_when_asked_leave_the_text_alone_and_point_into_it(lm):
    """``logprobs``: the same reply, with (offset, log-probability) pairs in order inside it — or none, where the
    backend cannot read them (active retrieval then leaves the answer as it is)."""
    plain, read = lm.chat(MSGS, max_tokens=12), lm.chat(MSGS, max_tokens=12, logprobs=True)
    assert read.text == plain.text and not plain.logprobs
    offsets = [at for at, _ in read.logprobs]
    assert offsets == sorted(offsets) and all(0 <= at < len(read.text) for at in offsets)
    assert all(lp <= 0.0 for _, lp in read.logprobs)


def test_next_token_probs_form_a_distribution_and_see_the_obvious(lm):
    p = lm.next_token_probs(MSGS, ["yes", "no"])
    assert set(p) == {"yes", "no"} and abs(sum(p.values()) - 1) < 1e-6
    assert p["yes"] > 0.5  # Paris is the capital of France


@pytest.mark.slow
def test_local_results_do_not_depend_on_earlier_calls(local_small):
    probe = [Message("user", "Passage: Cats sleep a lot.\nDoes the passage say how many legs a spider has? yes or no")]
    alone = local_small.next_token_probs(probe, ["yes", "no"])
    local_small.chat([Message("user", "Name three prime numbers.")], max_tokens=12)
    local_small.next_token_probs([Message("user", "Is water wet? yes or no")], ["yes", "no"])
    local_small._memo.clear()  # computed again, not recalled
    assert local_small.next_token_probs(probe, ["yes", "no"]) == alone


@pytest.mark.slow
def test_local_repeats_a_greedy_call_from_memory(local_small, monkeypatch):
    real = local_small._llm.create_completion
    calls = []
    monkeypatch.setattr(local_small._llm, "create_completion", lambda *a, **k: calls.append(1) or real(*a, **k))
    local_small._memo.clear()
    msgs = [Message("user", "Name two colours.")]
    first = local_small.chat(msgs, max_tokens=8)
    streamed = []
    again = local_small.chat(msgs, max_tokens=8, on_token=streamed.append)
    assert (again.text, again.prompt_tokens, again.completion_tokens) == (first.text, first.prompt_tokens,
                                                                          first.completion_tokens)
    assert again.prompt_reused == again.prompt_tokens  # nothing evaluated again
    assert "".join(streamed) == first.text and len(calls) == 1
    probe = [Message("user", "Is fire cold? yes or no")]
    assert local_small.next_token_probs(probe, ["yes", "no"]) == local_small.next_token_probs(probe, ["yes", "no"])
    assert len(calls) == 2
    local_small.chat(msgs, max_tokens=8, temperature=0.7)  # sampled: never recalled
    assert len(calls) == 3
