"""Issue 51 item 9: an expected answer typed in another form than the document's ("September 23 2013" for
"September 23, 2013", "1200万元" for "１，２００万元") is still found, so a scope filter that hid the document is
named — not the parser — and `--apply` fixes it."""

from __future__ import annotations

import json

import pytest
from helpers import build_kb
from typer.testing import CliRunner

from ragclinic import Clinic
from ragclinic.cli.main import app

DOCS = {
    "aurora.md": "# Aurora\n\nThe Aurora satellite was launched on September 23, 2013 from Kourou.\n",
    "borealis.md": "# Borealis\n\nThe Borealis probe was cancelled before its launch.\n",
    "aurora-zh.md": "# 极光卫星\n\n极光卫星项目的预算为１，２００万元，由航天局批准。\n",
    "borealis-zh.md": "# 北极光探测器\n\n北极光探测器项目在发射前被取消。\n",
}
TAGS = {"aurora.md": {"year": "2013"}, "borealis.md": {"year": "2014"},
        "aurora-zh.md": {"year": "2013"}, "borealis-zh.md": {"year": "2014"}}
Q = "When was the Aurora satellite launched?"
Q_ZH = "极光卫星项目的预算是多少？"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    build_kb(tmp_path, DOCS, TAGS).close()
    return tmp_path


def _clinic(folder):
    return Clinic.open(folder / "kb", model=None, llm="none", embedder="fake", judge="llm",
                       cache_dir=folder / "cache")


def test_a_date_typed_without_its_comma_localises_the_scope_filter(folder):
    r = CliRunner().invoke(app, ["diagnose", "--kb", str(folder / "kb"), "--llm", "none", "--question", Q,
                                 "--scope", "year=2014", "--expected", "September 23 2013", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["layers"]["parse"]["status"] == "ok", d["layers"]["parse"]
    assert d["verdict"] == "scope" and "year=2014" in d["suggestion"]


def test_a_chinese_amount_typed_without_its_separator_localises_the_scope_filter(folder):
    with _clinic(folder) as c:
        d = c.diagnose(Q_ZH, "1200万元", scope={"year": "2014"})
    assert d.layers["parse"].status == "ok" and "１，２００万元" in d.layers["parse"].evidence["found"][0]["context"]
    assert d.verdict == "scope" and "year=2014" in d.suggestion


def test_apply_fixes_the_scope_fault_found_through_the_other_form(folder):
    with _clinic(folder) as c:
        d = c.diagnose(Q, "September 23 2013", scope={"year": "2014"}, apply=True, others=0)
    assert d.verdict == "scope"
    assert d.applied.verdict == "fixed" and "September 23, 2013" in d.applied.attempts[-1].answer
