"""Scale-out on Ray (issue 18) against a local Ray head on 127.0.0.1, started and stopped by this module: an ingest
on Ray gives the knowledge base a local ingest gives; a worker killed mid-batch is retried and nothing is committed
twice; eval on Ray gives the local metrics; `kb learn` on Ray stores what a local run stores; one request through
Ray Serve; and without the extra, --ray names the install command."""

from __future__ import annotations

import json
import socket
import sys
import time

import numpy as np
import pytest
import ray
from typer.testing import CliRunner

from ragclinic import Clinic
from ragclinic.cli.main import app
from ragclinic.errors import ConfigError
from ragclinic.scale.ray_ingest import DIE_ONCE

EN = ("Treasury bills are the usual proxy for the risk-free rate. Their yield moves with the policy rate.\n\n"
      "Duration measures how much a bond price moves when rates change; a longer bond moves more.\n")
ZH = "国债通常被用作无风险利率的近似。\n\n久期衡量债券价格对利率变化的敏感程度，期限越长越敏感。\n"


@pytest.fixture(scope="module")
def head():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()


def _corpus(root):
    root.mkdir(parents=True)
    for i in range(6):
        (root / f"bonds{i}.md").write_text(f"# Bonds {i}\n\n{EN}\nNote {i}: coupon {i + 2} percent.\n", encoding="utf-8")
    (root / "rates.zh.txt").write_text(ZH, encoding="utf-8")
    (root / "prices.csv").write_text("product,price,units\nwidget,2.5,100\ngadget,4.0,30\n", encoding="utf-8")
    (root / "notes.jsonl").write_text("".join(json.dumps({"id": f"n{i}", "text": f"Record {i}. {EN}"}) + "\n"
                                              for i in range(4)), encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    return root


def _snapshot(folder) -> tuple:
    """What must be equal: documents, chunks (ids, texts), embeddings by chunk id, tables."""
    with Clinic.open(folder, llm="none") as c:
        db = c.kb.db
        docs = sorted(db.conn.execute("SELECT doc_id, sha256, path, title FROM documents").fetchall())
        chunks = sorted(db.conn.execute("SELECT chunk_id, doc_id, text FROM chunks").fetchall())
        by_rowid = dict(db.conn.execute("SELECT rowid, chunk_id FROM chunks").fetchall())
        ids, vecs = db.embeddings(c.kb.embedder.dim)
        vectors = {by_rowid[int(i)]: v for i, v in zip(ids, vecs)}
        tables = sorted(r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                       "AND name LIKE 't\\_%' ESCAPE '\\'"))
    return docs, chunks, vectors, tables


def _same(a, b) -> None:
    assert a[0] == b[0] and a[1] == b[1] and a[3] == b[3]
    assert set(a[2]) == set(b[2]) == {c[0] for c in a[1]}
    assert max(float(np.abs(a[2][k] - b[2][k]).max()) for k in a[2]) < 1e-4


def test_an_ingest_on_ray_gives_the_local_knowledge_base(head, tmp_path):
    docs = _corpus(tmp_path / "docs")
    with Clinic.open(tmp_path / "local", llm="none", cache_dir=tmp_path / "c1") as c:
        local = c.ingest([docs])
    with Clinic.open(tmp_path / "ray", llm="none", cache_dir=tmp_path / "c2") as c:  # its own cache: workers embed
        spread = c.ingest([docs], ray="auto", ray_workers=2)
    assert local.to_json() | {"seconds": 0} == spread.to_json() | {"seconds": 0}
    assert [f["path"] for f in spread.failed] == [str(docs / "broken.pdf")]
    _same(_snapshot(tmp_path / "local"), _snapshot(tmp_path / "ray"))
    with Clinic.open(tmp_path / "ray", llm="none", cache_dir=tmp_path / "c2") as c:  # the cache is filled: a re-run
        again = c.ingest([docs], ray="auto", ray_workers=2)
    assert again.added == 0 and again.chunks == 0 and again.unchanged == local.added


