"""Answers in seconds: the demo questions before / after the speed work, side by side in one run.

Two configurations over the same demo knowledge base (the corpus `ragclinic demo` writes), alternating question
by question so both see the same machine load: ``before`` = whole passages in the prompt, every prompt
evaluated whole and no doctor fast path (``context_select = false``, ``llm_prefix_cache = false``,
``doctor_fast_evidence = 1.01``), ``after`` = the defaults. Each arm has its own model worker, and each
question is asked once per arm (a repeat would be answered from the model's memory of identical calls): the
demo's four questions and eight more about its corpus. Per arm: seconds per question for the plain pipeline
(the doctor's baseline run) and with the doctor, time to the first streamed answer token, prompt tokens
given and evaluated, the per-layer split, the answers side by side. Then the answer cache: each question asked again
(re-typed) with the cache on — the lookup's time and whether it hit — and, after a document changes, whether
the next ask is fresh. Last, as a user sees it: `ragclinic ask` in a new process on a terminal (a pty),
the time from launch to the first answer byte and to exit, for the demo's first two questions.

    python bench/speed_bench.py --llm local --out bench/out/speed-demo.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


from ragclinic.clinic import Clinic
from ragclinic.demo.corpus import QUESTIONS, write_demo_corpus
from ragclinic.pipeline.cache import AnswerCacheFront

from output import emit  # noqa: E402

ARMS = {"before": {"context_select": False, "llm_prefix_cache": False, "doctor_fast_evidence": 1.01}, "after": {}}
MORE = ("What does the quality of the retrieval step bound?", "What happens to chunks that end in the middle of a "
        "sentence?", "What is the yield of the 10-year treasury note?", "How long did questions about risk-free "
        "rates fail?", "What is the default chunk_max_tokens?", "无风险利率通常以什么近似？", "诊断时应该怎样排查？",
        "每次提问都会记录什么？")


def _clinic(kb_dir: Path, llm: str, overrides: dict) -> Clinic:
    return Clinic.open(kb_dir, llm=llm, **overrides)


def _one(clinic: Clinic, q: str) -> dict:
    """One question with the doctor: the plain figures are its baseline run's (the root trace)."""
    first: list[float] = []
    t0 = time.perf_counter()

    def on_token(piece: str) -> None:
        if not first and piece.strip():
            first.append((time.perf_counter() - t0) * 1000)

    res = clinic.consult(q, doctor=True, on_token=on_token, cache=False).result
    ms = (time.perf_counter() - t0) * 1000
    trace = res.trace
    given = sum(c.prompt_tokens for c in trace.model_calls)
    reused = sum(c.prompt_reused for c in trace.model_calls)
    return {"question": q, "plain_ms": round(trace.total_ms, 1), "doctor_ms": round(ms, 1),
            "ttft_ms": round(first[0], 1) if first else None, "prompt_tokens": given, "prompt_evaluated": given - reused,
            "layers_ms": {s.layer: round(s.duration_ms, 1) for s in trace.spans if s.status == "ok"},
            "doctor": res.summary["outcome"], "fast_path": res.summary.get("fast_path", ""),
            "initial": res.initial.text[:200], "answer": res.answer.text[:200]}


def _summary(rows: list[dict]) -> dict:
    med = lambda k: round(statistics.median(r[k] for r in rows if r[k] is not None), 1)  # noqa: E731
    layers = sorted({k for r in rows for k in r["layers_ms"]})
    return {"n": len(rows), "p50_plain_ms": med("plain_ms"), "p50_doctor_ms": med("doctor_ms"),
            "p50_ttft_ms": med("ttft_ms"), "max_ttft_ms": max(r["ttft_ms"] or 0 for r in rows),
            "p50_prompt_tokens": med("prompt_tokens"), "p50_prompt_evaluated": med("prompt_evaluated"),
            "p50_layer_ms": {k: round(statistics.median(r["layers_ms"].get(k, 0.0) for r in rows), 1) for k in layers}}


def _cache_figures(kb_dir: Path, llm: str, docs: Path) -> dict:
    out = []
    with _clinic(kb_dir, llm, {"answer_cache": True}) as clinic:
        for q in QUESTIONS:
            clinic.consult(q, doctor=False)  # answered, or already cached
            retyped = "  " + q.rstrip("?？").lower() + " ?"
            t0 = time.perf_counter()
            hit = clinic.consult(retyped, doctor=False)
            ms = round((time.perf_counter() - t0) * 1000, 2)
            out.append({"question": q, "hit": hit.cached, "lookup_ms": ms if hit.cached else None})
    # a document changes: the same question must not come from the cache
    first = sorted(docs.rglob("*.md"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n\nA sentence added after the first answers.\n",
                     encoding="utf-8")
    with _clinic(kb_dir, "none", {"answer_cache": True}) as clinic:
        clinic.ingest(docs)
        front = AnswerCacheFront(clinic, enabled=True)
        stale = [front.lookup(q, None, False) is not None for q in QUESTIONS]
        front.close()
    hits = [x["lookup_ms"] for x in out if x["lookup_ms"] is not None]
    return {"lookups": out, "p50_lookup_ms": statistics.median(hits) if hits else None,
            "hits": sum(x["hit"] for x in out), "stale_after_change": sum(stale)}


def _cli(kb_dir: Path, llm: str, q: str) -> dict:
    """`ragclinic ask` in a new process with its stdout on a pty: seconds to the first answer byte, to exit."""
    import os
    import pty
    import select
    import subprocess
    import sys

    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    master, slave = pty.openpty()
    t0 = time.perf_counter()
    p = subprocess.Popen([exe, "ask", q, "--kb", str(kb_dir), "--llm", llm, "--no-cache"], stdout=slave,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    first, text = None, b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            text += chunk
            if first is None and text.strip():
                first = time.perf_counter() - t0
        elif p.poll() is not None:
            break
    p.wait()
    os.close(master)
    return {"question": q, "first_byte_s": round(first, 2) if first else None,
            "exit_s": round(time.perf_counter() - t0, 2), "exit_code": p.returncode,
            "output": text.decode("utf-8", "replace")[:160]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        docs, kb_dir = Path(d) / "docs", Path(d) / "kb"
        write_demo_corpus(docs)
        with Clinic.open(kb_dir, llm="none") as c:
            c.ingest(docs)
        pipes = {arm: _clinic(kb_dir, a.llm, o) for arm, o in ARMS.items()}
        rows: dict[str, list[dict]] = {arm: [] for arm in ARMS}
        for arm in ARMS:  # warm-up, not measured: model loads, e5 loads, first-call costs
            _one(pipes[arm], "What is a warm-up question?")
        questions = list(QUESTIONS) + list(MORE)
        for i, q in enumerate(questions):
            for arm in (list(ARMS) if i % 2 == 0 else list(reversed(ARMS))):
                rows[arm].append(_one(pipes[arm], q))
        for p in pipes.values():
            p.close()
        result = {"llm": a.llm, "questions": questions}
        for arm, rs in rows.items():
            result[arm] = {**_summary(rs), "rows": rs}
        b, f = result["before"], result["after"]
        result["ratios"] = {k: round(f[k] / b[k], 3) for k in ("p50_plain_ms", "p50_doctor_ms", "p50_ttft_ms",
                                                             "p50_prompt_tokens", "p50_prompt_evaluated") if b[k]}
        result["cli"] = [_cli(kb_dir, a.llm, q) for q in QUESTIONS[:2]]
        result["cache"] = _cache_figures(kb_dir, a.llm, docs)
    emit(result, a.out)


if __name__ == "__main__":
    main()
