"""The floods of issue 51, before and after, side by side: `ragclinic serve --llm none` on a two-tenant knowledge
base (one tenant's PDF has a 30000 × 30000 pt page), once from a checkout of ``--before`` (a git revision) and
once from this tree, each in a process of its own, measured from /proc:

- the page picture: 3 GETs of /passage/{chunk}/page.png at once — peak and after RSS of the server;
- abandoned streams: ``--asks`` SSE asks by tenant A, each left after 0.5 s (``--clients`` at a time) — the
  server's peak threads, how many traces they saved, and tenant B's ask latency during the flood vs idle;
- a tenant's 404s: another tenant's trace id vs a missing one, ``--reps`` GETs each, interleaved (median ms).

    .venv/bin/python bench/flood_bench.py --before HEAD --out bench/out/flood.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # helpers, which the test modules import

from output import emit  # noqa: E402
from tests.server.test_render_bounds import huge_page_pdf  # noqa: E402

ADMIN, A, B = "admin-flood-key-1", "tenant-a-flood-key", "tenant-b-flood-key"
KEYS = [ADMIN, f"{A}:tenant=a", f"{B}:tenant=b"]
ENTRY = "import sys; from ragclinic.cli.entry import main; sys.argv[0] = 'ragclinic'; sys.exit(main())"
Q = {"question": "What does the relief valve do?", "doctor": False}


def make_kb(tmp: Path, src: Path) -> Path:
    for t in ("a", "b"):
        (tmp / t).mkdir()
        (tmp / t / "notes.md").write_text(f"# Notes\n\nThe {t} relief valve opens at 7.5 bar. The pump runs at "
                                          f"1400 rpm.\n", encoding="utf-8")
    (tmp / "a" / "huge.pdf").write_bytes(huge_page_pdf())
    kb = tmp / "kb"
    for t in ("a", "b"):
        subprocess.run([sys.executable, "-c", ENTRY, "ingest", str(tmp / t), "--kb", str(kb), "--tag",
                        f"tenant={t}"], check=True, env=_env(src), capture_output=True)
    return kb


def _env(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src), "OMP_WAIT_POLICY": "PASSIVE", "RAGCLINIC_ANSWER_CACHE": "false"}


class Server:
    def __init__(self, src: Path, kb: Path, port: int) -> None:
        args = [sys.executable, "-c", ENTRY, "serve", "--kb", str(kb), "--llm", "none", "--port", str(port)]
        for k in KEYS:
            args += ["--api-key", k]
        self.proc = subprocess.Popen(args, env=_env(src), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        self.pid = self._serving_pid()

    def _serving_pid(self) -> int:
        """The process that serves (the CLI's supervisor forks a child that runs the command)."""
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        ids = kids.read_text().split() if kids.exists() else []
        return int(ids[0]) if ids else self.proc.pid

    def status(self) -> dict:
        """RSS and threads of the serving process; ``crashed`` once it is gone (PDFium drawing pages in two
        threads at once killed the old server: "double free or corruption")."""
        try:
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines())
            return {"rss_mb": int(fields["VmRSS"].split()[0]) / 1024, "threads": int(fields["Threads"])}
        except (OSError, KeyError):
            return {"rss_mb": 0.0, "threads": 0, "crashed": True}

    def alive(self) -> bool:
        return not self.status().get("crashed")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def watched(server: Server, work) -> dict:
    """``work()`` while the server's RSS and threads are sampled every 20 ms: the peaks, and a reading after."""
    before, peak, stop = server.status(), {"rss_mb": 0.0, "threads": 0}, threading.Event()

    def sample():
        while not stop.is_set():
            s = server.status()
            if s.get("crashed"):
                peak["crashed"] = True
                return
            peak.update(rss_mb=max(peak["rss_mb"], s["rss_mb"]), threads=max(peak["threads"], s["threads"]))
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    out = work()
    stop.set()
    t.join()
    time.sleep(2.0)
    return {"before": before, "peak": peak, "after": server.status(), **(out or {})}


def page_flood(server: Server, chunk: str) -> dict:
    def get(_):
        try:
            return httpx.get(f"{server.url}/passage/{chunk}/page.png", headers=_auth(A), timeout=300).status_code
        except httpx.HTTPError as e:
            return type(e).__name__
    with ThreadPoolExecutor(3) as ex:
        return {"statuses": list(ex.map(get, range(3)))}


