"""A served knowledge base for the server tests: bond documents for everyone, one refund policy per tenant,
keys for an admin and two tenants, the scripted model."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel

ADMIN, ACME, GLOBEX = "admin-key-123", "acme-key-123", "globex-key-123"
KEYS = [ADMIN, f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]
ANSWER = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."
# The Host names the test servers answer: the loopback names (the default) and TestClient's "testserver".
HOSTS = ["127.0.0.1", "localhost", "::1", "testserver"]


def _reply(messages) -> str:
    """The answer schema filled as the model fills it (generate/structured.py); the server renders ANSWER from it."""
    import json

    user = messages[-1].content
    question = user.rsplit("Question:", 1)[-1]
    if "refund" in question:
        text = "The refund window is 45 days" if "45 days" in user else "The refund window is 7 days"
    else:
        text = ANSWER.removesuffix(" [1].")
    return json.dumps({"status": "answered", "answer": text, "evidence": [1]})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    tmp = tmp_path_factory.mktemp("served")
    root = tmp / "docs"
    (root / "shared").mkdir(parents=True)
    for name, text in BOND_DOCS.items():
        (root / "shared" / name).write_text(text, encoding="utf-8")
    for tenant, days in (("acme", "45"), ("globex", "7")):
        (root / tenant).mkdir()
        (root / tenant / "refunds.md").write_text(f"# Refunds\n\nThe {tenant} refund window is {days} days.\n",
                                                  encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / "cache", "answer_cache": False}
    with Clinic.open(tmp / "kb", llm="none", **settings) as c:
        c.ingest(root / "shared")
        c.ingest(root / "acme", tags={"tenant": "acme"})
        c.ingest(root / "globex", tags={"tenant": "globex"})
    app = create_app(Settings.load(tmp / "kb", **settings, allowed_hosts=HOSTS), Keys(KEYS),
                     model=ScriptedLanguageModel([_reply], yes_prob=0.9), max_upload_mb=1)
    with TestClient(app) as client:
        yield client


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@contextmanager
def on_socket(app):
    """``app`` served on a real socket (127.0.0.1, a free port) while the block runs: its base URL."""
    import threading
    import time

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not (server.started and server.servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the test server did not start"
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def live(served):
    """The served app on a real socket, for clients that speak HTTP themselves."""
    with on_socket(served.app) as url:
        yield url
