"""Drift alerts on a replayed history (issue 38): does `kb health` raise an alert within one window of an injected
regression, and none on the unchanged history?

A knowledge base of HaluEval passages (one document each; licensed for this use) is asked a day's questions — drawn
at random from the items' questions, so the daily rates vary as real traffic does — for `--days` days, each trace
dated to its day. On day `--break-day` a parser change is injected: the documents are re-ingested as a parser that
loses every word longer than `--min-len` letters would write them (what a broken ligature or hyphenation handling
does to a text layer). A control history goes on unchanged from the same day. After each day `health()` is read
with the default windows (the last 24 h against the 7 days before); the alerts of each day are recorded.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/health_replay.py \
        --items bench/out/halueval-test-rgb-dev.jsonl --out bench/out/health-replay.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ragclinic import Clinic
from ragclinic.trace.health import health
from ragclinic.trace.store import load_trace, save_trace

DAY = 86400.0


def write_docs(folder: Path, items: list[dict], min_len: int | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for it in items:
        for j, text in enumerate(it["positive"]):
            if min_len:
                text = re.sub(r"\b[A-Za-z]{%d,}\b" % (min_len + 1), "", text)
            (folder / f"item{it['id']}_{j}.txt").write_text(" ".join(text.split()) + "\n", encoding="utf-8")


def ask_day(c: Clinic, questions: list[str], day_start: float) -> None:
    """The day's questions, each trace re-dated into the day (the doctor off: what the plain pipeline saw)."""
    for i, q in enumerate(questions):
        a = c.ask(q, doctor=False, cache=False)
        t = load_trace(c.kb.db, a.trace_id)
        save_trace(c.kb.db, replace(t, created=day_start + 3600 + i * 60))


def history(items, root: Path, days: int, break_day: int | None, per_day: int, min_len: int, seed: int,
            settings: dict) -> list[dict]:
    rnd = random.Random(seed)
    docs = root / "docs"
    write_docs(docs, items, None)
    t0 = time.time() - days * DAY
    out = []
    with Clinic.open(root / "kb", model=None, llm="none", **settings) as c:
        c.ingest(docs)
        for day in range(days):
            if break_day is not None and day == break_day:
                write_docs(docs, items, min_len)
                c.ingest(docs)
            ask_day(c, [it["query"].strip() for it in rnd.sample(items, per_day)], t0 + day * DAY)
            h = health(c.kb.db, now=t0 + (day + 1) * DAY)
            out.append({"day": day, "kb_version": c.kb.db.version, "questions": h["current"]["questions"],
                        "hit_rate": h["current"]["hit_rate"], "top1_relevance": h["current"]["top1_relevance"],
                        "refusal_rate": h["current"]["refusal_rate"],
                        "baseline_questions": h["baseline"]["questions"],
                        "alerts": [a["metric"] for a in h["alerts"]]})
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=Path, required=True)
    ap.add_argument("--n-items", type=int, default=40)
    ap.add_argument("--days", type=int, default=12)
    ap.add_argument("--break-day", type=int, default=9)
    ap.add_argument("--per-day", type=int, default=20)
    ap.add_argument("--min-len", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    items = [json.loads(x) for x in a.items.read_text(encoding="utf-8").splitlines() if x.strip()][:a.n_items]
    settings = {"cache_dir": Path.home() / ".cache" / "ragclinic"}
    root = Path(tempfile.mkdtemp(prefix="health-replay-"))
    try:
        runs = {"regressed": history(items, root / "regressed", a.days, a.break_day, a.per_day, a.min_len, a.seed,
                                     settings),
                "unchanged": history(items, root / "unchanged", a.days, None, a.per_day, a.min_len, a.seed, settings)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first = next((d["day"] for d in runs["regressed"] if d["day"] >= a.break_day and d["alerts"]), None)
    early = [d["day"] for d in runs["regressed"] if d["day"] < a.break_day and d["alerts"] and d["baseline_questions"]]
    quiet = [d["day"] for d in runs["unchanged"] if d["alerts"]]
    result = {"params": vars(a) | {"items": str(a.items), "out": str(a.out)}, "runs": runs,
              "first_alert_day": first, "days_to_alert": None if first is None else first - a.break_day + 1,
              "false_alarm_days_before_break": early, "false_alarm_days_unchanged": quiet}
    a.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k not in ("runs", "params")}))


if __name__ == "__main__":
    main()
