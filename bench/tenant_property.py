"""The whole-surface multi-tenant property (tests/server/test_http_property.py) at bench size: hypothesis-drawn
sequences of every route by an admin key and three tenant keys over a knowledge base with the knowledge graph,
until --requests requests were made; every byte a tenant key gets back is checked for other owners' markers,
entity names, chunk and doc ids and server paths, and other owners' ids must read like ids that do not exist.

    .venv/bin/python bench/tenant_property.py --requests 10000 --seed 32 --out bench/out/tenant-property.json

Printed: requests by route, statuses, leaks (with the first few: route, key, what leaked, around it, and the
action sequence that showed the first one) and seconds. Exit status 1 when anything leaked or answered 5xx.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from output import emit  # noqa: E402
from tests.server.property_actions import run_property  # noqa: E402
from tests.server.property_world import open_world  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=32, help="hypothesis seed (the test itself is derandomised)")
    ap.add_argument("--examples", type=int, default=10, help="leak examples to print")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tenant-property-") as tmp, open_world(Path(tmp), args.seed) as w:
        seconds = run_property(w, args.requests, seed=args.seed)
        print(w.report(seconds, examples=args.examples))
        if w.leaks:
            print("the sequence that showed the first leak:", w.first_leak_actions)
        result = {"requests": sum(w.routes.values()), "seconds": round(seconds, 1), "uploads": w.uploads,
                  "routes": dict(sorted(w.routes.items())),
                  "statuses": {str(k): v for k, v in sorted(w.statuses.items())},
                  "leaks": len(w.leaks), "leaks_by": dict(Counter(f"{x.route}: {x.what}" for x in w.leaks)),
                  "own_hits": w.own, "graph_answers": w.graph, "leak_examples": [x.line() for x in w.leaks[:50]],
                  "first_leak_actions": w.first_leak_actions}
    emit(result, args.out)
    return 1 if result["leaks"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
