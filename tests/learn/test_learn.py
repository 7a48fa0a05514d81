"""``kb learn`` (issue 53): the model's questions and keywords for each chunk, filtered by the chunk's own rank,
stored once per chunk (resumable after kill -9, incremental), and used by retrieval — a user's words the documents
never use find the chunk through the questions learned for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragclinic import Clinic
from ragclinic.errors import ConfigError, KnowledgeBaseLocked
from ragclinic.learn import questions as ask
from ragclinic.learn.run import one_run
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.store import learned as store

DOCS = {
    "bonds.md": "# Bonds\n\nShort-dated treasury bills are the usual proxy for the risk-free rate of return.\n",
    "duration.md": "# Duration\n\nDuration measures how much a bond price moves when interest rates change by one "
                   "percentage point.\n",
    "vacuum.md": "# Vacuum\n\nA plain VACUUM marks dead rows as reusable space; it does not give the space back to "
                 "the operating system. Only VACUUM FULL rewrites the table and shrinks the file.\n",
}
# what the fake model writes for each chunk (by a word of it): users' words the chunk does not use
LEARNED = {
    "treasury": {"questions": ["What do analysts treat as a safe baseline yield?",
                               "Which government paper stands in for a no-risk return?",
                               "How does a bond price react when interest rates change?"],  # another chunk's
                 "keywords": ["safe yield", "T-bills"]},
    "Duration": {"questions": ["How sensitive is my bond to a one point jump in rates?"], "keywords": ["rate risk"]},
    "VACUUM": {"questions": ["Why doesn't my table file get smaller after cleanup?"], "keywords": ["disk space"]},
}


def _reply(messages) -> str:
    text = messages[-1].content
    return json.dumps(next(v for k, v in LEARNED.items() if k in text))


def _clinic(tmp_path: Path, docs=DOCS, **settings) -> Clinic:
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    model = ScriptedLanguageModel([_reply])
    c = Clinic.open(tmp_path / "kb", model=model, embedder="fake", cache_dir=tmp_path / "cache", **settings)
    c.ingest(root)
    return c


def test_the_reply_is_read_strictly_and_a_cut_off_reply_keeps_its_whole_questions():
    qs, kws = ask.parse('{"questions": ["Why is my disk full?", "why is my DISK full", "", "Hi"], '
                        '"keywords": ["disk", "a", "space"]}', 3)
    assert qs == ["Why is my disk full?"] and kws == ["disk", "space"]
    qs, _ = ask.parse('{"questions": ["How do I restore a dump?", "What does pg_restore nee', 3)
    assert qs == ["How do I restore a dump?"]
    assert ask.parse("not json at all", 3) == ([], [])
    zh = ask.messages("备份数据库的命令是 pg_dump。", "zh", 3)
    assert "中文" in zh[0].content and "3 different questions" in zh[0].content


def test_learn_keeps_questions_whose_chunk_ranks_high_and_retrieval_uses_them(tmp_path):
    with _clinic(tmp_path, learn_keep_rank=1, learned_retrieval=True) as c:
        res = c.learn()
        assert res.learned == 3 and res.remaining == 0 and res.stopped == "done"
        assert res.questions == 5 and res.keywords == 4
        s = store.stats(c.kb.db.conn)
        assert s["learned"] == 3 and s["questions"] == 5
        rows = c.kb.db.conn.execute("SELECT text, kept, rank FROM learned_items WHERE kind = 'question'").fetchall()
        kept = {t: (bool(k), r) for t, k, r in rows}
        # the bond-price question was written for the treasury chunk: the duration chunk ranks first for it
        assert kept["How does a bond price react when interest rates change?"] == (False, None)
        assert res.kept == 4
        hits, _ = c.search(_q("which government paper stands in for a no-risk return"))
        assert "treasury bills" in hits[0].chunk.text
        assert "question_terms" in {s.retriever for s in hits[0].sources}
        assert "questions" in {s.retriever for s in hits[0].sources}  # the fake embedder's vectors too


def _q(text: str):
    from ragclinic.clinic.question import Question

    return Question(text)


def test_without_learning_or_with_learned_retrieval_off_no_learned_ranker_runs(tmp_path):
    with _clinic(tmp_path) as c:
        hits, _ = c.search(_q("which government paper stands in for a no-risk return"))
        assert all(s.retriever in ("lexical", "dense") for h in hits for s in h.sources)
    with Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel([_reply])) as c:  # off by default
        c.learn()
        hits, _ = c.search(_q("which government paper stands in for a no-risk return"))
        assert all(s.retriever in ("lexical", "dense") for h in hits for s in h.sources)


def test_learning_is_resumable_and_incremental(tmp_path):
    with _clinic(tmp_path) as c:
        first = c.learn(max_chunks=1)
        assert first.learned == 1 and first.remaining == 2 and first.stopped == "max_chunks"
        second = c.learn()
        assert second.learned == 2 and second.remaining == 0
        assert len([k for k, _ in c.lm.calls if k == "chat"]) == 3  # nothing written twice
        assert c.learn().learned == 0
    (tmp_path / "docs" / "vacuum.md").write_text("# Vacuum\n\nVACUUM FULL rewrites the whole table into a new file "
                                                 "and gives the freed space back.\n", encoding="utf-8")
    with Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel([_reply])) as c:
        c.ingest(tmp_path / "docs")
        res = c.learn()
        assert res.dropped == 1 and res.learned == 1  # only the changed chunk
        assert store.stats(c.kb.db.conn)["learned"] == 3


def test_one_run_at_a_time_and_a_clear_error_without_a_model(tmp_path):
    with _clinic(tmp_path) as c:
        with one_run(c.kb.folder):
            with pytest.raises(KnowledgeBaseLocked, match="another `kb learn` is running"):
                c.learn()
    with Clinic.open(tmp_path / "kb", model=None) as c:
        with pytest.raises(ConfigError, match="kb learn needs a language model"):
            c.learn()


_KILLED_RUN = """
import json, sys, time
from pathlib import Path
from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel
log = Path(sys.argv[2])
def reply(messages):
    with log.open("a") as f:
        f.write("call\\n")
    time.sleep(float(sys.argv[3]))
    return json.dumps({"questions": ["What is this passage about, really?"], "keywords": ["topic"]})
