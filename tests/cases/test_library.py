"""The failed-answer library: an unhelpful rating files a case (one per trace), an expected answer lets the debugger
localise it, answers the doctor could not repair are filed when asked to, a tenant sees only its own cases, and the
library is an evaluation set (`cases:KB`)."""

from __future__ import annotations

import json

import pytest

from helpers import BOND_DOCS
from ragclinic import Clinic
from ragclinic.cases.library import NoCase
from ragclinic.clinic.question import Question
from ragclinic.errors import RagclinicError
from ragclinic.eval.datasets import DatasetError, load
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.store import cases as records

RIGHT = "Short-dated treasury bills are the usual proxy for the risk-free rate [1]."
WRONG = "Long-dated corporate bonds are the usual proxy for the risk-free rate [1]."
Q = "What is usually used as a proxy for the risk-free rate?"


def _open(tmp_path, replies, **settings):
    root = tmp_path / "docs"
    if not root.exists():
        root.mkdir()
        for name, text in BOND_DOCS.items():
            (root / name).write_text(text, encoding="utf-8")
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel(list(replies), yes_prob=0.9), embedder="fake",
                    judge="llm", cache_dir=tmp_path / "cache", answer_cache=False, **settings)
    c.ingest([root])
    return c


def test_an_unhelpful_rating_files_one_case_per_trace(tmp_path):
    with _open(tmp_path, [WRONG] * 10) as c:
        t = c.ask(Q, doctor=False).trace_id
        assert c.feedback(t, 1)["case"] is None and c.cases.listed() == []
        first = c.feedback(t, -1, "bonds are not the proxy")["case"]
        again = c.feedback(t, -1, "still wrong", ["treasury bills"])["case"]
        assert first == again
        [case] = c.cases.listed()
        assert case["question"] == Q and case["answer"] == WRONG.replace(" [1]", " [1]")
        assert case["comment"] == "bonds are not the proxy\nstill wrong" and case["expected"] == ["treasury bills"]
        assert case["source"] == "rating" and case["enforced"] == {}
        assert len(c.trace(t).feedback) == 3  # the ratings stay on the trace
        with pytest.raises(RagclinicError, match="1 \\(helpful\\) or -1"):
            c.feedback(t, 0)


def test_the_debugger_localises_cases_with_an_expected_answer_and_says_what_the_others_need(tmp_path):
    with _open(tmp_path, [WRONG] * 40) as c:
        with_expected = c.feedback(c.ask(Q, doctor=False).trace_id, -1, "wrong", ["treasury bills"])["case"]
        other = c.ask("How are bond prices and yields related?", doctor=False).trace_id
        without = c.feedback(other, -1, "no")["case"]
        done = c.cases.diagnose()
        by_id = {x["id"]: x for x in done["cases"]}
        assert by_id[with_expected]["by"] == "debugger" and by_id[with_expected]["answer_right"] is False
        assert by_id[with_expected]["layer"] in ("retrieve", "scope", "gate", "generate")
        assert by_id[without]["layer"] == "unlocalised" and f"cases expect {without}" in by_id[without]["why"]
        assert sum(done["layers"].values()) == 2
        assert c.cases.show(with_expected)["diagnosis"]["layer"] == by_id[with_expected]["layer"]  # kept
        c.cases.expect(without, ["inversely"])
        assert c.cases.show(without)["expected"] == ["inversely"]


def test_the_library_is_an_evaluation_set(tmp_path):
    with _open(tmp_path, [WRONG] * 10) as c:
        c.feedback(c.ask(Q, doctor=False).trace_id, -1, "wrong", ["treasury bills"])
        c.feedback(c.ask("How are bond prices and yields related?", doctor=False).trace_id, -1, "no")
        exported = c.cases.export()
    assert [(r["question"], r["answers"]) for r in exported] == [(Q, ["treasury bills"])]
    loaded = load("cases:", tmp_path / "kb")
    assert [(i.question, i.answers) for i in loaded.data] == [(Q, (("treasury bills",),))]
    assert len(loaded.problems) == 1 and "cases expect" in loaded.problems[0].message
    with pytest.raises(DatasetError, match="no knowledge base there"):
        load(f"cases:{tmp_path / 'nowhere'}")


def test_an_empty_library_says_how_cases_come_to_be(tmp_path):
    with _open(tmp_path, [RIGHT]) as c:
        c.ask(Q, doctor=False)
    with pytest.raises(DatasetError, match="library is empty"):
        load(f"cases:{tmp_path / 'kb'}")


def test_a_tenant_sees_only_its_own_cases(tmp_path):
    with _open(tmp_path, [WRONG] * 10) as c:
        mine = c.answer(Question(Q, doctor=False, enforced={"tenant": "acme"})).answer.trace_id
        theirs = c.answer(Question(Q, doctor=False, enforced={"tenant": "globex"})).answer.trace_id
        case = c.feedback(mine, -1, enforced={"tenant": "acme"})["case"]
        c.feedback(theirs, -1, enforced={"tenant": "globex"})
        assert [x["id"] for x in c.cases.listed(enforced={"tenant": "acme"})] == [case]
        other = c.cases.listed(enforced={"tenant": "globex"})[0]["id"]
        with pytest.raises(NoCase):
            c.cases.show(other, {"tenant": "acme"})
        assert len(c.cases.listed()) == 2  # the admin sees both


