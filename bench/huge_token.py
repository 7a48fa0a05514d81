"""Issue 32's bounded-work figures: one unbroken token of 32k, 128k, 1M and 10M characters through the text parser
and the chunker with the e5 token counter (what an ingest runs), then a full ``ragclinic ingest`` of the 10 MB file
(fake embedder, no language model), and the parse worker's overhead on the demo corpus (parse_timeout_s=0, in
process, against the default worker process).

    python bench/huge_token.py                      # "x" repeated
    python bench/huge_token.py --kind mixed         # letters and sentence/list punctuation, no whitespace
    python bench/huge_token.py --kind cjk           # Chinese characters without punctuation (one sentence)
    python bench/huge_token.py --overhead --runs 3  # the demo corpus, worker vs in-process
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ragclinic.config import Settings  # noqa: E402
from ragclinic.ingest.discover import read_source  # noqa: E402
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker  # noqa: E402
from ragclinic.ingest.parse import parse_source  # noqa: E402

SIZES = (32_000, 128_000, 1_000_000, 10_000_000)


def token(n: int, kind: str) -> str:
    if kind == "x":
        return "x" * n
    if kind == "cjk":  # Chinese characters with no punctuation: not a "run" (CJK prose has no spaces), one sentence
        return "".join(
            "检索增强生成先检索相关段落再让语言模型作答"[i % 21] for i in range(n))
    rnd = random.Random(n)
    return "".join(rnd.choices("Ab.c!D?(e)\"f\"-_", k=n))


def parse_and_chunk(path: Path, settings: Settings) -> tuple[float, float, int]:
    chunker = Chunker(settings, TOKEN_COUNTERS.create("e5"))
    t0 = time.perf_counter()
    (parsed,) = list(parse_source(read_source(path, settings.max_file_size), settings))
    t1 = time.perf_counter()
    chunks, _ = chunker.chunk(parsed.document)
    return t1 - t0, time.perf_counter() - t1, len(chunks)


def cli_ingest(paths: list[Path], kb: Path, **env: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-c", "from ragclinic.cli.entry import main; main()", "ingest", *map(str, paths),
           "--kb", str(kb), "--embedder", "fake", "--json"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAGCLINIC_LLM": "none", **env})
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr[-2000:])
    return seconds, json.loads(done.stdout)


def overhead(runs: int, tmp: Path) -> None:
    from ragclinic.demo.corpus import write_demo_corpus

    files = write_demo_corpus(tmp / "demo")
    print(f"demo corpus: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes; "
          f"wall seconds of `ragclinic ingest` (fake embedder), fresh knowledge base each run")
    for label, timeout in (("in-process (parse_timeout_s=0)", "0"), ("worker (parse_timeout_s=120)", "120")):
        times = []
        for i in range(runs):
            seconds, result = cli_ingest([tmp / "demo"], tmp / f"kb-{timeout}-{i}", RAGCLINIC_PARSE_TIMEOUT_S=timeout)
            times.append(seconds)
            assert not result["failed"], result["failed"]
        times.sort()
        print(f"  {label:32s} median {times[len(times) // 2]:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})")
    print("one process, one ingest after another into fresh knowledge bases (a server's uploads reuse the worker):")
    for timeout in (0.0, 120.0):
        times = in_process_runs(tmp / "demo", tmp, runs + 1, timeout)
        print(f"  parse_timeout_s={timeout:<6g} first {times[0]:.2f} s, then median {sorted(times[1:])[runs // 2]:.2f} s")


def in_process_runs(folder: Path, tmp: Path, n: int, timeout: float) -> list[float]:
    """Seconds of ``n`` ingests of ``folder`` one after another in one fresh process."""
    script = f"""
import json, time
from pathlib import Path
from ragclinic.config import Settings
from ragclinic.ingest.runner import ingest
from ragclinic.store.kb import KnowledgeBase
out = []
for i in range({n}):
    kb = KnowledgeBase.open(Settings.load(Path({str(tmp)!r}) / f"kbp-{timeout}-{{i}}", embedder="fake",
                                          parse_timeout_s={timeout}), create=True)
    kb.lock()
    t = time.perf_counter()
    ingest(kb, [Path({str(folder)!r})])
    out.append(time.perf_counter() - t)
    kb.close()
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=["x", "mixed", "cjk"], default="x")
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.overhead:
            overhead(args.runs, tmp)
            return
        settings = Settings()
        for n in SIZES:
            path = tmp / f"token-{n}.txt"
            path.write_text(token(n, args.kind))
            p, c, chunks = parse_and_chunk(path, settings)
            print(f"{n:>10,} chars ({args.kind}): parse {p:6.2f} s  chunk {c:6.2f} s  total {p + c:6.2f} s  "
                  f"{chunks} chunks", flush=True)
        seconds, result = cli_ingest([tmp / f"token-{SIZES[-1]}.txt"], tmp / "kb")
        print(f"full `ragclinic ingest` of the {SIZES[-1]:,}-character file (fake embedder, RAGCLINIC_LLM=none): "
              f"{seconds:.2f} s wall, {result['chunks']} chunks, failed {result['failed']}")


if __name__ == "__main__":
    main()
