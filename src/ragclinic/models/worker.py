"""The model worker: one process that owns a loaded language model and answers requests from its parent.

Started by :class:`ragclinic.models.service.ModelService` as ``python -m ragclinic.models.worker``. The
protocol is one JSON object per line: requests on stdin, replies on the original stdout (fd 1 is pointed at
stderr once the protocol has its own copy, so nothing native can print into the protocol).

- ``{"op": "load", "name", "settings", "options"}`` → ``{"ok", "model_id", "backend", "seconds"}``
- ``{"op": "chat", "messages", "max_tokens", "temperature", "stream", "schema"[, "hidden_layers", "logprobs"]}`` →
  ``{"token"}``... ``{"ok", "result"}`` (the result: text, prompt and completion tokens, finish reason, prompt tokens
  reused, then the hidden vectors by layer and the sampled tokens' [offset, log-probability] pairs when asked for and
  read)
- ``{"op": "probs", "messages", "candidates"}`` / ``{"op": "count", "text"}`` → ``{"ok", "result"}``
- ``{"op": "quit"}``; end of stdin (the parent died) ends the worker too.
- SIGUSR1 withdraws the request being answered (the server's client left): it stops at its next token and replies
  ``{"ok": false, "kind": "Withdrawn"}``.

A request that fails in Python replies ``{"ok": false, "error", "kind"}`` and the worker lives on; a native
crash kills the process, which the parent sees as the end of its stdout and reports with the signal.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Sequence
from pathlib import Path

from ragclinic import cancel
from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.models.llama import LlamaModel
from ragclinic.models.llm import Completion, LanguageModel, Message, call_extras
from ragclinic.models.weights import WEIGHTS

STOP = threading.Event()  # set by SIGUSR1: the request being answered was withdrawn (its client left)


def load(name: str, settings: dict, options: dict) -> tuple[LanguageModel, dict]:
    """The model, in this process (never through another service)."""
    if name in ("local", "local-small"):
        ns = types.SimpleNamespace(**{**settings, "cache_dir": Path(settings["cache_dir"])})
        ns.llm_cpu_variant = options.get("cpu_variant", "")
        model = LlamaModel(WEIGHTS[name], ns)
        return model, model.backend.to_json()
    if name == "fake":
        keys = ("replies", "token_seconds", "yes_prob", "crash_on", "crash_signal", "token_probs")
        return PacedLanguageModel(**{k: options[k] for k in keys if k in options}), {"variant": "none"}
    raise ValueError(f"the model worker has no backend {name!r}")


def _messages(raw: Sequence) -> list[Message]:
    return [Message(role, content) for role, content in raw]


def answer(model: LanguageModel, req: dict, on_token=None, between=None):
    """The result of one request (chat, probs, count) on a loaded model; raises on a bad request. ``on_token``:
    each piece of a streamed reply; ``between``: called with each piece of a reply that does not stream (a check
    that may stop it)."""
    op = req.get("op")
    if op == "chat":
        extra = call_extras(req.get("hidden_layers") or (), bool(req.get("logprobs")))
        done: Completion = model.chat(_messages(req["messages"]), max_tokens=req["max_tokens"],
                                      temperature=req.get("temperature", 0.0),
                                      on_token=on_token if req.get("stream") else between,
                                      schema=req.get("schema"),
                                      **extra)
        out = [done.text, done.prompt_tokens, done.completion_tokens, done.finish_reason, done.prompt_reused]
        if done.hidden or done.logprobs:  # the last prompt token's vectors, per layer (models/hidden.py)
            out.append({str(k): [round(float(x), 6) for x in v] for k, v in done.hidden.items()})
        if done.logprobs:  # each sampled token's [offset, log-probability]
            out.append([[at, round(lp, 5)] for at, lp in done.logprobs])
        return out
    if op == "probs":
        return model.next_token_probs(_messages(req["messages"]), req["candidates"])
    if op == "count":
        counter = getattr(model, "count_tokens", None)
        return counter(req["text"]) if counter else len(req["text"].split())
    raise ValueError(f"unknown request {op!r}")


def serve(inp, out) -> None:
    def send(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    model = None
    for line in inp:
        req = json.loads(line)
        op = req.get("op")
        if op == "quit":
            return
        try:
            if op == "load":
                t0 = time.perf_counter()
                model, backend = load(req["name"], req.get("settings", {}), req.get("options", {}))
                send({"ok": True, "model_id": model.model_id, "backend": backend, "pid": os.getpid(),
                      "seconds": round(time.perf_counter() - t0, 3)})
            elif model is None:
                raise RuntimeError("no model is loaded; send a load request first")
            else:
                STOP.clear()  # after the request is read: a stop meant for the last one is spent
                hook = _tokens(req, send)
                send({"ok": True, "result": answer(model, req, hook, between=hook)})
        except Exception as e:  # noqa: BLE001 - reported to the parent, which raises ModelError
            send({"ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__})


def _tokens(req: dict, send):
    """One request's ``on_token``: each piece to the parent when it streams; between pieces, a request the parent
    withdrew (SIGUSR1: its client left) stops with ``Withdrawn`` — replied as an error, so the protocol stays in
    step and the model stays loaded."""
    def on_token(piece: str) -> None:
        if STOP.is_set():
            raise cancel.Withdrawn("the parent withdrew the request")
        if req.get("stream"):
            send({"token": piece})
    return on_token


def _withdrawn(_signum, _frame) -> None:
    STOP.set()


def _watch_parent() -> None:
    """End this worker when its parent is gone (killed without closing our stdin first, e.g. SIGKILL): a
    long call would otherwise run to its end for nobody. Checked once a second, from its own thread."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _watch_parent()
    signal.signal(signal.SIGUSR1, _withdrawn)  # the parent's "stop the reply you are writing"
    faulthandler.enable(sys.stderr)  # a native crash leaves its Python stack in the parent's crash report
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed natively goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    serve(sys.stdin, proto)


if __name__ == "__main__":
    main()
