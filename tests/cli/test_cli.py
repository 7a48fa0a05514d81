"""The CLI contract, through typer's runner: field names, exit codes, messages."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from ragclinic.cli.main import app

INGEST_KEYS = {"added", "updated", "unchanged", "removed", "failed", "chunks", "seconds"}


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.md").write_text("# Alpha\n\nAlpha bonds pay a fixed coupon. Their price moves with rates.\n")
    (d / "b.txt").write_text("Beta notes on chunking. Sentences end chunks.\n")
    return d


def _ingest(runner, *args):
    return runner.invoke(app, ["ingest", *map(str, args), "--embedder", "fake", "--json"])


def test_ingest_json_contract_and_exit_0(runner, docs, tmp_path):
    r = _ingest(runner, docs, "--kb", tmp_path / "kb")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data) == INGEST_KEYS
    assert data["added"] == 2 and data["failed"] == [] and data["chunks"] >= 2
    again = json.loads(_ingest(runner, docs, "--kb", tmp_path / "kb").stdout)
    assert again["unchanged"] == 2 and again["added"] == 0


def test_some_failed_exit_1_and_listed(runner, docs, tmp_path):
    (docs / "empty.txt").write_bytes(b"")
    r = _ingest(runner, docs, "--kb", tmp_path / "kb")
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["added"] == 2
    assert data["failed"] == [{"path": str((docs / "empty.txt").resolve()), "reason": "empty file (0 bytes)"}]


def test_max_file_size_flag(runner, docs, tmp_path):
    r = _ingest(runner, docs, "--kb", tmp_path / "kb", "--max-file-size", "10")
    assert r.exit_code == 1
    assert all("max_file_size" in f["reason"] for f in json.loads(r.stdout)["failed"])


def test_strict_exit_1_and_nothing_kept(runner, docs, tmp_path):
    kb = str(tmp_path / "kb")
    _ingest(runner, docs, "--kb", kb)
    before = json.loads(runner.invoke(app, ["kb", "stats", "--kb", kb, "--json"]).stdout)
    (docs / "c.md").write_text("# Gamma\n\nA new document that must not be kept.\n")
    (docs / "z.pdf").write_bytes(b"not a pdf")
    r = runner.invoke(app, ["ingest", str(docs), "--kb", kb, "--embedder", "fake", "--strict"])
    assert r.exit_code == 1 and "z.pdf" in r.stderr
    assert json.loads(runner.invoke(app, ["kb", "stats", "--kb", kb, "--json"]).stdout) == before


def test_kb_stats_docs_report(runner, docs, tmp_path):
    kb = str(tmp_path / "kb")
    _ingest(runner, docs, "--kb", kb)
    stats = json.loads(runner.invoke(app, ["kb", "stats", "--kb", kb, "--json"]).stdout)
    assert set(stats) == {"documents", "chunks", "version"} and stats["documents"] == 2 and stats["version"] > 0
    listing = json.loads(runner.invoke(app, ["kb", "docs", "--kb", kb, "--json"]).stdout)["documents"]
    assert {d["title"] for d in listing} == {"Alpha", "b"}
    rep = runner.invoke(app, ["kb", "report", str(docs / "a.md"), "--kb", kb, "--json"])
    assert rep.exit_code == 0
    d = json.loads(rep.stdout)["documents"][0]
    assert d["parse_report"]["keyword_retention"] == 1.0 and d["chunk_report"]["chunks"] >= 1
    text = runner.invoke(app, ["kb", "report", str(docs / "a.md"), "--kb", kb])
    assert "keyword retention" in text.stdout and text.exit_code == 0
    assert "Alpha" in runner.invoke(app, ["kb", "docs", "--kb", kb]).stdout


def test_report_unknown_doc_names_the_fix(runner, docs, tmp_path):
    kb = str(tmp_path / "kb")
    _ingest(runner, docs, "--kb", kb)
    r = runner.invoke(app, ["kb", "report", "nope", "--kb", kb])
    assert r.exit_code == 2 and "kb docs" in r.stderr


def test_missing_kb_is_a_clear_error(runner, tmp_path):
    r = runner.invoke(app, ["kb", "stats", "--kb", str(tmp_path / "none")])
    assert r.exit_code == 2 and "ragclinic ingest" in r.stderr


def test_changing_the_embedder_of_a_kb_is_refused(runner, docs, tmp_path):
    kb = str(tmp_path / "kb")
    _ingest(runner, docs, "--kb", kb)
    r = runner.invoke(app, ["ingest", str(docs), "--kb", kb, "--embedder", "none"])
    assert r.exit_code == 2 and "embedder='fake'" in r.stderr and "new --kb" in r.stderr


def test_bad_setting_value(runner, docs, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CHUNK_MAX_TOKENS", "lots")
    r = _ingest(runner, docs, "--kb", tmp_path / "kb")
    assert r.exit_code == 2 and "chunk_max_tokens" in r.stderr


def test_progress_and_summary_without_json(runner, docs, tmp_path):
    r = runner.invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "kb"), "--embedder", "fake"])
    assert r.exit_code == 0 and "added" in r.stdout


def test_hidden_files_are_named_in_the_summary_and_when_nothing_else_was_found(runner, docs, tmp_path):
    (docs / ".draft.md").write_text("# Draft\n\nNot ready.\n", encoding="utf-8")
    r = runner.invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "kb"), "--embedder", "fake"])
    assert r.exit_code == 0 and "skipped" in r.stdout and ".draft.md" in r.stdout
    only_hidden = tmp_path / "hidden"
    only_hidden.mkdir()
    (only_hidden / ".notes.md").write_text("# Notes\n\nHidden.\n", encoding="utf-8")
    r = runner.invoke(app, ["ingest", str(only_hidden), "--kb", str(tmp_path / "kb2"), "--embedder", "fake"])
    assert r.exit_code == 1 and "1 hidden entry was skipped" in " ".join(r.stderr.split())


def test_demo_json(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_EMBEDDER", "fake")
    r = runner.invoke(app, ["demo", "--dir", str(tmp_path / "demo"), "--json", "--llm", "none"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    parsers = {d["parser"] for d in data["documents"]}
    assert {"pdf", "docx", "html", "markdown", "text"} <= parsers
    assert data["stats"]["documents"] == len(data["documents"]) == 7
    pdf = next(d for d in data["documents"] if d["path"].endswith("rag-handbook.pdf"))
    assert pdf["hyphen_joins"] >= 1 and pdf["hyphens_kept"] >= 1 and pdf["tables"] == 1
    assert data["search"]["risk-free rate"]
    answered, why, refused, compound = data["answers"]
    assert answered["route"] == "answer" and "bill" in answered["answer"].lower() and answered["citations"]
    assert why["route"] == "answer" and why["citations"]
    assert refused["refused"] is True
    assert "compound" in {s["name"] for s in compound["symptoms"]}
    assert any(r["treatment"] == "decompose" and r["accepted"] for r in compound["repairs"])
    assert "duration" in compound["answer"].lower() and "bill" in compound["answer"].lower()


def test_help_lists_commands(runner):
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0 and "ingest" in r.stdout and "kb" in r.stdout and "demo" in r.stdout


def test_strict_json_prints_the_failure_and_leaves_no_new_kb(runner, docs, tmp_path):
    (docs / "z.pdf").write_bytes(b"not a pdf")
    kb = tmp_path / "fresh-kb"
    r = runner.invoke(app, ["ingest", str(docs), "--kb", str(kb), "--embedder", "fake", "--strict", "--json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert set(data) == INGEST_KEYS and data["added"] == 0 and data["failed"][0]["path"].endswith("z.pdf")
    assert not kb.exists()


def test_tag_flag(runner, docs, tmp_path):
    kb = str(tmp_path / "kb")
    r = runner.invoke(app, ["ingest", str(docs), "--kb", kb, "--embedder", "fake", "--json",
                            "--tag", "tenant=acme", "--tag", "version=3"])
    assert r.exit_code == 0
    bad = runner.invoke(app, ["ingest", str(docs), "--kb", kb, "--tag", "tenant"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output


def test_reparse_applies_a_changed_parse_setting(runner, tmp_path, monkeypatch):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "f.txt").write_text("Analysts discount the expected free cash-\nflow of the firm.\n")
    kb = tmp_path / "kb"
    assert _ingest(runner, d, "--kb", kb).exit_code == 0
    text = lambda: sqlite3.connect(kb / "kb.sqlite3").execute("SELECT text FROM documents").fetchone()[0]  # noqa: E731
    assert "cashflow" in text()
    monkeypatch.setenv("RAGCLINIC_KEEP_HYPHENS", '["cash-flow"]')
    assert json.loads(_ingest(runner, d, "--kb", kb).stdout)["unchanged"] == 1 and "cashflow" in text()
    r = json.loads(_ingest(runner, d, "--kb", kb, "--reparse").stdout)
    assert r["updated"] == 1 and "cash-flow" in text()
