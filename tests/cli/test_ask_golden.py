"""`ask --json` is byte-identical to what the code wrote before issue 54's corridor (the request built once, typed to
the edge) on a fixed knowledge base, once ids and timings are masked: tests/fixtures/golden/ask.json was written by
that code (WRITE_GOLDEN=1 writes it again — only to record a change on purpose)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app

runner = CliRunner()
GOLDEN = Path(__file__).parent.parent / "fixtures" / "golden" / "ask.json"
ASKED = [  # (question, extra flags): an answer, a refusal, a scope, Chinese, the doctor
    ("What is the risk-free rate?", ["--no-doctor"]),
    ("Who won the 1998 chess olympiad?", ["--no-doctor"]),
    ("What is the risk-free rate?", ["--no-doctor", "--scope", "tenant=zh-team"]),
    ("无风险利率通常用什么来近似？", ["--no-doctor"]),
    ("What is the risk-free rate?", ["--doctor"]),
    ("How long is the duration of a bond and what does it measure?", ["--doctor"]),
]
_VOLATILE = {"trace_id", "answer_trace_id", "debug_round_id", "created", "id", "chunk_id", "doc_id"}  # from the path


def masked(value):
    """``value`` with every id and timing replaced by a fixed mark and each path by its file name (they differ
    between any two runs)."""
    if isinstance(value, dict):
        return {k: ("<masked>" if k in _VOLATILE or k.endswith(("_ms", "_s", "seconds")) else
                    Path(v).name if k == "path" and isinstance(v, str) else masked(v))  # the test's own tmp folder
                for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("golden")
    build_kb(tmp, BOND_DOCS, {"zh.md": {"tenant": "zh-team"}}).close()
    return str(tmp / "kb")


def test_ask_json_is_what_it_was(kb_dir):
    out = []
    for question, flags in ASKED:
        r = runner.invoke(app, ["ask", question, "--kb", kb_dir, "--llm", "none", "--no-cache", "--json", *flags])
        assert r.exit_code == 0, r.output
        out.append({"question": question, "flags": flags,
                    "stdout": json.dumps(masked(json.loads(r.stdout)), ensure_ascii=False, sort_keys=True)})
    if os.environ.get("WRITE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for was, now in zip(golden, out, strict=True):
        assert now == was, f"ask --json changed for {was['question']!r} {was['flags']}"
