"""End-to-end ask with the local language models: latency per layer, time to first token, total, RSS.

    .venv/bin/python bench/ask_bench.py --kb <SciFact KB from retrieval_bench.py> --questions 8 --llm local local-small

Questions are the first SciFact test claims turned into questions ("Is it true that ...?"), asked against
the SciFact knowledge base so that the context (5 passages of up to 320 e5 tokens) is 1–1.5k model
tokens. The gate refuses most of them (the claims are seldom stated outright), so after each ask the
generate layer is re-run on the same trace with the route forced to "answer" (``Pipeline.rerun``): the
generation figures (prompt tokens, time to first token, generate ms) come from those runs, and
"TTFT, answering" adds the pipeline's own retrieve + scope + gate time to the forced run's first token.
Models run one after another in this process; RSS is the process's resident set after each model's
questions (model weights are mmap'd and count once they are touched).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]

from scifact import load_qrels, load_queries  # noqa: E402  (bench/ is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--cache", type=Path, help="embedding cache folder of that KB's runs")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--llm", nargs="+", default=["local", "local-small"])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "ask.json")
    args = ap.parse_args()
    if args.cache:
        os.environ["RAGCLINIC_CACHE_DIR"] = str(args.cache)
    import psutil

    from ragclinic.clinic import Clinic

    qids = [q.query_id for q in load_qrels()]
    claims = load_queries()
    questions = [f"Is it true that {claims[q].rstrip('.')[0].lower()}{claims[q].rstrip('.')[1:]}?"
                 for q in dict.fromkeys(qids)][:args.questions]
    results = {}
    for name in args.llm:
        clinic = Clinic.open(args.kb, llm=name)
        t0 = time.perf_counter()
        if clinic.lm is None:
            raise SystemExit(f"{name}: {clinic.model_flags}")
        load_s = time.perf_counter() - t0
        pipe = clinic.pipeline
        rows = []
        for q in questions:
            first: list[float] = []
            t = time.perf_counter()
            state, trace = pipe.ask(q, on_token=lambda _p: first or first.append(time.perf_counter()), save=False)
            total = time.perf_counter() - t
            spans = {s.layer: s.duration_ms for s in trace.spans}
            forced_first: list[float] = []
            t_f = time.perf_counter()
            _, forced = pipe.rerun(trace, "generate", save=False,
                                   change=lambda st: replace(st, decision=replace(st.decision, route="answer")),
                                   on_token=lambda _p: forced_first or forced_first.append(time.perf_counter()))
            before_ms = spans["retrieve"] + spans["scope"] + spans["gate"]
            spans["generate_forced"] = forced.span("generate").duration_ms
            chat = [c for c in forced.model_calls if c.kind == "chat"]
            rows.append({"total_s": total, "ttft_s": (first[0] - t) if first else None, **spans,
                         "ttft_answering_s": before_ms / 1000 + ((forced_first[0] - t_f) if forced_first else 0),
                         "total_answering_s": (before_ms + spans["generate_forced"]) / 1000,
                         "prompt_tokens": sum(c.prompt_tokens for c in chat),
                         "completion_tokens": sum(c.completion_tokens for c in chat),
                         "judge_calls": sum(c.kind == "probs" for c in trace.model_calls),
                         "route": state.answer.route})
            print(name, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in rows[-1].items()}, flush=True)
        med = lambda k: statistics.median(r[k] for r in rows if r[k] is not None)  # noqa: E731
        results[name] = {"load_s": round(load_s, 2), "questions": len(rows),
                         **{f"{k}_p50": round(med(k), 3) for k in ("total_s", "ttft_s", "retrieve", "scope", "gate",
                                                                    "generate", "generate_forced", "prompt_tokens",
                                                                    "completion_tokens", "judge_calls",
                                                                    "ttft_answering_s", "total_answering_s")},
                         "answered": sum(r["route"] == "answer" for r in rows),
                         "rss_mb": round(psutil.Process().memory_info().rss / 2**20)}
        clinic.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print("\n| model | load s | retrieve ms | scope ms | gate ms (judge calls) | answered by the gate | total s as asked | "
          "prompt tokens | generate ms | TTFT s, answering | total s, answering | RSS MB |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['load_s']} | {r['retrieve_p50']:.0f} | {r['scope_p50']:.0f} | {r['gate_p50']:.0f} "
              f"({r['judge_calls_p50']:.0f}) | {r['answered']}/{r['questions']} | {r['total_s_p50']:.1f} | "
              f"{r['prompt_tokens_p50']:.0f} | {r['generate_forced_p50']:.0f} | {r['ttft_answering_s_p50']:.1f} | "
              f"{r['total_answering_s_p50']:.1f} | {r['rss_mb']} |")

if __name__ == "__main__":
    main()
