"""Dataset loaders on small fixture files the tests write, including malformed records."""

from __future__ import annotations

import json

import pytest

from ragclinic.errors import ConfigError
from ragclinic.eval.datasets import DatasetError, load


def _jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                    encoding="utf-8")
    return path


def test_beir_folder_with_a_bad_row_and_a_bad_line(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    _jsonl(root / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "alpha"}, {"_id": "d2", "text": "beta"},
                                   "{not json", {"title": "no id"}])
    _jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "unjudged"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\tx\n", encoding="utf-8")
    d = load(f"beir:{root}")
    assert d.kind == "retrieval"
    assert [doc.id for doc in d.data.corpus] == ["d1", "d2"] and d.data.corpus[0].title == "T"
    assert d.data.queries == {"q1": "alpha?"}  # only judged queries are evaluated
    assert d.data.qrels == {"q1": {"d1": 1}}
    where = {(p.path.split("/")[-1], p.line) for p in d.problems}
    assert where == {("corpus.jsonl", 3), ("corpus.jsonl", 4), ("test.tsv", 3)}


def test_beir_wrong_folder_names_the_layout(tmp_path):
    with pytest.raises(DatasetError, match="qrels/test.tsv"):
        load(f"beir:{tmp_path}")


def test_rgb_answer_conventions_and_malformed_records(tmp_path):
    f = _jsonl(tmp_path / "rgb.json", [
        {"id": 0, "query": "多少议席？", "answer": "70", "positive": ["70个议席"], "negative": ["无关"],
         "positive_wrong": ["170个议席"], "fakeanswer": "170"},
        {"id": 1, "query": "哪两天？", "answer": [["1月3日", "一月三日"], "1月12日"], "positive": [["a", "b"], ["c"]],
         "negative": []},
        {"id": 2, "query": "", "answer": "x", "positive": [], "negative": []},
        {"id": 3, "query": "q", "positive": [], "negative": []},
        {"id": 4, "query": "q", "answer": [{"bad": 1}], "positive": [], "negative": []},
        "[1, 2",
    ])
    d = load(f"rgb:{f}")
    a, b = d.data
    assert a.answers == (("70",),) and a.documents == ("70个议席",) and a.counterfactual == ("170个议席",)
    assert a.fake_answers == ("170",) and a.negatives == ("无关",)
    assert b.answers == (("1月3日", "一月三日"), ("1月12日",)) and b.documents == ("a", "b", "c")
    assert [(p.line, p.field) for p in d.problems] == [(3, "query"), (4, "answer"), (5, "answer"), (6, "(line)")]
    assert "rgb.json:3: query" in str(d.problems[0])


def test_halueval_gives_two_items_per_record(tmp_path):
    f = _jsonl(tmp_path / "h.json", [
        {"knowledge": "K", "question": "Q?", "right_answer": "A", "hallucinated_answer": "B"},
        {"knowledge": "K", "question": "Q?", "right_answer": "A"},
    ])
    d = load(f"halueval:{f}")
    assert [(i.answer, i.hallucinated) for i in d.data] == [("A", False), ("B", True)]
    assert [(p.line, p.field) for p in d.problems] == [(2, "hallucinated_answer")]


def test_squad_layout(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"data": [{"paragraphs": [{"context": "天空是蓝色的。", "qas": [
        {"id": "a", "question": "天空是什么颜色？", "answers": [{"text": "蓝色"}, {"text": "蓝色"}]},
        {"id": "b", "question": "", "answers": [{"text": "x"}]},
        {"id": "c", "question": "无答案？", "answers": []}]}]}]}, ensure_ascii=False), encoding="utf-8")
    d = load(f"squad:{f}")
    [item] = d.data
    assert item.answers == (("蓝色",),) and item.documents == ("天空是蓝色的。",)
    assert [(p.line, p.field) for p in d.problems] == [(2, "question"), (3, "answers")]
    f.write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match="'data' list"):
        load(f"squad:{f}")


def test_users_jsonl(tmp_path):
    f = _jsonl(tmp_path / "mine.jsonl", [
        {"question": "What proxies the risk-free rate?", "answers": ["treasury bills", "T-bills"]},
        {"question": "Boiling point of mercury?", "expect_refusal": True},
        {"question": "No answers given"},
        {"question": "q", "answers": ["a"], "expect_refusal": "yes"},
        {"question": "q", "answers": ["a"], "documents": [1, 2]},
    ])
    d = load(f"jsonl:{f}")
    a, b = d.data
    assert a.answers == (("treasury bills", "T-bills"),) and not a.expect_refusal
    assert b.expect_refusal and b.answers == ()
    assert [(p.line, p.field) for p in d.problems] == [(3, "answers"), (4, "expect_refusal"), (5, "documents")]


def test_bad_specs_and_files(tmp_path):
    with pytest.raises(DatasetError, match="FORMAT:PATH"):
        load("rgb")
    with pytest.raises(ConfigError, match="valid names: beir, cases, halueval, jsonl, rgb, squad"):
        load(f"csv:{tmp_path}")
    with pytest.raises(DatasetError, match="no such file"):
        load(f"rgb:{tmp_path / 'missing.json'}")
    f = _jsonl(tmp_path / "junk.jsonl", ["{bad", {"question": 3}])
    with pytest.raises(DatasetError, match="no usable record"):
        load(f"jsonl:{f}")
