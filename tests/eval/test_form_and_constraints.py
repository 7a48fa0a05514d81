"""`eval rag`'s answer_form_violations and constraint_contradictions: per arm (the naive peer judged the same
way), in the JSON summary and the report; constraint-swap items in the RGB format."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragclinic.cli.main import app
from ragclinic.eval.datasets import load
from ragclinic.eval.report import write_rag_report
from ragclinic.eval.tasks.naive import naive_arm
from ragclinic.eval.tasks.rag import EXAMPLES, arm_metrics, cases
from ragclinic.models.fake_llm import ScriptedLanguageModel

PASSAGE = "The 2021 NBA draft was held on July 29, 2021, at the Barclays Center in Brooklyn."
OTHER = "The 2020 NBA draft was held virtually on November 18, 2020, because of the pandemic."


def arm(answer: str, refused: bool = False, fake: bool = False, form=None) -> dict:
    row = {"answer": answer, "refused": refused, "correct": not refused, "fake": fake, "conflict_stated": False,
           "claims": 0, "unsupported": 0, "cited": 0, "cited_ok": 0, "ms": 1.0, "lm_calls": 1, "trace_id": ""}
    return row if form is None else {**row, "form": form}


def row(key: str, question: str, setting: str = "0", swap: str = "", **arms) -> dict:
    r = {"key": key, "id": key, "setting": setting, "question": question, "kb": "", "expected": [["July 29, 2021"]],
         "expect_refusal": bool(swap) or setting == "neg", "baseline": None, "doctor": None, **arms}
    return {**r, "swap": swap} if swap else r


def test_form_violations_are_counted_per_arm_with_a_few_examples():
    rows = [row(f"{i}|0", "When was the 2021 NBA draft?",
                baseline=arm("July 29, 2021 [1].", form=[]),
                naive=arm(f"As stated in Document {i}, July 29, 2021.", form=["source_talk: Document"]))
            for i in range(EXAMPLES + 2)]
    rows.append(row("old|0", "When was the 2021 NBA draft?", baseline=arm("This is stated in Passage [1].")))
    base, peer = arm_metrics(rows, "baseline")["answer_form_violations"], arm_metrics(rows, "naive")[
        "answer_form_violations"]
    assert (peer["count"], peer["of"], peer["rate"]) == (EXAMPLES + 2, EXAMPLES + 2, 1.0)
    assert len(peer["examples"]) == EXAMPLES and peer["examples"][0]["violations"] == ["source_talk: Document"]
    # a row written before the check (no "form") is checked from its text
    assert (base["count"], base["of"]) == (1, EXAMPLES + 3) and base["examples"][0]["key"] == "old|0"
    assert "constraint_contradictions" not in arm_metrics(rows, "baseline")  # no swapped item in the set


def test_a_swapped_question_answered_with_the_original_value_contradicts_its_constraint():
    q = "When was the 2019 NBA draft held?"
    rows = [row("s1|0", q, swap="year: 2021 → 2019", baseline=arm("July 29, 2021 [1].", fake=True),
                naive=arm("insufficient information", refused=True)),
            row("s2|0", q, swap="year: 2021 → 2019", baseline=arm("I can't answer this.", refused=True),
                naive=arm("July 29, 2021", fake=True)),
            row("s1|neg", q, "neg", swap="year: 2021 → 2019", baseline=arm("July 29, 2021 [1].", fake=True)),
            row("t1|0", "When was the 2021 NBA draft held?", baseline=arm("July 29, 2021 [1]."))]
    c = arm_metrics(rows, "baseline")["constraint_contradictions"]
    assert (c["count"], c["of"], c["rate"], c["refused"]) == (1, 2, 0.5, 0.5)  # the negative-only case is left out
    assert c["examples"] == [{"key": "s1|0", "swap": "year: 2021 → 2019", "question": q,
                              "answer": "July 29, 2021 [1]."}]
    peer = arm_metrics(rows, "naive")["constraint_contradictions"]
    assert (peer["count"], peer["of"]) == (1, 2) and peer["examples"][0]["key"] == "s2|0"
    # the unswapped twin is an answerable item: refusing it is over-refusal
    assert arm_metrics(rows, "baseline")["over_refusal"] == 0.0


def test_the_report_shows_the_counts_and_the_examples(tmp_path):
    rows = [row("s1|0", "When was the 2019 NBA draft held?", swap="year: 2021 → 2019",
                baseline=arm("July 29, 2021, as stated in Passage [1].", fake=True,
                             form=["source_talk: Passage"]))]
    result = {"task": "rag", "n": 1, "mode": "baseline", "metrics": {"baseline": arm_metrics(rows, "baseline")}}
    md = write_rag_report(tmp_path, result, rows).read_text(encoding="utf-8")
    assert "| answer_form_violations | 1 / 1 (1.0000) |" in md
    assert "| constraint_contradictions | 1 / 1 (1.0000) |" in md
    assert "## Answers that break the answer form" in md and "source_talk: Passage" in md
    assert "## Swapped constraints answered with the original value" in md and "year: 2021 → 2019" in md


def test_the_naive_peer_is_judged_the_same_way():
    lm = ScriptedLanguageModel(["According to Document 1, July 29, 2021 [1]."])
    got = naive_arm(lm, "When was the 2021 NBA draft held?", (PASSAGE,), (("July 29, 2021",),))
    assert got["correct"] and "dangling_citation: [1]" in got["form"]
    assert any(v.startswith("source_talk:") for v in got["form"])
    clean = naive_arm(ScriptedLanguageModel(["July 29, 2021."]), "When?", (PASSAGE,), (("July 29, 2021",),))
    assert clean["form"] == []


def swap_file(tmp_path):
    recs = [{"id": "en-7", "query": "When was the 2021 NBA draft held?", "answer": ["July 29, 2021"],
             "positive": [PASSAGE], "negative": [OTHER], "group": "g7", "split": "dev"},
            {"id": "en-7-swap", "query": "When was the 2019 NBA draft held?", "fakeanswer": ["July 29, 2021"],
             "swap": "year: 2021 → 2019", "positive": [PASSAGE], "negative": [OTHER], "group": "g7", "split": "dev"}]
    f = tmp_path / "swap.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return f


def test_swapped_items_load_in_the_rgb_format_and_expect_a_refusal_at_every_setting(tmp_path):
    twin, swapped = load(f"rgb:{swap_file(tmp_path)}").data
    assert not twin.expect_refusal and twin.swap == "" and twin.split == "dev"
    assert swapped.expect_refusal and swapped.swap == "year: 2021 → 2019" and swapped.answers == ()
    assert swapped.fake_answers == ("July 29, 2021",)
    got = {(c.item.id, c.setting): c.expect_refusal for c in cases([twin, swapped], ["0", "neg"], seed=0)}
    assert got == {("en-7", "0"): False, ("en-7", "neg"): True, ("en-7-swap", "0"): True, ("en-7-swap", "neg"): True}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query": "q?", "positive": ["p"], "swap": 3}) + "\n" + swap_file(tmp_path).read_text())
    loaded = load(f"rgb:{bad}")
    assert len(loaded.data) == 2 and "swap" in str(loaded.problems[0])
    no_answer = tmp_path / "no_answer.jsonl"
    no_answer.write_text(json.dumps({"query": "q?", "positive": ["p"]}) + "\n" + swap_file(tmp_path).read_text())
    assert "answer: missing" in str(load(f"rgb:{no_answer}").problems[0])  # only a swapped item may omit it


def test_cli_json_and_report_carry_both_metrics(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    r = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{swap_file(tmp_path)}", "--llm", "fake",
                                 "--arms", "naive", "--noise", "0", "--json", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    peer = json.loads(r.stdout)["metrics"]["naive"]
    assert peer["answer_form_violations"] == {"count": 0, "rate": 0.0, "of": 2, "examples": []}
    assert peer["constraint_contradictions"]["of"] == 1 and peer["constraint_contradictions"]["count"] == 0
    rows = [json.loads(x) for x in (tmp_path / "o" / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x.get("swap", "") for x in rows] == ["", "year: 2021 → 2019"] and {x["split"] for x in rows} == {"dev"}
    assert "| answer_form_violations | 0 / 2 (0.0000) |" in (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    table = CliRunner().invoke(app, ["eval", "rag", "--dataset", f"rgb:{swap_file(tmp_path)}", "--llm", "fake",
                                     "--arms", "naive", "--noise", "0"])
    assert table.exit_code == 0 and "0 / 2 (0.0000)" in table.output and "examples" not in table.output
