"""Cold start of the `ragclinic` command (issue 33): `--help`, `ask --help`, and a cold `ask` up to its first retrieval.

Each figure is the median of ``--runs`` fresh processes (min and max beside it), run one after another:

- ``ragclinic --help`` and ``ragclinic ask --help``: the wall time of the whole command;
- ``ragclinic ask QUESTION --kb KB --llm X --no-cache --json`` for each ``--llm``: the seconds from starting the
  process to the start of its first retrieval (the root trace's ``retrieve`` span: the trace's ``created`` wall
  clock minus its total time, plus the span's ``started_ms``), the retrieve span itself, and the whole command.
  ``--no-cache``: a repeated question is otherwise answered from the answer cache, without a retrieval.

The demo knowledge base is built first when ``--kb`` is not given (``ragclinic demo --llm none``, in a temporary
folder). The command under test is ``--ragclinic`` (default: the one beside this Python). Prints one JSON object
(``--out FILE`` also writes it) and a Markdown table for bench/RESULTS.md.

    .venv/bin/python bench/cold_start.py --runs 5 --llm none,local
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "What does duration measure?"


def main() -> None:
    args = _args()
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"), COLUMNS="100")
    exe = [args.ragclinic]
    with tempfile.TemporaryDirectory(prefix="ragclinic-cold-") as tmp:
        kb = args.kb or _demo_kb(exe, Path(tmp), env)
        rows = {"ragclinic --help": _walls(exe + ["--help"], args.runs, env),
                "ragclinic ask --help": _walls(exe + ["ask", "--help"], args.runs, env)}
        asks = {llm: _asks(exe, kb, llm, args, env) for llm in args.llm.split(",") if llm}
    result = {"runs": args.runs, "question": args.question, "kb": str(kb), "ragclinic": args.ragclinic,
              "help": rows, "ask": asks}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    print(_markdown(result))


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5, help="processes per figure (the median is reported)")
    p.add_argument("--llm", default="none,local", help="the --llm values of the cold asks, comma-separated")
    p.add_argument("--kb", type=Path, help="knowledge base (default: the demo's, built in a temporary folder)")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--doctor", action=argparse.BooleanOptionalAction, default=True,
                   help="ask with the doctor (the default) or --no-doctor; the time before retrieval is the same")
    p.add_argument("--ragclinic", default=str(Path(sys.executable).with_name("ragclinic")))
    p.add_argument("--out", help="also write the JSON here")
    return p.parse_args()


def _demo_kb(exe: list[str], tmp: Path, env: dict) -> Path:
    folder = tmp / "demo"
    subprocess.run(exe + ["demo", "--dir", str(folder), "--llm", "none", "--json"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return folder / ".ragclinic"


def _stats(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3), "max": round(max(xs), 3),
            "all": [round(x, 3) for x in xs]}


def _walls(cmd: list[str], runs: int, env: dict) -> dict:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
    return {"command": " ".join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd)), **_stats(walls)}


def _asks(exe: list[str], kb: Path, llm: str, args, env: dict) -> dict:
    cmd = exe + ["ask", args.question, "--kb", str(kb), "--llm", llm, "--no-cache", "--json"]
    if not args.doctor:
        cmd.append("--no-doctor")
    before, retrieve, whole = [], [], []
    for _ in range(args.runs):
        t0 = time.time()
        done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        whole.append(time.time() - t0)
        trace = _trace(exe, kb, json.loads(done.stdout)["trace_id"], env)
        span = next(s for s in trace["spans"] if s["layer"] == "retrieve")
        total_ms = max(s["started_ms"] + s["duration_ms"] for s in trace["spans"])
        started = trace["created"] - total_ms / 1000 + span["started_ms"] / 1000
        before.append(started - t0)
        retrieve.append(span["duration_ms"] / 1000)
    shown = " ".join([Path(cmd[0]).name, "ask", json.dumps(args.question)] + cmd[3:])
    return {"command": shown, "before_retrieval_s": _stats(before), "retrieve_s": _stats(retrieve),
            "whole_s": _stats(whole)}


def _trace(exe: list[str], kb: Path, trace_id: str, env: dict) -> dict:
    out = subprocess.run(exe + ["trace", "show", trace_id, "--kb", str(kb), "--json"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def _markdown(r: dict) -> str:
    lines = [f"| measure (median of {r['runs']}; min–max) | seconds |", "|---|---|"]
    for row in r["help"].values():
        lines.append(f"| `{row['command']}` | {row['median']:.2f} ({row['min']:.2f}–{row['max']:.2f}) |")
    for llm, a in r["ask"].items():
        b, w = a["before_retrieval_s"], a["whole_s"]
        lines.append(f"| cold ask `--llm {llm}`: process start → first retrieval | "
                     f"{b['median']:.2f} ({b['min']:.2f}–{b['max']:.2f}) |")
        lines.append(f"| cold ask `--llm {llm}`: whole command | {w['median']:.2f} ({w['min']:.2f}–{w['max']:.2f}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
