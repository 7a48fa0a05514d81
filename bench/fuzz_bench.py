"""Issue 19's fuzzing figures: mutation fuzzing of every parser from a real seed file (ingest/parse/fuzz.py),
for a fixed time per format; executions, distinct crashes (by exception type and first line) and the slowest
input. Crashing inputs are written to OUT/crashers/ to become regression fixtures (tests/fuzz/crashers/).

    python bench/fuzz_bench.py --out bench/out/fuzz [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main() -> None:
    from ragclinic.ingest.parse.fuzz import check, mutate, seeds

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=60.0, help="fuzzing time per format")
    a = ap.parse_args()
    (a.out / "crashers").mkdir(parents=True, exist_ok=True)
    logging.disable(logging.CRITICAL)  # pdfminer logs every damaged xref entry
    rows = {}
    for suffix, seed in seeds().items():
        rng, t_end, n, crashes, slowest = random.Random(19), time.monotonic() + a.seconds, 0, {}, 0.0
        while time.monotonic() < t_end:
            data = mutate(seed, rng) if rng.random() < 0.9 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 512)))
            t0 = time.perf_counter()
            crash = check(suffix, data, time_limit=30)
            slowest = max(slowest, time.perf_counter() - t0)
            n += 1
            if crash is not None:
                key = crash.error.split("\n")[0][:80]
                if key not in crashes:
                    crashes[key] = len(crashes)
                    (a.out / "crashers" / f"{suffix[1:]}-{crashes[key]}{suffix}").write_bytes(data)
        rows[suffix] = {"executions": n, "crashes": len(crashes), "kinds": list(crashes), "slowest_s": round(slowest, 2)}
        print(suffix, json.dumps(rows[suffix]), flush=True)
    (a.out / "summary.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
