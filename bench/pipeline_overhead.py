"""The pipeline's own time without a model, for a refactor's before/after (issue 34): median ms of one question
(every layer, the trace written through the codec, saved) and of reopening its trace from the store.

    .venv/bin/python bench/pipeline_overhead.py                                       # this tree
    PYTHONPATH=/tmp/old/src .venv/bin/python bench/pipeline_overhead.py               # another checkout's code
Run both in one session, alternately, and compare medians (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

QUESTIONS = ["What is the risk-free rate?", "What is usually used as a proxy for the risk-free rate?",
             "How long is a Treasury bill?", "无风险利率通常用什么代替？", "Who sets the coupon of a bond?"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    import ragclinic
    from helpers import BOND_DOCS, build_kb
    from ragclinic.trace.store import load_trace

    with tempfile.TemporaryDirectory() as tmp:
        kb = build_kb(Path(tmp), BOND_DOCS)
        from ragclinic import Clinic

        clinic = Clinic.around(kb, model=None)
        ask_ms, load_ms = [], []
        for _ in range(args.rounds):
            for q in QUESTIONS:
                t0 = time.perf_counter()
                a = clinic.ask(q, doctor=True, cache=False)
                ask_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                load_trace(kb.db, a.trace_id)
                load_ms.append((time.perf_counter() - t0) * 1000)
        kb.close()
    print(json.dumps({"code": str(Path(ragclinic.__file__).parent), "asks": len(ask_ms),
                      "ask_ms_p50": round(statistics.median(ask_ms), 2),
                      "trace_load_ms_p50": round(statistics.median(load_ms), 3)}))


if __name__ == "__main__":
    main()
