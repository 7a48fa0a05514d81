"""Prompt and generation tokens/s of llama.cpp CPU builds and variants, side by side in one run.

Each measurement is a fresh process that loads the model in-process (``llm_isolation=inline``) with one CPU
variant (``llm_cpu_variant``; ``auto`` = the runtime dispatch's choice), warms up, then times one call:
prompt tokens/s = prompt tokens / time to the first generated token; generation tokens/s = (tokens - 1) /
time from the first to the last token. Configurations are interleaved run by run, so machine noise hits
them alike; medians are reported. ``--python`` adds another interpreter (a venv with another build, e.g. a
fixed-ISA one) as a configuration.

    python bench/llama_variants_bench.py --model local --variants auto,haswell,skylakex,icelake,zen4 --runs 3 \
        --python "fixed AVX2 build=/tmp/avx2-venv/bin/python"
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

PASSAGE = ("The risk-free rate is the return on an investment with no default risk. Short-dated treasury bills "
           "are the usual proxy for it, because their price barely moves with interest rates and the issuer "
           "is not expected to default. ")


def child(model: str, variant: str, prompt_words: int, gen_tokens: int) -> dict:
    from ragclinic.config import Settings
    from ragclinic.models.llama import LlamaModel
    from ragclinic.models.llm import Message
    from ragclinic.models.weights import WEIGHTS

    s = Settings.load(None, llm=model, llm_isolation="inline",
                      llm_cpu_variant="" if variant in ("auto", "builtin", "service") else variant)
    t0 = time.perf_counter()
    if variant == "service":  # the same model in ragclinic's worker process (what `ask` uses)
        from ragclinic.models.service import ModelService, ServiceModel

        svc = ModelService(model, {"cache_dir": str(s.cache_dir), "llm_n_ctx": s.llm_n_ctx, "llm_threads": 0,
                                   "seed": 0})
        lm = ServiceModel(svc)
        chosen = svc.info["backend"]["variant"] + " (worker)"
    else:
        lm = LlamaModel(WEIGHTS[model], s)
        chosen = lm.backend.variant
    load = time.perf_counter() - t0
    lm.chat([Message("user", "Say OK.")], max_tokens=2)  # warm-up
    text = " ".join((PASSAGE * 40).split()[:prompt_words])
    msgs = [Message("system", "You are a careful writer."),
            Message("user", f"{text}\n\nWrite a long essay about the passage above. Run {time.time()}.")]
    stamps: list[float] = []
    t1 = time.perf_counter()
    done = lm.chat(msgs, max_tokens=gen_tokens, on_token=lambda _p: stamps.append(time.perf_counter()))
    first = stamps[0] - t1
    gen = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return {"variant": chosen, "load_s": round(load, 2), "prompt_tokens": done.prompt_tokens,
            "prompt_tps": round(done.prompt_tokens / first, 2), "gen_tokens": done.completion_tokens,
            "gen_tps": round(gen, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local")
    ap.add_argument("--variants", default="auto,haswell,skylakex,icelake,zen4")
    ap.add_argument("--python", action="append", default=[], metavar="LABEL=PYTHON",
                    help="another interpreter (another build) measured as one more configuration")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--service", action="store_true", help="also measure the model in ragclinic's worker process")
    ap.add_argument("--prompt-words", type=int, default=260)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.model, a.child, a.prompt_words, a.gen_tokens)))
        return
    configs = [(f"dispatch build: {v}", sys.executable, v) for v in a.variants.split(",")]
    if a.service:
        configs.append(("dispatch build, model service (worker process)", sys.executable, "service"))
    configs += [(label, py, "builtin") for label, _, py in (x.partition("=") for x in a.python)]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    rows: dict[str, list[dict]] = {c[0]: [] for c in configs}
    for run in range(a.runs):
        for label, py, variant in configs:
            cmd = [py, __file__, "--child", variant, "--model", a.model, "--prompt-words", str(a.prompt_words),
                   "--gen-tokens", str(a.gen_tokens)]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                rows[label].append({"error": p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]})
            else:
                rows[label].append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f"run {run + 1}/{a.runs} {label}: {rows[label][-1]}", file=sys.stderr, flush=True)
    summary = []
    for label, got in rows.items():
        ok = [g for g in got if "error" not in g]
        if not ok:
            summary.append({"config": label, "error": got[0]["error"]})
            continue
        summary.append({"config": label, "variant": ok[0]["variant"], "runs": len(ok),
                        "prompt_tps": statistics.median(g["prompt_tps"] for g in ok),
                        "gen_tps": statistics.median(g["gen_tps"] for g in ok),
                        "load_s": statistics.median(g["load_s"] for g in ok),
                        "prompt_tokens": ok[0]["prompt_tokens"]})
    base = next((s for s in summary if s.get("variant") == "haswell"), None)
    print("| configuration | variant loaded | prompt tok/s | generation tok/s | vs haswell (prompt / gen) | load s |")
    print("|---|---|---|---|---|---|")
    for s in summary:
        if "error" in s:
            print(f"| {s['config']} | error: {s['error']} | | | | |")
            continue
        rel = (f"{s['prompt_tps'] / base['prompt_tps']:.2f} / {s['gen_tps'] / base['gen_tps']:.2f}" if base else "")
        print(f"| {s['config']} | {s['variant']} | {s['prompt_tps']:.1f} | {s['gen_tps']:.1f} | {rel} | "
              f"{s['load_s']:.1f} |")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"model": a.model, "summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