def abandon(url: str) -> int:
    try:
        with httpx.Client(timeout=30) as c, c.stream("POST", f"{url}/v1/ask", json=Q,
                                                   headers={**_auth(A), "Accept": "text/event-stream"}) as r:
            t0 = time.monotonic()
            if r.status_code == 200:
                for _ in r.iter_raw():
                    if time.monotonic() - t0 > 0.5:
                        break
            return r.status_code
    except httpx.HTTPError:
        return 0


def ask_seconds(url: str, key: str) -> float:
    t0 = time.perf_counter()
    r = httpx.post(f"{url}/v1/ask", json=Q, headers=_auth(key), timeout=600)
    return time.perf_counter() - t0 if r.status_code == 200 else float("nan")


def stream_flood(server: Server, asks: int, clients: int) -> dict:
    traces0 = _traces(server.url)
    idle = statistics.median(ask_seconds(server.url, B) for _ in range(5))
    during: list[float] = []

    def probe():
        time.sleep(1.0)
        during.append(ask_seconds(server.url, B))

    with ThreadPoolExecutor(clients) as ex:
        p = threading.Thread(target=probe)
        p.start()
        statuses = list(ex.map(lambda _: abandon(server.url), range(asks)))
        p.join()
    time.sleep(3.0)
    return {"statuses": {str(s): statuses.count(s) for s in sorted(set(statuses), key=str)},
            "traces_saved": _traces(server.url) - traces0, "other_tenant_idle_s": round(idle, 3),
            "other_tenant_during_s": round(during[0], 3) if during else None}


def _traces(url: str) -> int:
    return len(httpx.get(f"{url}/v1/traces?limit=500", headers=_auth(ADMIN), timeout=60).json()["traces"])


def not_found_timing(server: Server, reps: int) -> dict:
    theirs = httpx.post(f"{server.url}/v1/ask", json=Q, headers=_auth(B), timeout=60).json()["trace_id"]
    missing = theirs[:-4] + ("0000" if not theirs.endswith("0000") else "1111")
    times: dict[str, list[float]] = {"other_tenant": [], "missing": []}
    with httpx.Client(headers=_auth(A), timeout=30) as c:
        for i in range(reps):
            for name, tid in (("other_tenant", theirs), ("missing", missing))[:: 1 if i % 2 else -1]:
                t0 = time.perf_counter()
                assert c.get(f"{server.url}/v1/traces/{tid}").status_code == 404
                times[name].append((time.perf_counter() - t0) * 1000)
    return {k: round(statistics.median(v), 3) for k, v in times.items()}


def _auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def run(src: Path, kb: Path, port: int, args) -> dict:
    """The three floods on one server; one that crashed (the old server, drawing pages) is started again."""
    server, out = Server(src, kb, port), {}
    try:
        chunk = _huge_chunk(kb)
        out["page_png"] = watched(server, lambda: page_flood(server, chunk))
        if not server.alive():
            server.close()
            server = Server(src, kb, port + 100)
        out["abandoned_streams"] = watched(server, lambda: stream_flood(server, args.asks, args.clients))
        out["trace_404_ms"] = not_found_timing(server, args.reps)
        return out
    finally:
        server.close()


def _huge_chunk(kb: Path) -> str:
    import sqlite3

    with sqlite3.connect(kb / "kb.sqlite3") as db:
        return db.execute("SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                          "WHERE d.path LIKE '%huge.pdf'").fetchone()[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="HEAD", help="the git revision to compare with (a worktree of it)")
    ap.add_argument("--asks", type=int, default=150)
    ap.add_argument("--clients", type=int, default=150, help="abandoned asks open at once")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    result = {}
    with tempfile.TemporaryDirectory(prefix="flood-") as tmp:
        tmp = Path(tmp)
        old = tmp / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.before], check=True,
                       capture_output=True)
        try:
            for name, src in (("before", old / "src"), ("after", ROOT / "src")):
                (tmp / f"data-{name}" / "docs").mkdir(parents=True)
                kb = make_kb(tmp / f"data-{name}" / "docs", src)
                result[name] = run(src, kb, 18700 + len(result), args)
                print(name, json.dumps(result[name], indent=1))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], capture_output=True)
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
