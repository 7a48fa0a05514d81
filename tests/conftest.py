from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import netguard  # noqa: E402

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
netguard.install()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    """No test reads the user's settings or cache: RAGCLINIC_* cleared, cache in a temp folder.

    The judge is pinned to ``lexical`` (or, where a test scripts the fake model's yes/no logits, ``llm``) so a
    test's expected evidence scores are exact word-overlap shares; the learned verifier — the product default —
    has its own contract suite (tests/verify) and pipeline tests that select it (``judge="learned"``). Likewise
    the planted-instruction finder is pinned to its rules; the learned detector (the default) has its own tests
    (tests/verify/test_instructions.py)."""
    for k in list(os.environ):
        if k.startswith("RAGCLINIC_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("RAGCLINIC_LLM_WARM_SECONDS", "0")  # no test leaves a warm model worker behind (models/warm.py)
    monkeypatch.setenv("RAGCLINIC_JUDGE", "llm")
    monkeypatch.setenv("RAGCLINIC_INSTRUCTION_DETECTOR", "rules")


@pytest.fixture
def make_settings(tmp_path):
    from ragclinic.config import Settings

    def make(kb=None, **overrides):
        overrides.setdefault("embedder", "fake")
        overrides.setdefault("judge", "llm")
        return Settings.load(kb or tmp_path / "kb", **overrides)

    return make

