"""The server under load while another process's ingest commits (issue 19, part 4): `serve` in a child process,
three clients asking, searching and uploading, and a CLI ingest of 40 new reports into the same knowledge base.
No request fails with a 5xx or a dropped connection, questions keep being answered through the ingest, an
upload that meets the ingest's writer lock is told so (409, not an error), and once the ingest has committed the
running server finds the new documents without a restart."""

from __future__ import annotations

import subprocess
import time

import pytest

from soak import KEY, Load, Soak


def _reports(root, n=40):
    root.mkdir()
    for i in range(n):
        paras = "\n\n".join(f"Paragraph {j}: the lighthouse of cape {i} was painted in {1900 + j}." for j in range(20))
        (root / f"cape{i:02d}.md").write_text(f"# Cape {i}\n\n{paras}\n", encoding="utf-8")


def _documents(db) -> int:
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.slow
def test_the_server_keeps_serving_while_an_ingest_commits(tmp_path):
    import httpx

    s = Soak(tmp_path / "soak", seed=3)
    _reports(tmp_path / "capes")
    with s.serving() as (base, server):
        load = Load(base, seed=5)
        load.start()
        time.sleep(1.0)
        before = len(load.answers)
        child = subprocess.Popen(s._cmd(["ingest", str(tmp_path / "capes"), "--kb", str(s.kb), "--json"]),
                                 env={**s.env, "SOAK_EMBED_SECONDS": "0.05"}, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        kb = s.kb / "kb.sqlite3"
        deadline = time.monotonic() + 60
        while _documents(kb) <= 24 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the child holds the writer lock and has committed a first batch
        assert child.poll() is None, "the ingest ended before the test could overlap it"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as c:
            up = c.post("/v1/ingest", files=[("files", ("late.md", b"# Late\n\nA late upload.\n", "text/markdown"))])
        assert up.status_code == 409 and "another ragclinic process is writing" in up.text, (up.status_code, up.text)
        out, err = child.communicate(timeout=300)
        during = len(load.answers) - before
        load.stop()
        assert child.returncode == 0, err.decode()[-2000:]
        assert load.errors == [] and load.refused == 0, (load.errors, load.refused)
        assert during >= 3, f"only {during} questions were answered during the ingest"
        refused_uploads = {st for (route, st) in load.statuses if route == "/v1/ingest"} - {200}
        assert refused_uploads <= {409}, load.statuses
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as c:
            hits = c.post("/v1/retrieval", json={"query": "lighthouse of cape 17"}).json()["hits"]
        assert any("cape 17" in h["text"] for h in hits), [h["text"][:60] for h in hits]
        assert server.poll() is None
        print(f"during the ingest: {during} answers; statuses {dict(load.statuses)}")
