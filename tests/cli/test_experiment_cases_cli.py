"""`ragclinic experiment start|status|stop|report`, `ragclinic feedback` and `ragclinic cases
list|show|expect|diagnose|export` contracts: their --json fields and exit codes, `eval --dataset cases:`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app

runner = CliRunner()


@pytest.fixture
def kb_dir(tmp_path):
    build_kb(tmp_path, BOND_DOCS).close()
    return str(tmp_path / "kb")


def _run(*args, code=0):
    r = runner.invoke(app, [*args])
    assert r.exit_code == code, r.output
    return json.loads(r.stdout) if "--json" in args and code == 0 else r


def test_an_experiment_from_start_to_report(kb_dir, tmp_path):
    (tmp_path / "b.toml").write_text("top_k = 3\n")
    started = _run("experiment", "start", "--name", "topk", "--arm", "A=", "--arm", f"B={tmp_path / 'b.toml'}",
                   "--share", "50/50", "--kb", kb_dir, "--json")
    assert started["status"] == "running" and [a["name"] for a in started["arms"]] == ["A", "B"]
    seen, asked = {}, 0
    while asked < 8 or set(seen) != {"A", "B"}:  # the salt is random: ask on until both arms are seen (2^-39 to fail)
        assert asked < 40, seen
        a = _run("ask", "What is the risk-free rate?", "--kb", kb_dir, "--llm", "none", "--session", f"s{asked}",
                 "--no-cache", "--json")
        seen[a["experiment"]["arm"]] = a["trace_id"]
        assert a["experiment"]["name"] == "topk"
        asked += 1
    fb = _run("feedback", seen["B"], "--rating", "-1", "--note", "too short", "--expected", "treasury bills",
              "--kb", kb_dir, "--json")
    assert fb["case"] == 1 and fb["feedback"] == 1
    listed = _run("experiment", "status", "--kb", kb_dir, "--json")["experiments"]
    assert sum(a["requests"] for a in listed[0]["arms"]) == asked
    plot = tmp_path / "report.png"
    rep = _run("experiment", "report", "topk", "--plot", str(plot), "--kb", kb_dir, "--json")
    assert {"arms", "comparisons", "decision", "requests", "design"} <= set(rep) and rep["requests"] == asked
    arm = rep["arms"][1]
    assert {"helpful_ratio", "helpful_ci", "refusal_rate", "refusals_rated_unhelpful", "refusals_rephrased",
            "followup_rate", "p50_ms", "p95_ms", "tokens_mean", "rated"} <= set(arm)
    cmp = rep["comparisons"][0]
    assert {"difference", "ci", "p_fixed", "p_always_valid", "sample_size_per_arm", "needed_more_per_arm", "winner",
            "stop", "why"} <= set(cmp)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = _run("experiment", "report", "topk", "--kb", kb_dir)
    assert "decision:" in table.stdout
    assert _run("experiment", "stop", "topk", "--kb", kb_dir, "--json")["status"] == "stopped"
    again = _run("experiment", "stop", "topk", "--kb", kb_dir, code=2)
    assert "not running" in again.output
    assert "no experiment 'nope'" in _run("experiment", "report", "nope", "--kb", kb_dir, code=2).output


def test_a_bad_arm_is_refused_before_anything_is_stored(kb_dir, tmp_path):
    (tmp_path / "bad.toml").write_text("embedder = 'e5'\n")
    r = _run("experiment", "start", "--name", "x", "--arm", "A=", "--arm", f"B={tmp_path / 'bad.toml'}",
             "--kb", kb_dir, code=2)
    assert "cannot change" in r.output
    assert _run("experiment", "status", "--kb", kb_dir, "--json") == {"experiments": []}


def test_the_case_library_commands(kb_dir, tmp_path):
    t1 = _run("ask", "What is the risk-free rate?", "--kb", kb_dir, "--llm", "none", "--no-doctor", "--json")
    t2 = _run("ask", "How are bond prices and yields related?", "--kb", kb_dir, "--llm", "none", "--no-doctor",
              "--json")
    _run("feedback", t1["trace_id"], "--rating", "-1", "--note", "wrong", "--kb", kb_dir, "--json")
    _run("feedback", t2["trace_id"], "--rating", "-1", "--kb", kb_dir, "--json")
    cases = _run("cases", "list", "--kb", kb_dir, "--json")["cases"]
    assert [c["question"] for c in cases] == ["How are bond prices and yields related?",
                                               "What is the risk-free rate?"]
    first = cases[1]["id"]
    shown = _run("cases", "show", str(first), "--kb", kb_dir, "--json")
    assert shown["comment"] == "wrong" and shown["trace_id"] == t1["trace_id"]
    assert _run("cases", "expect", str(first), "treasury bills", "--kb", kb_dir, "--json")["expected"] == [
        "treasury bills"]
    done = _run("cases", "diagnose", "--kb", kb_dir, "--llm", "none", "--json")
    assert len(done["cases"]) == 2 and sum(done["layers"].values()) == 2 and "fixes" in done
    assert "unlocalised" in done["layers"]
    out = tmp_path / "cases.jsonl"
    assert _run("cases", "export", "--out", str(out), "--kb", kb_dir, "--json")["cases"] == 1
    assert json.loads(out.read_text())["answers"] == ["treasury bills"]
    assert "no case 99" in _run("cases", "show", "99", "--kb", kb_dir, code=2).output
    ev = _run("eval", "rag", "--dataset", "cases:", "--kb", kb_dir, "--llm", "none", "--arms", "plain", "--json")
    assert ev["n"] == 1 and ev["skipped_records"] == 1