def test_answers_the_doctor_could_not_repair_are_filed_when_asked(tmp_path):
    with _open(tmp_path, [WRONG] * 60, cases_from_doctor=True) as c:
        result = c.answer(Question(Q, doctor=True))  # the claim is unsupported and no vote makes it better
        assert [s.name for s in result.result.symptoms] == ["unsupported_claim"]
        assert not any(r.accepted for r in result.result.repairs)
        [found] = c.cases.listed(source="doctor")
        assert found["trace_id"] == result.trace.id and found["comment"].startswith("the doctor could not repair")
        [placed] = c.cases.diagnose()["cases"]  # no expected answer: the doctor's symptom places it
        assert (placed["layer"], placed["by"]) == ("generate", "doctor")
    with _open(tmp_path, [WRONG] * 60) as c:  # off by default
        c.answer(Question(Q + " ", doctor=True))
        assert len(c.cases.listed(source="doctor")) == 1


def test_the_export_is_json_lines_the_jsonl_loader_reads(tmp_path):
    with _open(tmp_path, [WRONG] * 10) as c:
        c.feedback(c.ask(Q, doctor=False).trace_id, -1, "wrong", ["treasury bills"])
        rows = c.cases.export()
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [i.question for i in load(f"jsonl:{path}").data] == [Q]


def test_an_answer_that_should_have_been_a_refusal(tmp_path):
    """'The documents do not say this': the case expects a refusal; the debugger and eval read it so."""
    with _open(tmp_path, [WRONG] * 20) as c:
        t = c.ask("What is the penalty for late filing of bond coupons?", doctor=False)
        assert not t.refused
        case = c.feedback(t.trace_id, -1, "the documents do not say", expect_refusal=True)["case"]
        assert c.cases.show(case)["expect_refusal"] is True
        with pytest.raises(RagclinicError, match="not both"):
            c.cases.expect(case, ["x"], refusal=True)
        [found] = c.cases.diagnose()["cases"]
        assert found["by"] == "debugger" and found["answer_right"] is False and found["layer"] != "unlocalised"
        assert c.cases.export()[0]["expect_refusal"] is True
    [item] = load(f"cases:{tmp_path / 'kb'}").data
    assert item.expect_refusal and item.answers == ()


def test_an_id_beyond_sqlites_integers_is_no_case(tmp_path):
    with _open(tmp_path, [WRONG]) as c:
        for bad in (0, -1, 2 ** 63, 2 ** 70):
            with pytest.raises(NoCase):
                c.cases.show(bad)


def test_diagnose_apply_tries_each_fix_against_the_other_cases(tmp_path):
    with _open(tmp_path, [WRONG] * 200) as c:
        c.feedback(c.ask(Q, doctor=False).trace_id, -1, "wrong", ["treasury bills"])
        c.feedback(c.ask("How are bond prices and yields related?", doctor=False).trace_id, -1, "no", ["inversely"])
        done = c.cases.diagnose(apply=True)
        placed = [x for x in done["cases"] if x["fixes"]]
        assert placed, done  # the debugger proposes a fix for a wrong generation
        for x in placed:
            assert x["applied"]["verdict"] in ("fixed", "fixed_with_side_effects", "not_fixed", "no_fix")
        assert all(f["applied"] for f in done["fixes"]) and {f["layer"] for f in done["fixes"]} <= {
            x["layer"] for x in placed}


def test_a_tenant_reads_an_applied_fix_without_what_the_admins_reruns_read(tmp_path):
    """The admin's --apply re-asks every other case over the whole knowledge base: those questions and answers (and
    the fix's own answer) may be another tenant's, so the tenant's case keeps the verdict and the counts only."""
    with _open(tmp_path, [WRONG] * 200) as c:
        mine = c.answer(Question(Q, doctor=False, enforced={"tenant": "acme"})).answer.trace_id
        theirs = c.answer(Question("How are bond prices and yields related?", doctor=False,
                                   enforced={"tenant": "globex"})).answer.trace_id
        case = c.feedback(mine, -1, "wrong", ["treasury bills"], enforced={"tenant": "acme"})["case"]
        c.feedback(theirs, -1, "no", ["inversely"], enforced={"tenant": "globex"})
        fix = {"what": "answer prompt 1", "settings": {"answer_prompt": 1}}
        records.set_diagnosis(c.cases.db, case, {  # as `cases diagnose --apply` stores it
            "layer": "generate", "by": "debugger", "why": "generator ignored passage [1]", "answer_right": False,
            "fixes": [fix], "applied": {"verdict": "fixed", "attempts": [
                {"fix": fix, "answer": "Long-dated gilts [1].", "right": True, "trace_id": "t-1", "seconds": 1.0}],
                "side_effects": {"asked": 1, "changed": 1, "better": 0, "worse": 0, "to_refusal": 0,
                                 "source": "eval set", "rows": [{"question": "How are bond prices and yields related?",
                                                                 "change": "changed", "before": "x", "after": "y"}]}}},
            0.0)
        applied = c.cases.show(case)["diagnosis"]["applied"]  # the admin's view: everything
        assert applied["attempts"][0]["answer"] and applied["side_effects"]["rows"]
        for seen in (c.cases.show(case, {"tenant": "acme"}), c.cases.listed(enforced={"tenant": "acme"})[0]):
            text = json.dumps(seen)
            assert "bond prices and yields" not in text and "Long-dated" not in text and "t-1" not in text
            assert seen["diagnosis"]["applied"]["side_effects"]["asked"] == 1
            assert [a["fix"] for a in seen["diagnosis"]["applied"]["attempts"]] == [a["fix"] for a in applied["attempts"]]
