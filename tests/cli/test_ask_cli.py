"""`ragclinic ask` / `trace` CLI contracts: JSON fields, --scope, --llm none, exit codes."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app

runner = CliRunner()
ASK_FIELDS = {"answer", "refused", "route", "question_type", "citations", "confidence", "trace_id"}


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    kb = build_kb(tmp, BOND_DOCS, {"zh.md": {"tenant": "zh-team"}})
    kb.close()
    return str(tmp / "kb")


def _ask(kb_dir, *args):
    r = runner.invoke(app, ["ask", *args, "--kb", kb_dir, "--llm", "none", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_ask_json_contract(kb_dir):
    a = _ask(kb_dir, "What is the risk-free rate?")
    assert ASK_FIELDS <= set(a)
    assert a["route"] == "answer" and a["refused"] is False and a["question_type"] == "factual"
    assert 0 <= a["confidence"] <= 1 and a["citations"]
    c = a["citations"][0]
    assert {"n", "chunk_id", "doc_id", "text"} <= set(c) and f"[{c['n']}]" in a["answer"]
    assert "risk-free" in c["text"]


def test_refusal_and_scope(kb_dir):
    a = _ask(kb_dir, "What is the boiling point of mercury?")
    assert a["refused"] is True and a["route"] == "refuse" and a["citations"] == []
    scoped = _ask(kb_dir, "检索增强生成如何作答？", "--scope", "tenant=zh-team")
    assert scoped["route"] == "answer" and {c["doc_id"] for c in scoped["citations"]} == {scoped["citations"][0]["doc_id"]}
    empty = _ask(kb_dir, "What is the risk-free rate?", "--scope", "tenant=nobody")
    assert empty["refused"] is True


def test_trace_show_and_list(kb_dir):
    a = _ask(kb_dir, "What is duration?")
    r = runner.invoke(app, ["trace", "show", a["trace_id"], "--kb", kb_dir, "--json"])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)
    assert t["id"] == a["trace_id"] and [s["layer"] for s in t["spans"]] == ["retrieve", "scope", "gate", "generate"]
    r = runner.invoke(app, ["trace", "show", a["trace_id"], "--kb", kb_dir])
    assert r.exit_code == 0 and "retrieve" in r.stdout and "generate" in r.stdout
    r = runner.invoke(app, ["trace", "list", "--kb", kb_dir, "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["traces"][0]["id"] == a["trace_id"]
    r = runner.invoke(app, ["trace", "show", "no-such-trace", "--kb", kb_dir])
    assert r.exit_code == 2 and "no trace" in r.output


def test_bad_usage_exits_2(kb_dir):
    r = runner.invoke(app, ["ask", "q?", "--kb", kb_dir, "--scope", "tenant"])
    assert r.exit_code == 2 and "KEY=VALUE" in r.output
    r = runner.invoke(app, ["ask", "q?", "--kb", kb_dir, "--llm", "gpt-17"])
    assert r.exit_code == 2 and "valid names" in " ".join(r.output.split())


def test_text_output_lists_sources(kb_dir):
    r = runner.invoke(app, ["ask", "What is the risk-free rate?", "--kb", kb_dir, "--llm", "none"])
    assert r.exit_code == 0 and "[1]" in r.stdout


def test_chat_answers_each_line_until_an_empty_one(kb_dir):
    r = runner.invoke(app, ["chat", "--kb", kb_dir, "--llm", "none"],
                      input="What is the risk-free rate?\nWhat does duration measure?\n\n")
    assert r.exit_code == 0, r.output
    assert "default risk" in r.output and "bond price" in r.output
