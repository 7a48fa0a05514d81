"""bench/make_constraint_swap.py (constraint-swap sets, dev / heldout halves) and bench/answer_form.py (the form
check over saved `ask --json` outputs)."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


swap = _bench("make_constraint_swap")


def test_a_year_is_swapped_for_one_no_passage_states():
    rng = random.Random(0)
    passages = ["The 2021 NBA draft was held on July 29, 2021.", "The 2020 draft was held in November 2020."]
    s = swap.year_swap("When was the 2021 NBA draft held?", passages[:1], " ".join(passages), rng)
    assert s.kind == "year" and s.old == "2021" and s.new not in ("2020", "2021")
    assert s.question == f"When was the {s.new} NBA draft held?"
    # a year the passages do not state is not a constraint they answer: no swap
    assert swap.year_swap("Who won in 1999?", passages[:1], passages[0], rng) is None


def test_ordinals_keep_their_style_and_first_is_not_swapped():
    rng = random.Random(1)
    p = ["Dirt is the second studio album; Hate to Feel is the tenth track."]
    s = swap.ordinal_swap("Hate to Feel is the tenth track on what album?", p, p[0], rng)
    assert s.kind == "ordinal" and s.old == "tenth" and s.new in swap._EN_ORD and s.new != "second"
    assert swap.ordinal_swap("Which band was founded first?", ["It was founded first."], "x", rng) is None
    assert swap._ordinal_text("7th", 7, 9) == "9th" and swap._ordinal_text("2nd", 2, 3) == "3rd"
    assert swap._ordinal_text("第六届", 6, 8) == "第八届" and swap._ordinal_text("第6届", 6, 12) == "第12届"
    assert swap._ordinal_text("Seventh", 7, 5) == "Fifth"


def test_a_number_is_swapped_only_where_the_passage_states_it():
    rng = random.Random(2)
    p = ["若游戏中离，则4分钟内不得进行配对。"]
    s = swap.number_swap("游戏中离后4分钟内能否配对？", p, p[0], rng)
    assert s.kind == "number" and s.old == "4" and re.fullmatch(r"游戏中离后\d+分钟内能否配对？", s.question)
    assert s.new != "4" and s.new not in p[0]
    assert swap.number_swap("第70号是谁？", p, p[0], rng) is None


def test_an_entity_is_typed_by_the_sentence_its_passage_opens_with():
    ps = ["Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia."]
    assert swap.en_type("Arthur's Magazine", ps) == "periodical"
    assert swap.en_type("Philadelphia", ps) == ""  # named, but no sentence is about it
    assert swap.en_entities("Which magazine was started first Arthur's Magazine or First for Women?") == [
        "Arthur's Magazine", "First for Women"]
    assert swap.zh_type("松平康忠（1546年－1618年9月28日）是日本战国时代至安土桃山时代的武将。") == "person"


def test_halves_are_a_seeded_hash_of_the_group_and_twins_share_one(tmp_path):
    assert swap.split_of("q1", 0) == swap.split_of("q1", 0)
    halves = [swap.split_of(f"question {i}", 0) for i in range(400)]
    assert 150 < halves.count("dev") < 250  # about half
    assert [swap.split_of(f"question {i}", 1) for i in range(400)] != halves  # the seed matters
    s = swap.Swap("year", "2021", "2019", "When was the 2019 draft?")
    twin, swapped = swap.pair("en-1", "When was the 2021 draft?", ["July 29, 2021"], {"positive": ["p"],
                              "negative": ["n"]}, s, "When was the 2021 draft?", 0)
    assert twin["split"] == swapped["split"] and twin["twin"] == "en-1-swap" and swapped["twin"] == "en-1"
    assert swapped["fakeanswer"] == ["July 29, 2021"] and "answer" not in swapped
    assert swapped["swap"] == "year: 2021 → 2019" and twin["answer"] == [["July 29, 2021"]]
    f = tmp_path / "set.jsonl"
    f.write_text(json.dumps({"query": "When was the 2021 draft?", "answer": "x"}) + "\n")
    assert sum(swap.split_file(f, 0).values()) == 1
    assert (tmp_path / f"set-{twin['split']}.jsonl").read_text().strip()  # the same question: the same half


@pytest.mark.skipif(not (DATA / "halueval").is_dir() or not (DATA / "cmrc2018").is_dir(),
                    reason="needs the licensed data in ../shared/data")
def test_the_sets_from_the_licensed_data_are_reproducible_and_sound(tmp_path):
    from ragclinic.eval.datasets.rgb import load_rgb

    en = swap.english(DATA / "halueval" / "qa_one-turn_data.json", 30, seed=0)
    zh = swap.chinese(DATA / "cmrc2018" / "cmrc2018_trial.json", 30, seed=0)
    assert swap.chinese(DATA / "cmrc2018" / "cmrc2018_trial.json", 30, seed=0) == zh
    for rows in (en, zh):
        assert len(rows) == 60
        by_id = {r["id"]: r for r in rows}
        for r in (r for r in rows if r.get("swap")):
            twin = by_id[r["twin"]]
            assert twin["split"] == r["split"] and twin["positive"] == r["positive"] and twin["query"] != r["query"]
            kind, change = r["swap"].split(": ", 1)
            new = change.split(" → ")[1].strip("《》")
            assert new.lower() not in " ".join(r["positive"] + r["negative"]).lower() or kind != "entity"
            assert any(a.lower() in " ".join(r["positive"]).lower() for a in r["fakeanswer"])
        kinds = {r["swap"].split(":")[0] for r in rows if r.get("swap")}
        assert "year" in kinds and "entity" in kinds
        assert swap.write_halves(rows, tmp_path / "set.jsonl") == {h: sum(r["split"] == h for r in rows)
                                                                   for h in ("dev", "heldout")}
        loaded = load_rgb(tmp_path / "set-dev.jsonl")
        assert not loaded.problems and all(it.expect_refusal == bool(it.swap) for it in loaded.data)


def test_the_form_check_over_saved_ask_outputs(tmp_path):
    f = tmp_path / "ask.jsonl"
    clean = {"answer": "Sundar Pichai [2].", "refused": False, "citations": [{"n": 2}]}
    bad = {"answer": "This is stated in Passage [1].", "refused": False, "citations": [{"n": 1}]}
    f.write_text(json.dumps(clean) + "\n" + json.dumps(bad, indent=2) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "answer_form.py"), str(f), "--json"],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert (got["count"], got["of"], got["by_kind"]) == (1, 2, {"source_talk": 1})
    assert got["examples"][0]["violations"] == ["source_talk: Passage"]
    text = subprocess.run([sys.executable, str(ROOT / "bench" / "answer_form.py"), str(f)],
                          capture_output=True, text=True, check=True).stdout
    assert text.startswith("answer_form_violations: 1 / 2 (0.500)")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json", encoding="utf-8")
    failed = subprocess.run([sys.executable, str(ROOT / "bench" / "answer_form.py"), str(broken)],
                            capture_output=True, text=True)
    assert failed.returncode != 0 and "not JSON" in failed.stderr
