"""The whole `ragclinic ask` command beside the simple peer's in-process answer, item by item (issue 33).

For each item of an RGB-format file (query, answer, positive, negative passages): its passages (up to 3 positive
and 4 same-topic negative) are written as text files and ingested into a knowledge base of their own; then, side
by side in one run,

- **peer**: every passage in one prompt of the same model, "answer briefly, or say insufficient information"
  (eval/tasks/naive.py), in this process with the model warm — the yardstick's best case;
- **ask**: `ragclinic ask QUESTION --kb KB --json --no-cache` as a user runs it (a new process each time: import,
  model-worker start, retrieval, the doctor on by default), wall-clock.

Reported: accuracy of each, seconds p50 and the ratio of medians, the answers' form violations
(eval/answer_form.py, the same check for both), and output tokens per answer (the trace's sampled tokens vs the
peer's). Items are in the file's order; `--split heldout` keeps the held-out half (bench/make_constraint_swap.py
--split).

    python bench/ask_vs_peer.py --data bench/out/halueval-test-rgb-heldout.jsonl --limit 10 --out bench/out/ask-vs-peer
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin" / "ragclinic"


def _answers(item) -> list[list[str]]:
    a = item["answer"]
    return [a] if isinstance(a, str) else [[x] if isinstance(x, str) else list(x) for x in a]


def _build_kb(item, folder: Path, cache: str) -> Path:
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    passages = list(item["positive"])[:3] + list(item.get("negative", []))[:4]
    for i, text in enumerate(passages, start=1):
        (docs / f"p{i}.txt").write_text(text, encoding="utf-8")
    kb = folder / "kb"
    env = dict(os.environ, RAGCLINIC_CACHE_DIR=cache)
    subprocess.run([str(BIN), "ingest", str(docs), "--kb", str(kb), "--json"], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return kb


def _ask(question: str, kb: Path, llm: str, cache: str) -> tuple[dict, float]:
    env = dict(os.environ, RAGCLINIC_CACHE_DIR=cache)
    t0 = time.perf_counter()
    r = subprocess.run([str(BIN), "ask", question, "--kb", str(kb), "--llm", llm, "--json", "--no-cache"],
                       capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ragclinic ask failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout), seconds


def _sampled_tokens(payload: dict, kb: Path, cache: str) -> int:
    """The generate layer's output tokens, from the trace."""
    env = dict(os.environ, RAGCLINIC_CACHE_DIR=cache)
    r = subprocess.run([str(BIN), "trace", "show", payload["trace_id"], "--kb", str(kb), "--json"],
                       capture_output=True, text=True, env=env)
    trace = json.loads(r.stdout)
    return sum(c["completion_tokens"] for c in trace.get("model_calls", []) if c["kind"] == "chat"
               and c.get("layer", "generate") == "generate")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from ragclinic.config import Settings
    from ragclinic.eval.answer_form import form_violations
    from ragclinic.text.answers import answer_correct
    from ragclinic.eval.tasks.naive import naive_messages, refused, MAX_TOKENS
    from ragclinic.models.factory import create_language_model

    cache = os.environ.get("RAGCLINIC_CACHE_DIR", str(Path.home() / ".cache" / "ragclinic"))
    items = [json.loads(x) for x in a.data.read_text(encoding="utf-8").splitlines() if x.strip()][:a.limit]
    a.out.mkdir(parents=True, exist_ok=True)
    lm = create_language_model(a.llm, Settings(cache_dir=Path(cache)))
    rows = []
    for k, item in enumerate(items):
        kb = _build_kb(item, a.out / f"item{k}", cache)
        passages = list(item["positive"])[:3] + list(item.get("negative", []))[:4]
        t0 = time.perf_counter()
        done = lm.chat(naive_messages(item["query"], passages), max_tokens=MAX_TOKENS)
        peer_s = time.perf_counter() - t0
        payload, ask_s = _ask(item["query"], kb, a.llm, cache)
        answers = _answers(item)
        row = {"question": item["query"], "expected": answers,
               "peer": {"answer": done.text.strip(), "seconds": round(peer_s, 2), "tokens": done.completion_tokens,
                        "correct": not refused(done.text) and answer_correct(done.text, answers),
                        "form": form_violations({"answer": done.text, "citations": []}, item["query"])},
               "ask": {"answer": payload["answer"], "seconds": round(ask_s, 2), "refused": payload["refused"],
                       "tokens": _sampled_tokens(payload, kb, cache),
                       "correct": not payload["refused"] and answer_correct(payload["answer"], answers),
                       "form": form_violations(payload, item["query"]), "notes": payload.get("notes", []),
                       "flags": payload.get("flags", [])}}
        rows.append(row)
        print(json.dumps({"k": k, "peer": row["peer"]["seconds"], "ask": row["ask"]["seconds"],
                          "peer_answer": row["peer"]["answer"][:60], "ask_answer": row["ask"]["answer"][:80]},
                         ensure_ascii=False), flush=True)
    summary = {}
    for arm in ("peer", "ask"):
        rs = [r[arm] for r in rows]
        summary[arm] = {"accuracy": round(sum(r["correct"] for r in rs) / len(rs), 3),
                        "p50_s": round(statistics.median(r["seconds"] for r in rs), 2),
                        "form_violations": sum(bool(r["form"]) for r in rs),
                        "p50_output_tokens": statistics.median(r["tokens"] for r in rs)}
    summary["ratio_p50"] = round(summary["ask"]["p50_s"] / summary["peer"]["p50_s"], 2)
    summary["n"] = len(rows)
    (a.out / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (a.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