with Clinic.open(sys.argv[1], model=ScriptedLanguageModel([reply])) as c:
    print(json.dumps(c.learn().to_json()))
"""


def test_kill_9_during_learn_then_a_rerun_completes_with_nothing_generated_twice_or_lost(tmp_path):
    with _clinic(tmp_path):
        pass
    log = tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(tmp_path / "kb"), str(log), "0.4"], env=env,
                         stdout=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # killed once the first chunk is stored and the second is being written
        with Clinic.open(tmp_path / "kb", model=None) as c:
            if store.stats(c.kb.db.conn)["learned"] >= 1 and log.exists() and log.read_text().count("call") >= 2:
                break
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with Clinic.open(tmp_path / "kb", model=None) as c:
        before = store.stats(c.kb.db.conn)["learned"]
    assert 1 <= before < 3
    done = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(tmp_path / "kb"), str(log), "0"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["learned"] == 3 - before
    with Clinic.open(tmp_path / "kb", model=None) as c:
        s = store.stats(c.kb.db.conn)
        per_chunk = c.kb.db.conn.execute("SELECT chunk_id, COUNT(*) FROM learned_items WHERE kind = 'question' "
                                         "GROUP BY chunk_id").fetchall()
    assert s["learned"] == 3 and all(n == 1 for _, n in per_chunk) and len(per_chunk) == 3
    # the chunk being written when killed is the only one asked twice
    assert log.read_text().count("call") <= 3 + 1


def test_cli_kb_learn_json_reports_the_run_and_its_progress(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ragclinic.cli.main import app

    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    with _clinic(tmp_path):
        pass
    r = CliRunner().invoke(app, ["kb", "learn", "--kb", str(tmp_path / "kb"), "--llm", "fake", "--max-chunks", "2",
                                 "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["learned"] == 2 and data["remaining"] == 1 and data["stopped"] == "max_chunks"
    assert data["kb"]["learned"] == 2 and data["kb"]["chunks"] == 3
    assert [json.loads(x) for x in r.stderr.splitlines() if x.startswith("{")][-1] == {"done": 2, "total": 2}
    s = CliRunner().invoke(app, ["kb", "learn", "--kb", str(tmp_path / "kb"), "--stats", "--json"])
    assert s.exit_code == 0 and json.loads(s.stdout)["learned"] == 2
    bad = CliRunner().invoke(app, ["kb", "learn", "--kb", str(tmp_path / "kb"), "--llm", "none"])
    assert bad.exit_code != 0 and "kb learn needs a language model" in bad.output


def test_ingest_with_learn_after_ingest_starts_learning_in_the_background(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ragclinic.cli.main import app

    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGCLINIC_LEARN_AFTER_INGEST", "true")
    monkeypatch.setenv("RAGCLINIC_LLM", "fake")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bonds.md").write_text(DOCS["bonds.md"], encoding="utf-8")
    r = CliRunner().invoke(app, ["ingest", str(docs), "--kb", str(tmp_path / "kb"), "--embedder", "fake", "--json"])
    assert r.exit_code == 0, r.output
    learning = json.loads(r.stdout)["learning"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with Clinic.open(tmp_path / "kb", model=None) as c:
            if store.stats(c.kb.db.conn)["learned"] == 1:
                break
        time.sleep(0.2)
    else:
        raise AssertionError(Path(learning["log"]).read_text())
    os.waitpid(learning["pid"], 0)  # started by this process (the CLI ran in it): its result is in the log
    assert json.loads(Path(learning["log"]).read_text().strip().splitlines()[-1])["learned"] == 1


def test_a_question_that_pastes_the_passage_is_not_a_question():
    chunk = ("使用 root 帐户是一个快速的方法，但正确的解决方法应该是对文件权限和用户组的成员进行合适的设置。")
    assert ask.copied("使用 root 帐户是一个快速的方法，但正确的解决方法应该是对文件权限进行设置", chunk)
    assert not ask.copied("普通用户打不开光驱怎么办？", chunk)
    assert not ask.copied("How do I let a normal user read the CD drive?", chunk)
    long = "x" * 161
    assert ask.parse(json.dumps({"questions": [long, "Why can't my user open the CD drive?"], "keywords": []}), 3)[0] \
        == ["Why can't my user open the CD drive?"]


def test_the_canary_set_is_stable_and_kb_health_alerts_when_its_retrieval_drops(tmp_path):
    from ragclinic.learn.canary import canary_set, retrieval_reading

    class Broken:  # a retrieval that finds nothing: what a bad setting or a bad ingest does to the canaries
        def retrieve(self, query, k, allowed=None):
            return []

    with _clinic(tmp_path) as c:
        c.learn()
        first = canary_set(c.kb.db.conn)
        assert len(first) == 3 and {x.chunk_id for x in first} == {r[0] for r in c.kb.db.conn.execute(
            "SELECT chunk_id FROM chunks")}  # one per chunk, all three documents
        assert canary_set(c.kb.db.conn) == first
        h = c.health()
        assert h["canary"]["questions"] == 3 and h["canary"]["recall@5"] == 1.0 and h["canary"]["alert"] is None
        assert retrieval_reading(c.kb, Broken())["recall@5"] == 1.0  # nothing changed: the reading stands
        (tmp_path / "docs" / "more.md").write_text("# More\n\nCoupons are paid twice a year.\n", encoding="utf-8")
        c.ingest(tmp_path / "docs")  # a new KB version: re-asked
        r = retrieval_reading(c.kb, Broken())
    assert r["recall@5"] == 0.0 and r["previous_recall@5"] == 1.0 and r["drop"] == 1.0
    assert "fell from 1.00 to 0.00 since KB version" in r["alert"] and len(r["misses"]) == 3
