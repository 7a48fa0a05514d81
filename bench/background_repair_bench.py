"""The doctor in the background (issue 37, part 3) beside the plain pipeline and the doctor before the answer, on
a real server with the local model: one client, each question asked once per mode over SSE (`/v1/ask`,
`Accept: text/event-stream`), the modes in a rotating order so no mode always comes first.

    .venv/bin/python bench/background_repair_bench.py --llm local --rounds 2 --out bench/out/background-repair.json
    .venv/bin/python bench/background_repair_bench.py --llm local --contended 4 --out bench/out/background-contended.json

Modes: **plain** (`"doctor": false`), **sync** (the doctor before the answer, today's default), **async**
(`"repair": "async"`: the plain answer, then the doctor; the stream stays open for its outcome, so one question's
repair never overlaps the next question). Per request: seconds to the first answer byte (the first `delta`
event, else the `final` one for an answer that was not streamed, e.g. a refusal), to the `final` answer, and
(async) to the repair's outcome and what it was. Every question carries a short random tag so no mode is
answered from the model's memo of another's identical call. Reported: medians per mode, the ratio of async's
medians to plain's, and each outcome.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from output import emit  # noqa: E402

KEY = "bench-key-0001"
# the demo's questions: one answered, one Chinese, one not in the corpus, and compound ones the doctor splits
QUESTIONS = ["What is usually used as a proxy for the risk-free rate?", "知识库为每个段落建立了哪些索引？",
             "What is the boiling point of mercury?",
             "What is duration and what is usually used as a proxy for the risk-free rate?",
             "How are yields quoted and what does duration measure?"]
MODES = ("plain", "sync", "async")


def _server(kb: Path, llm: str):
    import uvicorn

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    app = create_app(Settings.load(kb, llm=llm, answer_cache=False), Keys([KEY]))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not (server.started and server.servers):
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def _ask(c, question: str, mode: str) -> dict:
    body = {"question": question, "doctor": mode != "plain", "repair": "async" if mode == "async" else "sync"}
    t0 = time.perf_counter()
    first = final = outcome_s = None
    outcome, name, data, answer = None, None, [], ""
    with c.stream("POST", "/v1/ask", json=body, headers={"Accept": "text/event-stream"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            now = time.perf_counter() - t0
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and name:
                if name == "delta" and first is None:
                    first = now
                elif name == "final":
                    final, answer = now, json.loads("\n".join(data)).get("answer", "")
                    first = first if first is not None else now
                elif name in ("improved", "repair") and final is not None:
                    got = json.loads("\n".join(data))
                    if got.get("status") not in ("pending", "running"):
                        outcome, outcome_s = got, now
                name, data = None, []
    return {"mode": mode, "question": question, "first_byte_s": round(first or 0.0, 3), "final_s": round(final or 0.0, 3),
            "outcome_s": round(outcome_s, 3) if outcome_s is not None else None,
            "outcome": (outcome or {}).get("status"), "changes": [x["treatment"] for x in (outcome or {}).get("changes", [])],
            "answer": answer[:200], "improved": ((outcome or {}).get("answer") or {}).get("answer", "")[:200]}


def _contended(c, rnd, rounds: int) -> dict:
    """A plain question asked while another answer's background repair runs (a compound question: the doctor
    re-runs it for ~20-30 s) beside the same question asked on an idle server: the first answer byte of each.
    The repair's model calls give way to the question's (server/pool.py), so the difference is at most the
    call the repair is in when the question arrives."""
    idle, busy = [], []
    for i in range(rounds):
        tag = lambda: "".join(rnd.choice("bcdfghjklmnpqrstvwxz") for _ in range(5))  # noqa: E731
        idle.append(_ask(c, f"{QUESTIONS[0]} ({tag()})", "plain")["first_byte_s"])
        r = c.post("/v1/ask", json={"question": f"{QUESTIONS[3]} ({tag()})", "repair": "async"})
        tid = r.json()["trace_id"]
        time.sleep(3.0)  # the repair under way
        running = c.get(f"/v1/repairs/{tid}").json()["status"]
        busy.append(_ask(c, f"{QUESTIONS[0]} ({tag()})", "plain")["first_byte_s"])
        c.get(f"/v1/repairs/{tid}?wait=60")  # let it finish before the next round
        print(json.dumps({"round": i, "idle_first_byte_s": idle[-1], "during_repair_first_byte_s": busy[-1],
                          "repair_was": running}), file=sys.stderr, flush=True)
    return {"idle_first_byte_p50_s": round(statistics.median(idle), 3),
            "during_repair_first_byte_p50_s": round(statistics.median(busy), 3),
            "ratio": round(statistics.median(busy) / statistics.median(idle), 3), "rounds": rounds}


def _median(rows, key):
    xs = [r[key] for r in rows if r[key] is not None]
    return round(statistics.median(xs), 3) if xs else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm", default="local")
    ap.add_argument("--rounds", type=int, default=2, help="times each question is asked per mode")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--contended", type=int, default=0, metavar="N",
                    help="only N rounds of: a plain question on an idle server, then one while a repair runs")
    a = ap.parse_args()
    import httpx

    from ragclinic.clinic import Clinic
    from ragclinic.demo.corpus import write_demo_corpus

    rnd = random.Random(7)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as d:
        docs, kb = Path(d) / "docs", Path(d) / "kb"
        write_demo_corpus(docs)
        with Clinic.open(kb, llm="none") as c:
            c.ingest(docs)
        server, base = _server(kb, a.llm)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=900) as c:
            _ask(c, "What does duration measure? (warm-up)", "plain")  # the model loaded before anything is timed
            if a.contended:
                result = {"llm": a.llm, "contended": _contended(c, rnd, a.contended)}
                server.should_exit = True
                emit(result, a.out)
                return
            n = 0
            for _ in range(a.rounds):
                for q in QUESTIONS:
                    order = MODES[n % 3:] + MODES[:n % 3]
                    n += 1
                    for mode in order:
                        tag = "".join(rnd.choice("bcdfghjklmnpqrstvwxz") for _ in range(5))
                        row = _ask(c, f"{q} ({tag})", mode)
                        rows.append(row)
                        print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
        server.should_exit = True
    summary = {m: {"first_byte_p50_s": _median([r for r in rows if r["mode"] == m], "first_byte_s"),
                   "final_p50_s": _median([r for r in rows if r["mode"] == m], "final_s")} for m in MODES}
    asyncs = [r for r in rows if r["mode"] == "async"]
    summary["async"]["outcome_p50_s"] = _median(asyncs, "outcome_s")
    outcomes: dict[str, int] = {}
    for r in asyncs:
        outcomes[str(r["outcome"])] = outcomes.get(str(r["outcome"]), 0) + 1
    plain = summary["plain"]
    emit({"llm": a.llm, "rounds": a.rounds, "questions": len(QUESTIONS), "modes": summary,
          "async_vs_plain_first_byte": round(summary["async"]["first_byte_p50_s"] / plain["first_byte_p50_s"], 3),
          "async_vs_plain_final": round(summary["async"]["final_p50_s"] / plain["final_p50_s"], 3),
          "sync_vs_plain_final": round(summary["sync"]["final_p50_s"] / plain["final_p50_s"], 3),
          "async_outcomes": outcomes, "rows": rows}, a.out)


if __name__ == "__main__":
    main()
