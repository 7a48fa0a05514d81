"""The semantic answer cache: near-identical questions hit, another year or another knowledge base version
never does, and the CLI marks a cached answer and never serves a stale one."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.store.answer_cache import AnswerCache, CacheKey, normalise, same_constraints

runner = CliRunner()


def _vec(*xs):
    v = np.array(xs, np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture()
def cache(tmp_path):
    c = AnswerCache(tmp_path, threshold=0.97)
    yield c
    c.close()


def _key(version=1, scope=None, language="en", doctor=True, **settings):
    return CacheKey.of(version, scope, language, Settings.load(None, **settings), doctor)


def test_normalised_text_and_constraints():
    assert normalise("  What is  the Coupon？ ") == normalise("what is the coupon?") == "what is the coupon"
    assert normalise("２０３１年的票息是多少？") == normalise("2031年的票息是多少")
    assert not same_constraints("Who won the 2021 final?", "Who won the 2022 final?")
    assert not same_constraints("Who won the final?", "When was the final?")
    assert same_constraints("Who won the 2021 final?", "who won the final in 2021")


def test_hits_are_the_same_question_or_a_near_identical_one(cache):
    k = _key()
    cache.store(k, "Who won the 2021 final?", _vec(1, 0, 0), {"answer": "A [1].", "trace_id": "t1"})
    assert cache.lookup(k, "who won the 2021 final", None) == ({"answer": "A [1].", "trace_id": "t1"}, 1.0)
    near = cache.lookup(k, "Who won the final in 2021?", _vec(1, 0.05, 0))
    assert near is not None and near[0]["trace_id"] == "t1" and 0.97 <= near[1] < 1.0
    assert cache.lookup(k, "Who won the 2022 final?", _vec(1, 0.01, 0)) is None  # another year
    assert cache.lookup(k, "Who lost the 2021 final?", _vec(1, 0.5, 0)) is None  # below the threshold


def test_another_version_scope_language_or_setting_never_hits(cache):
    k = _key()
    cache.store(k, "What is the coupon?", _vec(0, 1, 0), {"answer": "4.5% [1]."})
    for other in (_key(version=2), _key(scope={"tenant": "b"}), _key(language="zh"), _key(doctor=False),
                  _key(llm="local-small"), _key(top_k=3)):
        assert cache.lookup(other, "What is the coupon?", _vec(0, 1, 0)) is None
    assert cache.lookup(_key(llm_threads=1), "What is the coupon?", None) is not None  # speed knobs do not count
    # nor the server's request bounds and browser side: `serve --allowed-host` shares the CLI's answers
    for server_side in (_key(allowed_hosts=["127.0.0.1", "rag.example.com"]), _key(max_scope_value_chars=64),
                        _key(login_failures_max=3), _key(max_upload_files=5)):
        assert cache.lookup(server_side, "What is the coupon?", None) is not None
    cache.store(_key(version=2), "Another?", None, {"answer": "x"})
    assert cache.lookup(k, "What is the coupon?", None) is None  # older versions are deleted


def _ask(kb_dir, *args):
    r = runner.invoke(app, ["ask", *args, "--kb", kb_dir, "--llm", "none", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_the_cli_answers_a_repeat_from_the_cache_and_never_a_stale_answer(tmp_path):
    from ragclinic.ingest.runner import ingest
    from ragclinic.store.kb import KnowledgeBase

    kb = build_kb(tmp_path, BOND_DOCS)
    kb.close()
    kb_dir = str(tmp_path / "kb")
    q = "What is the usual proxy for the risk-free rate?"
    first = _ask(kb_dir, q)
    assert first["cached"] is False and "treasury bills" in first["answer"]
    again = _ask(kb_dir, q.lower() + "  ")
    assert again["cached"] is True and again["trace_id"] == first["trace_id"]
    assert again["answer"] == first["answer"] and again["cache"]["question"] == q
    assert _ask(kb_dir, q, "--no-cache")["cached"] is False
    # the document changes: the next answer comes from the new text, not the cache
    (tmp_path / "docs" / "bonds.md").write_text(
        "# Bonds\n\nThe risk-free rate is the return on an investment with no default risk. "
        "Overnight repo rates are the usual proxy for the risk-free rate.\n", encoding="utf-8")
    kb = KnowledgeBase.open(Settings.load(tmp_path / "kb"))
    kb.lock()
    ingest(kb, [tmp_path / "docs"])
    kb.close()
    fresh = _ask(kb_dir, q)
    assert fresh["cached"] is False and "repo" in fresh["answer"] and fresh["trace_id"] != first["trace_id"]
    assert _ask(kb_dir, q)["cached"] is True