def test_a_worker_killed_mid_batch_is_retried_and_nothing_is_committed_twice(head, tmp_path, monkeypatch):
    docs = _corpus(tmp_path / "docs")
    marker = tmp_path / "died"
    monkeypatch.setenv(DIE_ONCE, str(marker))
    with Clinic.open(tmp_path / "ray", llm="none", cache_dir=tmp_path / "c2") as c:
        result = c.ingest([docs], ray="auto", ray_workers=2)
    assert marker.exists(), "no worker died: the test did not test anything"
    monkeypatch.delenv(DIE_ONCE)
    with Clinic.open(tmp_path / "local", llm="none", cache_dir=tmp_path / "c1") as c:
        local = c.ingest([docs])
    assert result.chunks == local.chunks and result.added == local.added
    ray_kb, local_kb = _snapshot(tmp_path / "ray"), _snapshot(tmp_path / "local")
    _same(local_kb, ray_kb)
    assert len(ray_kb[1]) == len({c[0] for c in ray_kb[1]})  # no chunk twice


def _beir(root):
    (root / "qrels").mkdir(parents=True)
    docs = {"d1": "Treasury bills are the usual proxy for the risk-free rate.",
            "d2": "Duration measures how much a bond price moves when rates change.",
            "d3": "The cat sat on the warm kitchen floor all afternoon.",
            "d4": "Coupons are paid twice a year on most government bonds."}
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                               for k, v in docs.items()), encoding="utf-8")
    queries = {"q1": "proxy for the risk-free rate", "q2": "bond price duration", "q3": "where did the cat sit",
               "q4": "how often are coupons paid"}
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()),
                                        encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\nq4\td4\t1\n",
                                             encoding="utf-8")
    return root


def _metrics(out: dict) -> dict:
    return {name: {k: v for k, v in m.items() if k != "ms_per_query"} for name, m in out["metrics"].items()}


