"""Issue 52's dominance report: per question, the simple peer right and ragclinic wrong (a loss) or the reverse
(a win), each loss with what the run held at the time and the layer the debugger blames."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.eval.diagnose import blame_losses
from ragclinic.eval.dominance import blamed_layers, dominance, keep_blame, loss_kind
from ragclinic.eval.report import dominance_section
from ragclinic.eval.tasks.rag import cases, run_rag
from ragclinic.models.fake_llm import ScriptedLanguageModel
from tests.eval.test_rag_task import ITEM, rgb_file

WRONG = json.dumps({"status": "answered", "answer": "90个议席", "evidence": [1]}, ensure_ascii=False)


def _row(key: str, expect_refusal: bool, peer: dict, arm: dict) -> dict:
    return {"key": key, "setting": "default", "question": f"q{key}?", "expected": [] if expect_refusal else [["a"]],
            "expect_refusal": expect_refusal, "kb": "", "naive": peer, "baseline": arm}


def _arm(correct=False, refused=False, tools=False, answer="x") -> dict:
    return {"answer": answer, "correct": correct, "refused": refused, "trace_id": "t", "state": {"tools": tools}}


def test_losses_and_wins_are_counted_per_question_with_what_the_user_saw():
    rows = [_row("1", False, _arm(correct=True), _arm(refused=True)),          # lost: refused
            _row("2", False, _arm(correct=True), _arm(tools=True)),            # lost: computed by tools
            _row("3", False, _arm(correct=True), _arm()),                      # lost: wrong
            _row("4", True, _arm(refused=True), _arm()),                       # lost: answered unanswerable
            _row("5", False, _arm(), _arm(correct=True)),                      # won
            _row("6", True, _arm(), _arm(refused=True)),                       # won: refused rightly
            _row("7", False, _arm(correct=True), _arm(correct=True)),          # both right
            _row("8", False, _arm(), _arm())]                                  # both wrong
    d = dominance(rows, ("naive", "baseline"))["baseline"]
    assert (d["of"], d["peer_ok"], d["arm_ok"], d["losses"], d["wins"]) == (8, 5, 3, 4, 2)
    assert d["loss_rate"] == 0.5 and not d["dominates"]
    assert d["losses_by_kind"] == {"refused": 1, "tools": 1, "wrong": 1, "answered unanswerable": 1}
    assert [c["key"] for c in d["loss_cases"]] == ["1", "2", "3", "4"]
    assert [c["key"] for c in d["win_cases"]] == ["5", "6"]
    assert loss_kind(rows[0], rows[0]["baseline"]) == "refused"
    assert blamed_layers(d) == {"not diagnosed": 4}
    # rows the peer did not answer (an arm run without it) are not compared
    assert dominance([{**rows[0], "naive": None}], ("naive", "baseline"))["baseline"]["of"] == 0


def test_a_loss_keeps_the_state_the_run_held_and_a_resumed_report_keeps_its_blame(tmp_path):
    # The peer reads 70 from the passages; the pipeline's structured reply takes another number from them.
    lm = ScriptedLanguageModel([WRONG], rules=[(r"^文档：", "第六届立法会共有70个议席。")], yes_prob=0.9)
    todo = cases([ITEM], ["0"], seed=0)
    rows = run_rag(todo, lm, {"llm": "none"}, doctor=False, arms=("naive", "baseline"),
                   checkpoint=tmp_path / "items.jsonl")
    assert rows[0]["naive"]["correct"] and not rows[0]["baseline"]["correct"]
    state = rows[0]["baseline"]["state"]
    assert state["reply_answer"] == "90个议席" and state["reply_status"] == "answered"
    assert state["route"] == "answer" and state["path"] == "direct" and state["supports"]
    d = dominance(rows, ("naive", "baseline"))
    [loss] = d["baseline"]["loss_cases"]
    assert loss["kind"] == "wrong" and loss["peer_answer"].startswith("第六届") and loss["state"] == state
    assert loss["kb"] and loss["trace_id"] == rows[0]["baseline"]["trace_id"]
    blamed = blame_losses(d, "none", limit=5)
    blame = blamed["baseline"]["loss_cases"][0]["blame"]
    assert blame["layer"] in ("parse", "chunk", "retrieve", "scope", "gate", "generate", "none"), blame
    assert blame["layer"] != "error" and blamed_layers(blamed["baseline"]) == {blame["layer"]: 1}
    again = keep_blame(dominance(rows, ("naive", "baseline")), blamed)
    assert again["baseline"]["loss_cases"][0]["blame"] == blame  # not diagnosed twice
    md = "\n".join(dominance_section(blamed))
    assert "the questions lost to the peer" in md and "90个议席" in md and blame["layer"] in md


def test_cli_writes_the_dominance_report_beside_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    f = rgb_file(tmp_path)
    r = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "fake", "--arms", "naive,plain",
                                 "--noise", "0.4,neg", "--json", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    d = data["dominance"]["baseline"]
    assert d["of"] == 2 and d["losses"] + d["wins"] <= 2 and set(d) >= {"loss_rate", "losses_by_kind", "loss_cases"}
    saved = json.loads((tmp_path / "o" / "dominance.json").read_text(encoding="utf-8"))
    assert saved["baseline"]["of"] == 2
    assert "Against the simple peer" in (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    plain = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{f}", "--llm", "fake", "--arms",
                                     "naive,plain", "--noise", "0.4", "--out", str(tmp_path / "p")])
    assert plain.exit_code == 0 and "against the naive peer" in plain.output
