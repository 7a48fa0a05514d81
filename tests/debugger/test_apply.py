"""`diagnose --apply`: the debugger's fix carried out on a copy, the question re-asked, the verdict proven — fixed,
not fixed, fixed with side effects — every step a trace; `--keep` promotes it without losing the original."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic import Clinic
from ragclinic.cli.main import app
from ragclinic.config.settings import read_settings_file
from ragclinic.debugger.base import Expectation, Fix
from ragclinic.trace.store import list_traces

REFUND = "# Refunds\n\nThe refund window for returned goods is 45 days from delivery.\n"
Q = "How long is the refund window for returned goods?"
PARAPHRASED = "How many days is the refund window for damaged parcels?"  # two of its words are in no document
OTHERS = ("What does duration measure?", "What is usually used as a proxy for the risk-free rate?")


@pytest.fixture
def folder(tmp_path):
    kb = build_kb(tmp_path, {**BOND_DOCS, "refunds.md": REFUND}, meta={"refunds.md": {"year": "2019"}})
    kb.close()
    return tmp_path


def _clinic(folder, **settings):
    return Clinic.open(folder / "kb", model=None, llm="none", embedder="fake", judge="llm",
                       cache_dir=folder / "cache", **settings)


def _tags(c, name: str) -> dict:
    (tags,) = c.kb.db.conn.execute("SELECT tags FROM documents WHERE path LIKE ?", [f"%{name}"]).fetchone()
    return json.loads(tags)


def test_a_scope_fault_is_fixed_on_a_copy_and_the_original_is_untouched(folder):
    with _clinic(folder) as c:
        for q in OTHERS:
            c.ask(q, doctor=False)
        version = c.kb.db.version
        d = c.diagnose(Q, ["45 days"], scope={"year": "2020"}, apply=True)
        assert d.verdict == "scope" and [f.what.split(" ")[0] for f in d.fixes] == ["tag", "ask"]
        a = d.applied
        assert a.verdict == "fixed" and a.attempts[0].right and "45 days" in a.attempts[0].answer
        assert a.side_effects["asked"] == 2 and a.side_effects["worse"] == 0
        assert _tags(c, "refunds.md") == {"year": "2019"} and c.kb.db.version == version  # the copy was changed
        round_ = {t["id"]: t["parent_id"] for t in list_traces(c.kb.db, 50, d.trace_id)}
        assert round_[a.attempts[0].trace_id] == d.trace_id  # the fix's run is in the question's debug round
    assert not list(folder.glob(".kb.fix-*"))  # the copy is gone


def test_keep_puts_the_changed_copy_in_place_and_keeps_the_original_beside_it(folder):
    with _clinic(folder) as c:
        d = c.diagnose(Q, ["45 days"], scope={"year": "2020"}, apply=True, keep=True, others=0)
        assert d.applied.verdict == "fixed" and "the original is kept at" in d.applied.kept
    (aside,) = folder.glob("kb.before-fix-*")
    with _clinic(folder) as c:
        assert _tags(c, "refunds.md") == {"year": "2020"}
        assert "45 days" in c.ask(Q, {"year": "2020"}, doctor=False).text
    assert (aside / "kb.sqlite3").is_file()


def test_a_gate_that_refuses_is_fixed_by_its_threshold_and_keep_writes_the_setting(folder):
    with _clinic(folder, gate_threshold_lexical=0.9) as c:
        d = c.diagnose(PARAPHRASED, ["45 days"], apply=True, keep=True, others=0)
        assert d.verdict == "gate" and d.applied.verdict == "fixed"
        (fix,) = [a.fix for a in d.applied.attempts]
        assert list(fix.settings) == ["gate_threshold_lexical"] and fix.settings["gate_threshold_lexical"] < 0.9
        assert "settings.toml" in d.applied.kept
    assert read_settings_file(folder / "kb" / "settings.toml")["gate_threshold_lexical"] == \
        fix.settings["gate_threshold_lexical"]


def test_side_effects_on_an_evaluation_set_are_scored_against_its_answers(folder):
    unanswerable = ("Who won the 1954 football world cup?", Expectation(expect_refusal=True))
    answerable = (OTHERS[0], Expectation((("how much a bond price moves",),)))
    with _clinic(folder, gate_threshold_lexical=0.9) as c:
        d = c.diagnose(PARAPHRASED, ["45 days"], apply=True, keep=True, eval_set=[unanswerable, answerable])
        fx = d.applied.side_effects
        assert fx["source"] == "eval set" and fx["asked"] == 2
        rows = {r["question"]: r["change"] for r in fx["rows"]}
        assert rows[OTHERS[0]] in ("same", "better")  # answered right with or without the lower threshold
        assert fx["to_refusal"] == sum(r["to_refusal"] for r in fx["rows"])
        # the verdict follows the rows: a question that got worse makes it "with side effects", and keeps nothing
        assert (d.applied.verdict == "fixed_with_side_effects") == (fx["worse"] > 0)
        if fx["worse"]:
            assert d.applied.kept.startswith("not kept")
    if not fx["worse"]:
        assert "gate_threshold_lexical" in read_settings_file(folder / "kb" / "settings.toml")
    else:
        assert "gate_threshold_lexical" not in read_settings_file(folder / "kb" / "settings.toml")


def test_a_fix_whose_setting_is_out_of_range_is_an_error_that_names_it_and_writes_nothing(folder):
    from ragclinic.debugger.apply import apply

    with _clinic(folder) as c:
        trace = c.trace(c.ask(Q, doctor=False).trace_id)
        tried = apply(c.pipeline, trace, [Fix("keep 60 passages", settings={"context_k": 60})],
                      Expectation((("45 days",),)), keep=True)
        assert tried.verdict == "not_fixed" and "context_k" in tried.attempts[0].error
    assert "context_k" not in read_settings_file(folder / "kb" / "settings.toml")


def test_keep_carries_every_trace_and_rating_into_the_new_knowledge_base(folder):
    from ragclinic.trace.store import add_feedback

    with _clinic(folder) as c:
        rated = c.ask(OTHERS[0], doctor=False).trace_id
        add_feedback(c.kb.db, rated, {"rating": 1, "note": "good", "created": 0.0})
        d = c.diagnose(Q, ["45 days"], scope={"year": "2020"}, apply=True, keep=True, others=0)
        assert "the original is kept" in d.applied.kept
    with _clinic(folder) as c:
        assert c.trace(rated).feedback[0]["note"] == "good"
        assert c.trace(d.trace_id).query == Q and c.trace(d.applied.attempts[0].trace_id)


def test_a_fault_no_fix_repairs_is_not_fixed_and_one_without_a_fix_says_so(folder):
    with _clinic(folder) as c:
        d = c.diagnose("Which cat breeds are mentioned?", ["sphynx"], apply=True)  # no document says so
        assert d.verdict == "parse" and d.applied.verdict == "no_fix" and not d.fixes
        trace = c.ask(Q, doctor=False).trace_id
        from ragclinic.debugger.apply import apply
        tried = apply(c.pipeline, c.trace(trace), [Fix("keep one passage", settings={"context_k": 1},
                                                       request={"context_k": 1})],
                      Expectation((("90 days",),)), others=0)
        assert tried.verdict == "not_fixed" and tried.attempts[0].right is False


def test_a_knowledge_base_rebuilt_with_other_chunk_sizes_keeps_each_documents_tags(folder):
    from ragclinic.debugger.apply import _Variant

    with _clinic(folder) as c:
        trace = c.trace(c.ask(Q, {"year": "2019"}, doctor=False).trace_id)
        v = _Variant(c.pipeline, Fix("re-chunk", kb_settings={"chunk_max_tokens": 64, "chunk_min_tokens": 8, "overlap_max_tokens": 16}), "t")
        v.open()
        try:
            assert v.parts.kb.settings.chunk_max_tokens == 64
            (tags,) = v.parts.kb.db.conn.execute("SELECT tags FROM documents WHERE path LIKE '%refunds.md'").fetchone()
            assert json.loads(tags) == {"year": "2019"}
            state, _ = v.rerun(trace)
            assert "45 days" in state.answer.text
        finally:
            v.close()
        assert c.kb.settings.chunk_max_tokens != 64 and not list(folder.glob(".kb.fix-*"))


def test_cli_apply_json_contract_and_usage(folder, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_EMBEDDER", "fake")
    monkeypatch.setenv("RAGCLINIC_JUDGE", "llm")
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(folder / "cache"))
    r = CliRunner().invoke(app, ["diagnose", "--kb", str(folder / "kb"), "-q", Q, "--expected", "45 days", "--scope",
                                 "year=2020", "--apply", "--llm", "none", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["verdict"] == "scope" and data["fixes"] and data["applied"]["verdict"] == "fixed"
    assert {"verdict", "attempts", "side_effects", "kept", "why"} <= set(data["applied"])
    text = CliRunner().invoke(app, ["diagnose", "--kb", str(folder / "kb"), "-q", Q, "--expected", "45 days",
                                    "--scope", "year=2020", "--apply", "--llm", "none"])
    assert text.exit_code == 0 and "fixed" in text.output and "tried tag" in text.output
    bad = CliRunner().invoke(app, ["diagnose", "--kb", str(folder / "kb"), "-q", Q, "--expected", "45", "--keep"])
    assert bad.exit_code == 2 and "--keep and --side-effects go with --apply" in bad.output



def test_an_answer_a_fix_turns_into_a_refusal_is_counted_even_when_it_was_wrong():
    """Over past failures every answer was wrong, so a fix that refuses everything is never "worse": the count of
    answers turned into refusals is what shows it."""
    from ragclinic.debugger.apply import _compare

    wrong = Expectation((("£149",),))
    row = _compare("What does Pro cost?", {"answer": "£119 [1].", "refused": False},
                   {"answer": "I can't answer this from the documents.", "refused": True}, wrong)
    assert row["change"] == "changed" and row["to_refusal"] is True
    same = _compare("q", {"answer": "no.", "refused": True}, {"answer": "no.", "refused": True}, None)
    assert same["to_refusal"] is False
