"""Limits as settings (issue 19): each one refuses with an error that names the setting and how to change it, and
nothing already stored is lost. File size and decompressed size: tests/ingest/test_ingest.py; tool calls:
tests/pipeline/reason/test_tools_path.py."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.demo.writers import PdfPage, write_pdf
from ragclinic.errors import LimitExceeded
from ragclinic.ingest.runner import ingest
from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.pipeline.runner import Pipeline


def _reasons(result) -> dict[str, str]:
    return {f["path"].rsplit("/", 1)[-1]: f["reason"] for f in result.failed}


def test_max_pages(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        docs = tmp_path / "more"
        docs.mkdir()
        write_pdf(docs / "long.pdf", title="Long", pages=[PdfPage(heading=f"Page {i}", columns=[["Text."]])
                                                          for i in range(4)])
        kb.settings = kb.settings.model_copy(update={"max_pages": 3})
        before = kb.stats()["documents"]
        kb.lock()
        r = ingest(kb, [docs])
        kb.unlock()
        reason = _reasons(r)["long.pdf"]
        assert "4 pages" in reason and "max_pages=3" in reason
        assert kb.stats()["documents"] == before
    finally:
        kb.close()


def test_max_chunks_per_document_refuses_the_document_and_keeps_the_old_version(tmp_path):
    kb = build_kb(tmp_path, {"notes.md": "# Notes\n\nA short note about bonds.\n"})
    try:
        old = [r[0] for r in kb.db.conn.execute("SELECT text FROM chunks")]
        long = "# Notes\n\n" + "\n\n".join(f"## Part {i}\n\n" + "Bond prices move. " * 200 for i in range(6))
        (tmp_path / "docs" / "notes.md").write_text(long, encoding="utf-8")
        kb.settings = kb.settings.model_copy(update={"max_chunks_per_document": 3})
        kb.lock()
        r = ingest(kb, [tmp_path / "docs"])
        kb.unlock()
        reason = _reasons(r)["notes.md"]
        assert "max_chunks_per_document=3" in reason
        assert [r[0] for r in kb.db.conn.execute("SELECT text FROM chunks")] == old  # nothing stored was lost
    finally:
        kb.close()


def test_max_chunks_per_document_refuses_one_record_of_a_jsonl_file(tmp_path):
    docs = {"records.jsonl": "\n".join(json.dumps(r) for r in (
        {"id": "a", "text": "Short record about bonds."},
        {"id": "b", "text": "\n\n".join("Bond prices move when rates change. " * 60 for _ in range(8))}))}
    root = tmp_path / "docs"
    root.mkdir()
    (root / "records.jsonl").write_text(docs["records.jsonl"], encoding="utf-8")
    from ragclinic.store.kb import KnowledgeBase

    settings = Settings.load(tmp_path / "kb", cache_dir=tmp_path / "cache", embedder="fake", llm="none",
                             max_chunks_per_document=2)
    kb = KnowledgeBase.open(settings, create=True)
    try:
        kb.lock()
        r = ingest(kb, [root])
        kb.unlock()
        assert any("record b" in f["reason"] and "max_chunks_per_document=2" in f["reason"] for f in r.failed)
        assert kb.stats()["documents"] == 1  # record a is kept
    finally:
        kb.close()


def test_max_question_chars(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        pipe = Pipeline(kb, settings=kb.settings.model_copy(update={"max_question_chars": 40}))
        with pytest.raises(LimitExceeded, match="max_question_chars=40"):
            pipe.ask("What is the risk-free rate, and how is it usually approximated in practice?")
        state, _ = pipe.ask("What is the risk-free rate?")
        assert state.answer is not None
        r = CliRunner().invoke(app, ["ask", "x" * 5000, "--kb", str(tmp_path / "kb"), "--llm", "none", "--json"])
        assert r.exit_code != 0 and "max_question_chars=4000" in r.output
    finally:
        kb.close()


def test_max_model_seconds_answers_the_rest_without_the_model(tmp_path):
    kb = build_kb(tmp_path, BOND_DOCS)
    try:
        class SlowJudge(PacedLanguageModel):
            def next_token_probs(self, messages, candidates):
                time.sleep(0.1)
                return super().next_token_probs(messages, candidates)

        slow = SlowJudge(["The risk-free rate is the return on an investment with no default risk [1]."], yes_prob=0.9)
        # the gate's judge call runs and spends the time; the generator's call is then refused
        pipe = Pipeline(kb, lm=slow, settings=kb.settings.model_copy(update={"max_model_seconds": 0.05}))
        state, trace = pipe.ask("What is the risk-free rate?")
        a = state.answer
        assert any(f.startswith("llm_time_limit: ") and "max_model_seconds" in f for f in a.flags), a.flags
        assert a.route in ("answer", "refuse") and a.generator
        assert any(s.status == "error" and "max_model_seconds" in (s.error or "") for s in trace.spans)
    finally:
        kb.close()


def test_passages_per_prompt_is_bounded_and_named():
    with pytest.raises(Exception, match="context_k"):
        Settings(context_k=500)
