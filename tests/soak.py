"""kill -9 at random points of `ask`, `eval rag`, `serve` under load and `ingest --sync` on one knowledge base
(issue 19, part 3): the harness both the bounded test (tests/test_kill_soak.py) and the 50-kill soak
(bench/kill_soak.py) run.

Each round runs one command in a child process (a slow scripted model and a slow fake embedder, registered as
plugins, so there is time to be killed at any point), sends it SIGKILL at a random moment, then checks, with the
process gone:
- the knowledge base opens, passes SQLite's integrity check and its indexes catch up (lexical = chunks);
- nothing committed is lost: every document stored before (whose file is still there) is still stored, whole
  (chunks, embeddings); every answer a client was given (`ask` that finished, `serve`'s 200s) has its trace;
  every upload the server acknowledged is stored; every eval row written before is still read back;
- no half-written trace is shown as complete: every stored trace loads with an answer and its layers.
At the end, `ingest --sync` and `eval` are re-run to completion and compared with clean runs.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from helpers import plugin_cli_script, register_slowfake

ANSWER = "Harbour {n} has {n} cranes, and its reports name the port authority as the owner [1]."
CHILD = plugin_cli_script("""
    time.sleep(float(os.environ.get("SOAK_EMBED_SECONDS", "0.003")) * len(texts))
    return super()._embed(texts)
""", imports="""
    from ragclinic.models.llm import LANGUAGE_MODELS
    from ragclinic.models.fake_llm import PacedLanguageModel

    @LANGUAGE_MODELS.register("slowllm")
    def _slow(settings):
        return PacedLanguageModel(["The harbour of town 3 has 3 cranes, the report says [1]."],
                                  token_seconds=float(os.environ.get("SOAK_TOKEN_SECONDS", "0.04")), yes_prob=0.9)
