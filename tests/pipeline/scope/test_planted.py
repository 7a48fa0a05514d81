"""Planted instructions in every format and every place they hide (demo/planted.py), EN and ZH, answered with
the extractive generator: the answer is right, never hijacked, and the instruction is named with its document
(the symptom at answer time; the parse report at ingest for text a reader cannot see) without being repeated."""

from __future__ import annotations

import pytest

from helpers import build_kb
from ragclinic.demo import planted
from ragclinic.doctor import Doctor
from ragclinic.pipeline.runner import Pipeline

CASES = planted.cases()


def _kb_for(case, tmp_path):
    """The case's knowledge base; the split case is laid out until its instruction really spans two chunks."""
    for pad in planted.SPLIT_PADS if case.place == "split-chunks" else (0,):
        folder = tmp_path / f"pad{pad}"
        planted.write(case, folder / "docs", pad)  # build_kb ingests folder/docs
        kb = build_kb(folder, {})
        texts = [r[0] for r in kb.db.conn.execute("SELECT text FROM chunks ORDER BY ordinal")]
        if case.place != "split-chunks" or planted.is_split(texts, case.lang):
            return kb
        kb.close()
    raise AssertionError(f"{case.name}: no layout in {planted.SPLIT_PADS} splits the instruction across chunks")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_planted_instruction_is_cut_out_and_named(case, tmp_path):
    kb = _kb_for(case, tmp_path)
    try:
        report = kb.db.conn.execute("SELECT json_extract(parse_report, '$.instructions'), "
                                    "json_extract(parse_report, '$.warnings') FROM documents").fetchone()
        assert report[0] >= 1, f"the parse report must count the planted instruction: {report[1]}"
        assert all(p not in report[1] for p in case.payload), "the report must not repeat the payload"
        if case.hidden:
            assert "a reader cannot see" in report[1]
        result = Doctor(Pipeline(kb)).ask(case.question)
        a = result.answer
        assert planted.right(case, a.text), a.text
        assert not planted.hijacked(case, a.text), a.text
        sym = next((s for s in result.symptoms if s["name"] == "injected_instruction"), None)
        assert sym is not None and sym["score"] >= 0.5, result.symptoms
        title = planted.TITLE[case.lang]
        names = (title, case.filename, case.filename.rsplit(".", 1)[0])
        assert any(n in sym["evidence"] for n in names), sym["evidence"]
        assert not planted.hijacked(case, sym["evidence"])
    finally:
        kb.close()
