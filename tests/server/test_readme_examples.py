"""The README's curl examples, copied as written, against a live server (issue 32: they sent no JSON content
type and got 422). Only the address and $KEY are replaced; each must answer 200 with what its comment promises."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import ADMIN

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "docs" / "server.md", ROOT / "docs" / "api.md"]
ADDRESS = "http://127.0.0.1:8080"


def curl_examples(text: str) -> list[str]:
    """Every `curl` command in the document's ``sh`` blocks, its continuation lines joined."""
    out = []
    for block in re.findall(r"```(?:sh|bash|shell|console)\n(.*?)```", text, re.S):
        lines = block.replace("\\\n", " ").splitlines()
        out += [line.strip() for line in lines if line.strip().startswith("curl ")]
    return out


EXAMPLES = [(path.name, cmd) for path in DOCS if path.exists()
            for cmd in curl_examples(path.read_text(encoding="utf-8")) if ADDRESS in cmd]


def test_the_readme_has_curl_examples():
    assert len([1 for name, _ in EXAMPLES if name == "README.md"]) >= 2, EXAMPLES


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
@pytest.mark.parametrize("doc, command", EXAMPLES, ids=[f"{n}:{i}" for i, (n, _) in enumerate(EXAMPLES)])
def test_each_curl_example_works_as_written(live, doc, command):
    bare = re.sub(r"\s+#[^'\"]*$", "", command)  # the comment that ends the line
    run = bare.replace(ADDRESS, live) + " -w '\\n%{http_code}'"
    done = subprocess.run(["bash", "-c", run], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KEY": ADMIN, "no_proxy": "127.0.0.1"})
    assert done.returncode == 0, done.stderr
    body, _, status = done.stdout.rpartition("\n")
    assert status == "200", (command, body[:400])
    if "text/event-stream" in command:
        assert "event: final" in body and "event: error" not in body
    else:
        answer = json.loads(body)
        assert "error" not in answer and (answer.get("answer") or answer.get("hits") or answer.get("traces")
                                          or answer.get("data") is not None), body[:400]
