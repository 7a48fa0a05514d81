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
    """No test reads the user's settings or cache: RAGCLINIC_* cleared, cache in a temp folder."""
    for k in list(os.environ):
        if k.startswith("RAGCLINIC_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def make_settings(tmp_path):
    from ragclinic.config import Settings

    def make(kb=None, **overrides):
        overrides.setdefault("embedder", "fake")
        return Settings.load(kb or tmp_path / "kb", **overrides)

    return make

