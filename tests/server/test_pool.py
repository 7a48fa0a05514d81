"""The shared model's queue: calls run one at a time, the depth is counted, and a call whose client has gone
is dropped while it waits (it never reaches the model)."""

from __future__ import annotations

import threading
import time

import pytest

from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.models.llm import Message
from ragclinic.server.pool import CANCELLED, ClientGone, QueuedModel

from .conftest import HOSTS

MSG = [Message("user", "hello there")]


def test_calls_queue_and_a_gone_clients_waiting_call_is_dropped():
    lm = PacedLanguageModel(["one two three four five six"], token_seconds=0.1)
    q = QueuedModel(lm)
    depths, errors = [], []

    def long_call():
        q.chat(MSG, max_tokens=16)

    def waiting_call(gone: threading.Event):
        CANCELLED.set(gone)
        try:
            q.chat(MSG, max_tokens=16)
        except ClientGone as e:
            errors.append(str(e))

    first = threading.Thread(target=long_call)
    first.start()
    time.sleep(0.05)
    gone = threading.Event()
    second = threading.Thread(target=waiting_call, args=(gone,))
    second.start()
    time.sleep(0.1)
    depths.append(q.depth)
    gone.set()  # the client disconnects while its call waits
    second.join(timeout=5)
    first.join(timeout=5)
    assert depths == [2] and q.depth == 0
    assert errors and "disconnected" in errors[0]
    assert len([c for c in lm.calls if c[0] == "chat"]) == 1  # the dropped call never reached the model


def test_evaluation_reports_are_listed_and_served(tmp_path):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app

    run = tmp_path / "evals" / "rgb-run"
    run.mkdir(parents=True)
    (run / "results.json").write_text('{"task": "rag", "n": 81}', encoding="utf-8")
    (run / "report.html").write_text("<h1>report</h1><script>alert(1)</script>", encoding="utf-8")
    app = create_app(Settings.load(tmp_path / "kb", llm="none", embedder="fake", cache_dir=tmp_path / "cache",
                                   allowed_hosts=HOSTS), evals=tmp_path / "evals")
    with TestClient(app) as c:
        page = c.get("/evals")
        assert page.status_code == 200 and "rgb-run" in page.text and "81" in page.text
        report = c.get("/evals/rgb-run/report.html")
        assert report.status_code == 200 and report.headers["content-security-policy"] == "script-src 'none'"
        for bad in ("/evals/..%2F..%2Fetc/passwd.html", "/evals/rgb-run/results.py", "/evals/nope/report.html"):
            assert c.get(bad).status_code == 404
    (run / "results.json").write_text("[1, 2", encoding="utf-8")  # a broken run is left out, not a 500
    gone = create_app(Settings.load(tmp_path / "kb", llm="none", embedder="fake", cache_dir=tmp_path / "cache",
                                    allowed_hosts=HOSTS), evals=tmp_path / "no-such-folder")
    with TestClient(app) as c, TestClient(gone) as g:
        assert c.get("/evals").status_code == 200 and "rgb-run" not in c.get("/evals").text
        assert g.get("/evals").status_code == 200


@pytest.mark.parametrize("spec", ["short", "key-123456:team=x", "key-123456:tenant="])
def test_bad_key_specs_name_the_fix(spec):
    from ragclinic.errors import ConfigError
    from ragclinic.server.auth import Keys

    with pytest.raises(ConfigError):
        Keys([spec])


def test_a_background_call_lets_a_questions_call_go_first():
    """The background repair's model calls (BACKGROUND) wait while a question's call waits: a first answer is
    delayed by at most the call the repair is in."""
    from ragclinic.server.pool import BACKGROUND

    lm = PacedLanguageModel(["one two three"], token_seconds=0.2)  # a call: ~0.6 s, far longer than the starts
    q = QueuedModel(lm)
    order: list[str] = []

    def call(name: str, background: bool):
        BACKGROUND.set(background)
        q.chat(MSG, max_tokens=8)
        order.append(name)

    first = threading.Thread(target=call, args=("question-1", False))
    first.start()
    time.sleep(0.03)
    repair = threading.Thread(target=call, args=("repair", True))
    repair.start()
    time.sleep(0.03)
    second = threading.Thread(target=call, args=("question-2", False))
    second.start()
    for t in (first, repair, second):
        t.join(10)
    assert order == ["question-1", "question-2", "repair"]
    assert q.depth == 0
