"""The model service with the real local-small model (llama.cpp in a worker process): the same results as the
model loaded in-process, and a worker killed mid-question costs one extractive answer, not the command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from helpers import BOND_DOCS, build_kb
from ragclinic.config import Settings
from ragclinic.models.llm import Message
from ragclinic.models.service import ModelService, ServiceModel

pytestmark = pytest.mark.slow

MSGS = [Message("system", "Answer from the passage only."),
        Message("user", "Passage: Duration measures how much a bond price moves when rates change.\n"
                        "Question: What does duration measure?")]


def test_the_worker_gives_exactly_the_in_process_results(tmp_path):
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(tmp_path / "kb", llm="local-small", llm_n_ctx=2048)
    svc = ModelService("local-small", {"cache_dir": str(s.cache_dir), "llm_n_ctx": 2048, "llm_threads": 0,
                                       "seed": 0})
    try:
        remote = ServiceModel(svc)
        # In a child process of its own: this test process may already run another CPU variant.
        remote_chat = remote.chat(MSGS, max_tokens=24)
        remote_probs = remote.next_token_probs(MSGS, ["yes", "no"])
        remote_count = remote.count_tokens("How many tokens is this?")
        inline = LlamaModel(WEIGHTS["local-small"], s.model_copy(update={"llm_isolation": "inline"}))
        assert remote_chat == inline.chat(MSGS, max_tokens=24)
        assert remote_probs == inline.next_token_probs(MSGS, ["yes", "no"])
        assert remote_count == inline.count_tokens("How many tokens is this?")
        assert svc.info["backend"]["variant"] == inline.backend.variant
        assert remote_chat.completion_tokens > 0 and "price" in remote_chat.text.lower()
    finally:
        svc.close()


def _workers(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True)
            if "ragclinic.models.worker" in " ".join(p.cmdline())]


def test_chat_survives_a_worker_killed_mid_answer_and_the_next_question_gets_a_fresh_worker(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS, llm="local-small")
    kb.close()
    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    env = {**os.environ, "RAGCLINIC_LLM_N_CTX": "2048"}
    p = subprocess.Popen([exe, "chat", "--kb", str(tmp_path / "kb"), "--llm", "local-small", "--no-doctor"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: list[str] = []
    threading.Thread(target=lambda: out.extend(iter(lambda: p.stdout.read(1), "")), daemon=True).start()
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(p.stderr), daemon=True).start()

    def wait_for(cond, what: str, seconds: float = 300) -> None:
        deadline = time.monotonic() + seconds
        while not cond():
            assert p.poll() is None, f"chat exited while waiting for {what}: {''.join(err)[-2000:]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {''.join(out)[-500:]}"
            time.sleep(0.05)

    try:
        wait_for(lambda: _workers(p.pid), "the model worker")
        first = _workers(p.pid)[0].pid
        p.stdin.write("What does duration measure?\n")
        p.stdin.flush()
        wait_for(lambda: len("".join(out).replace("? ", "").strip()) > 0, "the answer to start streaming")
        os.kill(first, signal.SIGSEGV)
        wait_for(lambda: "answered extractively]" in "".join(out) and "route answer" in "".join(err),
                 "the extractive answer")
        text = "".join(out)
        assert "[the local-small model crashed: SIGSEGV; answered extractively]" in text
        assert "bond price moves" in text.split("answered extractively]")[1]  # the extractive answer itself
        assert "flag: llm_crashed: the local-small model crashed: SIGSEGV" in "".join(err)
        assert "· extractive ·" in "".join(err)

        mark = len("".join(err))
        p.stdin.write("What is usually used as a proxy for the risk-free rate?\n")
        p.stdin.flush()
        wait_for(lambda: "route " in "".join(err)[mark:], "the second answer")
        second = "".join(err)[mark:]
        assert "· local-small:" in second and "llm_crashed" not in second
        workers = _workers(p.pid)
        assert workers and workers[0].pid != first
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.wait(timeout=60) == 0
    finally:
        if p.poll() is None:
            p.kill()


def test_ask_prints_a_flagged_answer_and_exits_0_when_its_worker_is_killed(tmp_path):
    """`ragclinic ask` on a terminal (a pty, so the answer streams): SIGKILL to the worker as the answer starts."""
    import pty

    kb = build_kb(tmp_path, BOND_DOCS, llm="local-small")
    kb.close()
    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    master, slave = pty.openpty()
    env = {**os.environ, "RAGCLINIC_LLM_N_CTX": "2048", "COLUMNS": "200"}
    p = subprocess.Popen([exe, "ask", "What does duration measure?", "--kb", str(tmp_path / "kb"),
                          "--llm", "local-small", "--no-doctor"], stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=subprocess.PIPE, text=True, env=env)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 300
        while not _workers(p.pid):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        worker = _workers(p.pid)[0].pid
        import select

        while not out.strip():
            assert p.poll() is None and time.monotonic() < deadline, "no answer streamed"
            if select.select([master], [], [], 0.1)[0]:
                out += os.read(master, 4096)
        os.kill(worker, signal.SIGKILL)
        _, err = p.communicate(timeout=300)
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    text = out.decode("utf-8", "replace")
    assert p.returncode == 0, err[-2000:]
    assert "the local-small model crashed: SIGKILL" in text and "answered extractively" in text
    assert "bond price moves" in text.split("answered extractively")[1]
    assert "flag: llm_crashed: the local-small model crashed: SIGKILL" in err


def test_sigterm_to_the_command_ends_it_and_its_worker(tmp_path):
    """The supervisor forwards SIGTERM to the command and ends the same way; the orphaned worker notices its
    parent is gone and exits instead of computing for nobody."""
    kb = build_kb(tmp_path, BOND_DOCS, llm="local-small")
    kb.close()
    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    p = subprocess.Popen([exe, "chat", "--kb", str(tmp_path / "kb"), "--llm", "local-small"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _workers(p.pid):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        worker = _workers(p.pid)[0]
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == -signal.SIGTERM
        worker.wait(timeout=10)  # raises if it is still running
    finally:
        if p.poll() is None:
            p.kill()