def test_eval_on_ray_gives_the_local_metrics(head, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    runner, root = CliRunner(), _beir(tmp_path / "beir")
    local = runner.invoke(app, ["eval", "retrieval", "--dataset", f"beir:{root}", "--kb", str(tmp_path / "kb1"), "--json"])
    spread = runner.invoke(app, ["eval", "retrieval", "--dataset", f"beir:{root}", "--kb", str(tmp_path / "kb2"),
                                 "--json", "--ray", "auto", "--ray-workers", "2"])
    assert local.exit_code == 0 and spread.exit_code == 0, spread.output
    a, b = json.loads(local.stdout), json.loads(spread.stdout)
    assert _metrics(a) == _metrics(b) and b["ray"]["workers"] == 2 and b["n"] == 4
    # rag: the cases on the workers (extractive: --llm none), rows checkpointed by the driver
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps({"id": f"i{i}", "question": q, "answers": [a], "documents": [d]}) + "\n"
                          for i, (q, a, d) in enumerate([
                              ("What is the proxy for the risk-free rate?", "Treasury bills",
                               "Treasury bills are the usual proxy for the risk-free rate."),
                              ("What does duration measure?", "bond price",
                               "Duration measures how much a bond price moves when rates change."),
                              ("Where did the cat sit?", "kitchen floor", "The cat sat on the warm kitchen floor.")])),
                  encoding="utf-8")
    rag = ["eval", "rag", "--dataset", f"jsonl:{qa}", "--llm", "none", "--no-doctor", "--json"]
    one = runner.invoke(app, rag + ["--out", str(tmp_path / "r1")])
    two = runner.invoke(app, rag + ["--out", str(tmp_path / "r2"), "--ray", "auto", "--ray-workers", "2"])
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    m1, m2 = json.loads(one.stdout)["metrics"], json.loads(two.stdout)["metrics"]
    drop = lambda m: {k: v for k, v in m["baseline"].items() if "ms" not in k}  # noqa: E731
    assert drop(m1) == drop(m2)
    rows = [json.loads(x) for x in (tmp_path / "r2" / "items.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in rows) == ["i0|default", "i1|default", "i2|default"]


def _question_writer():
    """A model for `kb learn` that a worker can make: its questions and keywords name the chunk's first words."""
    from ragclinic.models.fake_llm import ScriptedLanguageModel

    def reply(messages) -> str:
        words = [w for w in messages[-1].content.split() if w.isalpha()][-6:]
        return json.dumps({"questions": [f"What is said about {' '.join(words[:3])}?",
                                         f"Where is {' '.join(words[3:])} explained?"], "keywords": words[:2]})

    return ScriptedLanguageModel([reply])


def _learned(c) -> list:
    return sorted(c.kb.db.conn.execute("SELECT chunk_id, kind, text, kept FROM learned_items").fetchall())


def test_kb_learn_on_ray_stores_what_a_local_run_stores(head, tmp_path, monkeypatch):
    from ragclinic.scale import ray_learn

    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(tmp_path / "cache"))
    _corpus(tmp_path / "docs")
    with Clinic.open(tmp_path / "kb1", model=_question_writer(), embedder="fake") as c:
        c.ingest(tmp_path / "docs")
        local = c.learn()
        here = _learned(c)
    monkeypatch.setattr(ray_learn, "local_model", lambda llm: _question_writer)  # what each worker loads
    with Clinic.open(tmp_path / "kb2", model=None, embedder="fake") as c:
        c.ingest(tmp_path / "docs")
        spread = c.learn(ray="auto", ray_workers=2, max_chunks=5)  # a bounded first run, then the rest
        rest = c.learn(ray="auto", ray_workers=2)
        there = _learned(c)
    assert local.learned == spread.learned + rest.learned and spread.learned == 5 and rest.remaining == 0
    assert here == there and len(here) > 10  # the same questions and keywords, kept alike, nothing twice
    assert spread.model == local.model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_one_request_through_ray_serve(head, tmp_path):
    import httpx
    from ray import serve

    from ragclinic.config import Settings
    from ragclinic.server import ray_serve

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bonds.md").write_text(f"# Bonds\n\n{EN}", encoding="utf-8")
    settings = {"llm": "none", "embedder": "fake", "cache_dir": tmp_path / "cache", "answer_cache": False}
    with Clinic.open(tmp_path / "kb", **settings) as c:
        c.ingest([docs])
    port = _free_port()
    try:
        ray_serve.start(Settings.load(tmp_path / "kb", **settings), ["key-123456"], replicas=2, host="127.0.0.1",
                        port=port, cpus=0.25)
        url, auth = f"http://127.0.0.1:{port}", {"Authorization": "Bearer key-123456"}
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "Ray Serve did not come up"
            time.sleep(0.5)
        assert httpx.post(f"{url}/v1/ask", json={"question": "What is the proxy for the risk-free rate?"},
                          timeout=30).status_code == 401  # the same keys
        r = httpx.post(f"{url}/v1/ask", json={"question": "What is the proxy for the risk-free rate?"}, headers=auth,
                       timeout=60)
        assert r.status_code == 200 and "Treasury bills" in r.json()["answer"], r.text
        up = httpx.post(f"{url}/v1/ingest", headers=auth, timeout=60,
                        files={"files": ("cats.md", b"# Cats\n\nThe cat sat on the warm kitchen floor.\n")})
        assert up.status_code == 200 and up.json()["added"] == 1, up.text  # through the one writer
        r = httpx.post(f"{url}/v1/ask", json={"question": "Where did the cat sit?"}, headers=auth, timeout=60)
        assert r.status_code == 200 and "kitchen floor" in r.json()["answer"], r.text
    finally:
        serve.shutdown()


def test_without_the_extra_ray_names_the_install_command(tmp_path, monkeypatch):
    from ragclinic.scale.runtime import connected

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ray\]'"):
        with connected("auto"):
            pass
    r = CliRunner().invoke(app, ["ingest", str(tmp_path), "--kb", str(tmp_path / "kb"), "--ray", "auto"])
    assert r.exit_code == 2 and "pip install -e '.[ray]'" in " ".join(r.output.split())
