"""Load on `ragclinic serve` over 127.0.0.1: N concurrent clients for a fixed time (bounded: it stops by itself).

    .venv/bin/python bench/serve_load_bench.py --llm fake --clients 32 --seconds 60 --out bench/out/serve-load-fake.json
    .venv/bin/python bench/serve_load_bench.py --llm local --clients 8 --seconds 120 --ask-share 0.3 --unique --out ...

A knowledge base of the demo corpus; a real uvicorn server on a free loopback port with a key; each client
loops: /v1/retrieval, or with probability --ask-share /v1/ask (doctor off; the scripted fake model or the
local one). Reported: requests, statuses (5xx must be 0), p50 / p99 latency per route, throughput, and the
model queue depth sampled from /metrics every second.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from output import emit  # noqa: E402

QUESTIONS = ["What is usually used as a proxy for the risk-free rate?", "What does duration measure?",
             "知识库为每个段落建立了哪些索引？", "What is the default chunk_max_tokens?", "诊断时应该怎样排查？"]
KEY = "load-test-key-0001"


def _server(kb: Path, llm: str):
    import uvicorn

    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    model = ScriptedLanguageModel(["Short-dated government bills are the usual proxy [1]."], yes_prob=0.9) \
        if llm == "fake" else None
    app = create_app(Settings.load(kb, llm=llm if llm != "fake" else "none", answer_cache=False), Keys([KEY]),
                     model=model)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not (server.started and server.servers):
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def _client(base: str, until: float, ask_share: float, seed: int, out: list, unique: bool = False) -> None:
    import httpx

    rnd = random.Random(seed)
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=base, headers=headers, timeout=600) as c:
        while time.monotonic() < until:
            q = rnd.choice(QUESTIONS)
            if unique:  # no two prompts alike: the model's memory of identical calls cannot answer them
                q = f"{q} ({''.join(rnd.choice('bcdfghjklmnpqrstvwxz') for _ in range(6))})"  # no digits: no number to check
            route = "/v1/ask" if rnd.random() < ask_share else "/v1/retrieval"
            body = {"question": q, "doctor": False} if route == "/v1/ask" else {"query": q, "k": 10}
            t0 = time.perf_counter()
            try:
                status = c.post(route, json=body).status_code
            except httpx.HTTPError as e:
                status = f"error: {type(e).__name__}"
            out.append((route, status, time.perf_counter() - t0))


def _queue_sampler(base: str, until: float, samples: list) -> None:
    import httpx

    while time.monotonic() < until:
        try:
            text = httpx.get(f"{base}/metrics", timeout=5, headers={"Authorization": f"Bearer {KEY}"}).text  # admin: /metrics needs it
            m = re.search(r"^ragclinic_model_queue_depth (\S+)$", text, re.M)
            samples.append(float(m.group(1)) if m else 0.0)
        except httpx.HTTPError:
            pass
        time.sleep(1.0)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))] * 1000, 1) if xs else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="fake", help="fake (scripted, no model) | local | local-small")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--ask-share", type=float, default=0.1, help="share of requests that go to /v1/ask")
    ap.add_argument("--unique", action="store_true",
                    help="make every question unique (else repeated questions are answered from the model's memo)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    from ragclinic.clinic import Clinic
    from ragclinic.demo.corpus import write_demo_corpus

    with tempfile.TemporaryDirectory() as d:
        docs, kb = Path(d) / "docs", Path(d) / "kb"
        write_demo_corpus(docs)
        with Clinic.open(kb, llm="none") as c:
            c.ingest(docs)
        server, base = _server(kb, a.llm)
        results: list = []
        queue: list[float] = []
        until = time.monotonic() + a.seconds
        threads = [threading.Thread(target=_client, args=(base, until, a.ask_share, i, results, a.unique)) for i in range(a.clients)]
        threads.append(threading.Thread(target=_queue_sampler, args=(base, until, queue)))
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=a.seconds + 900)  # a request in flight at the deadline finishes
        wall = time.monotonic() - t0
        server.should_exit = True
    statuses: dict[str, int] = {}
    for _, s, _ in results:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    routes = {}
    for route in ("/v1/retrieval", "/v1/ask"):
        lat = [x for r, s, x in results if r == route and s == 200]
        routes[route] = {"ok": len(lat), "p50_ms": _pct(lat, 0.5), "p99_ms": _pct(lat, 0.99),
                         "per_s": round(len(lat) / wall, 2)}
    emit({"llm": a.llm, "unique": a.unique, "clients": a.clients, "seconds": a.seconds, "wall_s": round(wall, 1), "requests": len(results),
          "statuses": statuses, "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
          "routes": routes, "queue_depth": {"max": max(queue, default=0.0),
                                            "mean": round(statistics.mean(queue), 2) if queue else 0.0}}, a.out)


if __name__ == "__main__":
    main()
