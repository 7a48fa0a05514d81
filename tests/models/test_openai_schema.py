"""Structured answers over an OpenAI-compatible server: the schema goes as `response_format`; a server that refuses
it is asked again without it (the prompt alone asks for the JSON), and is not sent it again."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragclinic.config import Settings
from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.structured import SCHEMAS, parse_reply

MSGS = [Message("system", "Reply in JSON."), Message("user", "Who was Google's CEO in 2021?")]
REPLY = '{"status": "answered", "answer": "Sundar Pichai", "evidence": [2]}'


def _server(refuse_format: bool):
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            if refuse_format and "response_format" in body:
                data = json.dumps({"error": {"message": "response_format is not supported by this server",
                                             "type": "invalid_request_error"}}).encode()
                self.send_response(400)
            else:
                data = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": REPLY}}],
                                   "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}}).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, bodies


@pytest.mark.parametrize("refuse", [False, True])
def test_the_schema_goes_as_response_format_or_the_prompt_alone_asks_for_it(tmp_path, refuse):
    from ragclinic.models.openai_compat import OpenAIModel

    server, bodies = _server(refuse)
    try:
        lm = OpenAIModel(Settings.load(tmp_path / "kb", openai_model="m", openai_max_retries=0,
                                       openai_base_url=f"http://127.0.0.1:{server.server_port}/v1"))
        done = lm.chat(MSGS, max_tokens=32, schema=SCHEMAS["short"])
        assert parse_reply(done.text, "short").items[0].text == "Sundar Pichai"
        first = bodies[0]["response_format"]
        assert first["type"] == "json_schema" and first["json_schema"]["schema"] == SCHEMAS["short"]
        if refuse:
            assert len(bodies) == 2 and "response_format" not in bodies[1] and lm.schema_refused
            lm.chat(MSGS, max_tokens=32, schema=SCHEMAS["short"])  # not offered again
            assert len(bodies) == 3 and "response_format" not in bodies[2]
        else:
            assert len(bodies) == 1 and not lm.schema_refused
        lm.chat(MSGS, max_tokens=32)  # free text: no response_format
        assert "response_format" not in bodies[-1]
    finally:
        server.shutdown()


def _logprob_server(refuse: bool):
    """A server that reports each token's log-probability when asked (or refuses the field)."""
    bodies: list[dict] = []
    tokens = [("Sund", -0.1), ("ar", -0.01), (" Pich", -1.2), ("ai", -0.02)]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            if refuse and body.get("logprobs"):
                data, code = json.dumps({"error": {"message": "logprobs is not supported"}}).encode(), 400
            else:
                lp = {"content": [{"token": t, "logprob": v, "bytes": list(t.encode()), "top_logprobs": []}
                                  for t, v in tokens]} if body.get("logprobs") else None
                data, code = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                                         "choices": [{"index": 0, "finish_reason": "stop", "logprobs": lp,
                                                      "message": {"role": "assistant", "content": "Sundar Pichai"}}],
                                         "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}
                                        ).encode(), 200
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, bodies


@pytest.mark.parametrize("refuse", [False, True])
def test_token_log_probabilities_come_from_the_server_or_the_answer_comes_without_them(tmp_path, refuse):
    from ragclinic.models.openai_compat import OpenAIModel

    server, bodies = _logprob_server(refuse)
    try:
        lm = OpenAIModel(Settings.load(tmp_path / "kb", openai_model="m", openai_max_retries=0,
                                       openai_base_url=f"http://127.0.0.1:{server.server_port}/v1"))
        done = lm.chat(MSGS, max_tokens=32, logprobs=True)
        assert done.text == "Sundar Pichai"
        if refuse:
            assert done.logprobs == () and lm.logprobs_refused and len(bodies) == 2
            assert "logprobs" not in bodies[1]
            lm.chat(MSGS, max_tokens=32, logprobs=True)
            assert "logprobs" not in bodies[2]  # not asked again
        else:
            assert done.logprobs == ((0, -0.1), (4, -0.01), (6, -1.2), (11, -0.02)) and len(bodies) == 1
            assert not lm.chat(MSGS, max_tokens=32).logprobs and "logprobs" not in bodies[1]
    finally:
        server.shutdown()
