"""eval measures the product's own path (issue 54): an `eval rag --kb` row and `ask --json` of the same question over
the same knowledge base hold the same answer and the same trace, once ids and timings are masked — both go
through ``Clinic.answer``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.store import load_trace

runner = CliRunner()
QUESTIONS = ("What is the risk-free rate?", "What does duration measure?")
_VOLATILE = {"id", "trace_id", "debug_round_id", "created", "ms", "start_ms", "duration_ms", "total_ms", "seconds"}


def _masked(value):
    """``value`` without ids and timings (they differ between any two runs)."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items() if k not in _VOLATILE and not str(k).endswith(("_ms", "trace_id", "_s"))}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _trace(kb_dir, trace_id):
    kb = KnowledgeBase.open(Settings.load(kb_dir))
    try:
        return load_trace(kb.db, trace_id).to_dict()
    finally:
        kb.close()


@pytest.mark.parametrize("doctor", [False, True], ids=["plain", "doctor"])
def test_ask_json_and_an_eval_row_hold_the_same_answer_and_trace(tmp_path, doctor):
    build_kb(tmp_path, BOND_DOCS).close()
    kb_dir = str(tmp_path / "kb")
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "answers": ["x"]}) + "\n"
                            for i, q in enumerate(QUESTIONS)), encoding="utf-8")
    r = runner.invoke(app, ["eval", "rag", "--dataset", f"jsonl:{data}", "--kb", kb_dir, "--llm", "none",
                            *(["--arms", "plain,doctor"] if doctor else ["--no-doctor"]),
                            "--out", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0, r.output
    rows = {json.loads(x)["question"]: json.loads(x) for x in
            (tmp_path / "out" / "items.jsonl").read_text(encoding="utf-8").splitlines()}
    for q in QUESTIONS:
        asked = runner.invoke(app, ["ask", q, "--kb", kb_dir, "--llm", "none", "--no-cache", "--json",
                                    "--doctor" if doctor else "--no-doctor"])
        assert asked.exit_code == 0, asked.output
        shown = json.loads(asked.stdout)
        row = rows[q]["doctor" if doctor else "baseline"]
        assert row["answer"] == shown["answer"] and row["refused"] == shown["refused"]
        assert row["trace_id"] != shown["trace_id"]  # two runs, each with its own trace
        ours, theirs = _trace(kb_dir, row["trace_id"]), _trace(kb_dir, shown["trace_id"])
        assert _masked(ours)["spans"] and _masked(ours)["final"]["answer"] == shown["answer"]
        assert _masked(ours) == _masked(theirs)