""")
KEY = "soak-test-key-0001"
COMMANDS = ("ask", "eval", "serve", "ingest-sync")


@dataclass
class Round:
    command: str
    killed: bool  # SIGKILL landed while the command ran (else it finished first)
    after_s: float
    lost: list[str] = field(default_factory=list)  # what was committed before the kill and is gone after
    broken: list[str] = field(default_factory=list)  # what does not open, or is half-written and shown whole
    served: int = 0  # answers / rows / uploads the command acknowledged before the kill
    answers: list[str] = field(default_factory=list)  # trace ids of the answers given
    uploads: list[str] = field(default_factory=list)  # file names of the uploads acknowledged


class Soak:
    """One knowledge base, its corpus, an eval dataset and the child script, in ``root``."""

    def __init__(self, root: Path, seed: int = 19, files: int = 24) -> None:
        register_slowfake()
        self.root, self.rng = root, random.Random(seed)
        self.corpus, self.kb = root / "corpus", root / "kb"
        root.mkdir(parents=True, exist_ok=True)
        self.script = root / "child.py"
        self.script.write_text(CHILD)
        self.env = {**os.environ, "RAGCLINIC_CACHE_DIR": str(root / "cache"), "RAGCLINIC_EMBEDDER": "slowfake",
                    "RAGCLINIC_JUDGE": "llm", "RAGCLINIC_INSTRUCTION_DETECTOR": "rules",
                    "RAGCLINIC_NO_SUPERVISOR": "1", "OMP_WAIT_POLICY": "PASSIVE"}
        self.generation = 0
        self.corpus.mkdir(parents=True)
        for i in range(files):
            self._write(i)
        self.dataset = _rgb_dataset(root / "rgb.jsonl")
        self.eval_out = root / "eval-0"
        self.eval_runs = [self.eval_out]  # one folder per eval run, each killed and resumed until complete
        self.rows_seen: set[str] = set()
        self._run(["ingest", str(self.corpus), "--kb", str(self.kb), "--json"])

    # ------------------------------------------------------------------ the corpus
    def _write(self, i: int) -> None:
        paras = "\n\n".join(f"Paragraph {j} of report {i} (edition {self.generation}) is about the harbour of "
                            f"town {i} and its {j} cranes." for j in range(20))
        (self.corpus / f"report{i:03d}.md").write_text(f"# Report {i}\n\n{paras}\n", encoding="utf-8")

    def mutate(self) -> None:
        """What a user's folder does between two syncs: files removed, added and edited."""
        self.generation += 1
        names = sorted(self.corpus.glob("*.md"))
        for p in self.rng.sample(names, min(3, len(names) - 10)):
            p.unlink()
        top = max(int(p.stem[6:]) for p in names) + 1
        for i in range(top, top + 4):
            self._write(i)
        for p in self.rng.sample(sorted(self.corpus.glob("*.md")), 5):
            self._write(int(p.stem[6:]))

    # ------------------------------------------------------------------ children
    def _cmd(self, args: list[str]) -> list[str]:
        return [sys.executable, str(self.script), *args]

    def _run(self, args: list[str], timeout: float = 600) -> dict:
        p = subprocess.run(self._cmd(args), env=self.env, capture_output=True, timeout=timeout)
        assert p.returncode == 0, p.stderr.decode()[-2000:]
        return json.loads(p.stdout)

    def _kill_after(self, p: subprocess.Popen, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if p.poll() is not None:
            return False
        p.send_signal(signal.SIGKILL)
        p.wait(60)
        return True

    # ------------------------------------------------------------------ rounds
    def round(self, command: str) -> Round:
        before = kb_state(self.kb)
        r = getattr(self, "_" + command.replace("-", "_"))()
        check(self.kb, before, r, deleted_ok=command == "ingest-sync")
        return r

    def _ask(self) -> Round:
        after = self.rng.uniform(0.5, 3.5)
        p = subprocess.Popen(self._cmd(["ask", "How many cranes has the harbour of town 3?", "--kb", str(self.kb),
                                        "--llm", "slowllm", "--no-cache", "--json"]),
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        killed = self._kill_after(p, after)
        out, err = p.communicate()
        r = Round("ask", killed, after)
        if not killed:
            assert p.returncode == 0, err.decode()[-2000:]
            r.served, r.answers = 1, [json.loads(out)["trace_id"]]
        return r

    def _eval(self) -> Round:
        if (self.eval_out / "results.json").exists():  # that run is complete: the next round starts another
            self.eval_out = self.root / f"eval-{len(self.eval_runs)}"
            self.eval_runs.append(self.eval_out)
        after = self.rng.uniform(0.5, 8.0)
        before = eval_rows(self.eval_out)
        p = subprocess.Popen(self._cmd(eval_args(self.dataset, self.eval_out)), env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        killed = self._kill_after(p, after)
        err = p.communicate()[1]
        if not killed:
            assert p.returncode == 0, err.decode()[-2000:]
        r = Round("eval", killed, after)
        now = eval_rows(self.eval_out)
        r.lost += [f"eval row {k}" for k in sorted(set(before) - set(now))]
        r.broken += [f"eval row {k} written twice" for k, n in now.items() if n > 1]
        r.served = len(now) - len(before)
        return r

    def _ingest_sync(self) -> Round:
        self.mutate()
        after = self.rng.uniform(0.5, 3.5)
        p = subprocess.Popen(self._cmd(["ingest", str(self.corpus), "--kb", str(self.kb), "--sync", "--json"]),
                             env={**self.env, "SOAK_EMBED_SECONDS": "0.04"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        killed = self._kill_after(p, after)
        err = p.communicate()[1]
        if not killed:
            assert p.returncode == 0, err.decode()[-2000:]
        return Round("ingest-sync", killed, after)

    @contextmanager
    def serving(self):
        """`serve` in a child process on a free loopback port: (its base URL, the process)."""
        port = _free_port()
        p = subprocess.Popen(self._cmd(["serve", "--kb", str(self.kb), "--llm", "slowllm", "--port", str(port),
                                        "--api-key", KEY]), env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(base, p)
            yield base, p
        finally:
            if p.poll() is None:
                p.kill()
            p.communicate()

    def _serve(self) -> Round:
        with self.serving() as (base, p):
            load = Load(base, self.rng.randrange(10**6))
            load.start()
            after = self.rng.uniform(0.3, 4.0)
            killed = self._kill_after(p, after)
            load.stop()
        r = Round("serve", killed, after)
        r.answers, r.uploads = load.answers, load.uploads
        r.broken += load.errors
        r.served = len(load.answers) + len(load.uploads)
        return r

    def finish(self) -> dict:
        """Re-run `ingest --sync` and `eval` to completion and compare them with clean runs."""
        self._run(["ingest", str(self.corpus), "--kb", str(self.kb), "--sync", "--json"])
        clean_kb = self.root / "clean-kb"
        self._run(["ingest", str(self.corpus), "--kb", str(clean_kb), "--json"])
        got, want = kb_state(self.kb), kb_state(clean_kb)
        corpus = {str(p.resolve()) for p in self.corpus.glob("*.md")}
        got_docs = {k: v for k, v in got["docs"].items() if k in corpus}
        clean = self._run(eval_args(self.dataset, self.root / "eval-clean"), timeout=1200)
        resumed = [self._run(eval_args(self.dataset, out), timeout=1200) for out in self.eval_runs]
        rows = [eval_rows(out) for out in self.eval_runs]
        return {"kb_equal_clean": got_docs == want["docs"] and set(got["docs"]) - set(got_docs) <= got["uploads"],
                "kb_docs": len(got_docs), "clean_docs": len(want["docs"]), "eval_runs": len(self.eval_runs),
                "eval_equal_clean": all(_comparable(r) == _comparable(clean) for r in resumed),
                "eval_rows_complete": all(sorted(r.values()) == [1] * clean["n"] for r in rows),
                "eval_n": clean["n"]}


# ---------------------------------------------------------------------------------------------- checks
def kb_state(kb_dir: Path, known_traces: set[str] | None = None) -> dict:
    """Documents by source path (sha256, chunks, chunks without an embedding), trace ids, whether it opens whole;
    with ``known_traces``, what is wrong with each stored trace not among them (``trace_problems``)."""
    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase

    kb = KnowledgeBase.open(Settings.load(kb_dir, embedder="slowfake", llm="none", judge="llm"))
    try:
        conn = kb.db.conn
        docs = {}
        for path, sha, n, missing in conn.execute(
                "SELECT d.path, d.sha256, COUNT(c.rowid), SUM(c.embedding IS NULL) FROM documents d "
                "LEFT JOIN chunks c ON c.doc_id = d.doc_id GROUP BY d.doc_id"):
            docs[path] = (sha, n, missing or 0)
        uploads = {p for p in docs if "/uploads/" in p or not p.startswith("/")}
        traces = {r[0] for r in conn.execute("SELECT id FROM traces")}
        problems = [] if known_traces is None else _trace_problems(kb, sorted(traces - known_traces))
        return {"docs": docs, "uploads": uploads, "integrity": kb.db.integrity_ok(),
                "lexical": len(kb.lexical()), "chunks": kb.stats()["chunks"], "traces": traces,
                "trace_problems": problems}
    finally:
        kb.close()


def _trace_problems(kb, ids: list[str]) -> list[str]:
    """Each trace must load with its answer and its layers: a half-written one must not be stored."""
    from ragclinic.trace.store import load_trace

    out = []
    for t in ids:
        try:
            tr = load_trace(kb.db, t, exact=True)
        except Exception as e:  # noqa: BLE001 - any failure to load is what is counted
            out.append(f"trace {t}: {e}")
            continue
        layers = {s.layer for s in tr.spans}
        if tr.answer is None or not {"retrieve", "gate"} <= layers:
            out.append(f"trace {t} stored without its answer or layers ({sorted(layers)})")
    return out


def check(kb_dir: Path, before: dict, r: Round, *, deleted_ok: bool) -> None:
    """Fill ``r.lost`` and ``r.broken`` from the knowledge base as the killed command left it."""
    after = kb_state(kb_dir, known_traces=before["traces"])
    if not after["integrity"]:
        r.broken.append("integrity check failed")
    if after["lexical"] != after["chunks"]:
        r.broken.append(f"lexical index {after['lexical']} entries for {after['chunks']} chunks")
    for path, (sha, n, missing) in after["docs"].items():
        if n == 0 or missing:
            r.broken.append(f"{path}: {n} chunks, {missing} without an embedding")
    r.broken += after["trace_problems"]
    for path, (sha, _, _) in before["docs"].items():
        now = after["docs"].get(path)
        if now is None and not (deleted_ok and not Path(path).exists()):
            r.lost.append(f"document {path}")
        elif now is not None and now[0] != sha and not deleted_ok:
            r.lost.append(f"document {path} changed by a read-only command")
    r.lost += [f"trace {t}" for t in sorted(before["traces"] - after["traces"])]
    r.lost += [f"trace {t} of an answer given" for t in r.answers if t not in after["traces"]]
    stored = {Path(p).name for p in after["docs"]}
    r.lost += [f"upload {u}" for u in r.uploads if u not in stored]


# ---------------------------------------------------------------------------------------------- eval
def _rgb_dataset(path: Path, n: int = 4) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            pos = [f"The harbour of town {i} has {i + 3} cranes, the port report of {2020 + i} says.",
                   f"Town {i}'s harbour is run by the port authority and has {i + 3} cranes."]
            neg = [f"The market of town {i + 40} sells fish on {d}." for d in ("Monday", "Tuesday", "Friday")]
            f.write(json.dumps({"id": i, "query": f"How many cranes has the harbour of town {i}?",
                                "answer": str(i + 3), "positive": pos, "negative": neg}) + "\n")
    return path


def eval_args(dataset: Path, out: Path) -> list[str]:
    return ["eval", "rag", "--dataset", f"rgb:{dataset}", "--llm", "slowllm", "--noise", "0,0.4,neg",
            "--out", str(out), "--json"]


def eval_rows(out: Path) -> dict[str, int]:
    """How many complete rows each case key has in the checkpoint."""
    rows: dict[str, int] = {}
    path = out / "items.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                key = json.loads(line)["key"]
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
            rows[key] = rows.get(key, 0) + 1
    return rows


def _comparable(result: dict) -> dict:
    """The metrics that do not depend on the clock."""
    keep = ("accuracy", "refusal_accuracy", "over_refusal", "hallucination_rate", "citation_precision")
    return {arm: {k: m.get(k) for k in keep} for arm, m in result["metrics"].items()} | {"n": result["n"]}


# ---------------------------------------------------------------------------------------------- serve
class Load:
    """Clients on the server until stopped: questions (answers with trace ids), searches, and uploads (each
    acknowledged upload must be stored). A connection refused or reset is counted in ``refused`` (it is the kill,
    when there is one); a 5xx is an error."""

    def __init__(self, base: str, seed: int, clients: int = 3) -> None:
        self.base, self.seed, self.clients = base, seed, clients
        self.answers: list[str] = []
        self.uploads: list[str] = []
        self.errors: list[str] = []
        self.statuses: collections.Counter = collections.Counter()  # (route, status) → count
        self.refused = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.clients)]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _client(self, i: int) -> None:
        import httpx

        rnd = random.Random(self.seed + i)
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as c:
            while not self._stop.is_set():
                try:
                    self._one(c, rnd, i)
                except (httpx.TransportError, OSError):
                    self.refused += 1
                    if self._stop.wait(0.05):
                        return

    def _one(self, c, rnd: random.Random, i: int) -> None:
        x = rnd.random()
        if x < 0.5:
            r = c.post("/v1/ask", json={"question": f"How many cranes has the harbour of town {rnd.randrange(9)}?",
                                        "doctor": rnd.random() < 0.3})
            if r.status_code == 200:
                self.answers.append(r.json()["trace_id"])
        elif x < 0.85:
            r = c.post("/v1/retrieval", json={"query": f"harbour of town {rnd.randrange(9)}"})
        else:
            name = f"upload-{self.seed}-{i}-{rnd.randrange(10**9)}.md"
            body = f"# Upload\n\nThe quay of upload {name} is {rnd.randrange(500)} metres long.\n"
            r = c.post("/v1/ingest", files=[("files", (name, body.encode(), "text/markdown"))])
            if r.status_code == 200:
                self.uploads.append(name)
        self.statuses[(r.request.url.path, r.status_code)] += 1
        if r.status_code >= 500:
            self.errors.append(f"{r.request.url.path}: {r.status_code} {r.text[:200]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base: str, p: subprocess.Popen, timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"serve exited with {p.returncode}: {p.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"serve did not answer /healthz within {timeout} s")
