"""The kill -9 soak (issue 19, part 3): N kills at random moments of `ask`, `eval rag` (resumed from its
checkpoint), `serve` under load (questions, searches and uploads from 3 clients) and `ingest --sync` (files
removed, added and edited between syncs), all on one knowledge base, in random order.

    .venv/bin/python bench/kill_soak.py --kills 50 --out bench/out/kill-soak.json

After every kill: the knowledge base opens and passes the integrity check, its indexes catch up, every document,
trace, eval row and acknowledged upload stored before is still there, every stored trace is whole. At the end
the sync and the eval are run to completion and compared with clean runs. The harness is tests/soak.py.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from output import emit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--max-rounds", type=int, default=200, help="stop here even if fewer kills landed")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    from soak import COMMANDS, Soak

    t0 = time.monotonic()
    rng = random.Random(a.seed)
    per = collections.defaultdict(lambda: {"rounds": 0, "killed": 0, "finished": 0, "acknowledged": 0,
                                           "lost": 0, "broken": 0})
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        s = Soak(Path(d), seed=a.seed)
        kills = rounds = 0
        while kills < a.kills and rounds < a.max_rounds:
            order = list(COMMANDS)
            rng.shuffle(order)
            for c in order:
                r = s.round(c)
                rounds += 1
                kills += r.killed
                p = per[c]
                p["rounds"] += 1
                p["killed" if r.killed else "finished"] += 1
                p["acknowledged"] += r.served
                p["lost"] += len(r.lost)
                p["broken"] += len(r.broken)
                problems += [f"{c} @ {r.after_s:.2f}s: {x}" for x in r.lost + r.broken]
                print(f"[{rounds:3d}] {c:11s} {'killed' if r.killed else 'finished':8s} at {r.after_s:4.2f} s, "
                      f"{r.served} acknowledged, lost {len(r.lost)}, broken {len(r.broken)}", flush=True)
                if kills >= a.kills:
                    break
        end = s.finish()
    result = {"kills": kills, "rounds": rounds, "per_command": dict(per),
              "lost": sum(p["lost"] for p in per.values()), "broken": sum(p["broken"] for p in per.values()),
              "problems": problems[:50], "final": end, "seconds": round(time.monotonic() - t0, 1),
              "seed": a.seed}
    emit(result, a.out)


if __name__ == "__main__":
    main()
