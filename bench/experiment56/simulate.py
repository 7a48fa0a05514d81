"""Simulated traffic for `ragclinic experiment` (issue 56): users replayed from a question set, each assigned to an arm
by the experiment's own hash (experiment/design.py), each answer's outcome the one that arm gave that question in a
real eval run (items.jsonl of `eval rag --arms plain,doctor`), ratings drawn from correctness. The report's own
comparison (experiment/report.compare: the always-valid p-value read after every rated answer, the stop rule, the
sample size it says it needs) decides each run.

Two figures:
- identical arms (A/A: both arms draw from the same arm's outcomes): how many of ≥ 200 experiments declare a winner
  when the report is read after every rated answer — the goal is ≤ α; beside it, the fixed z test read as often;
- doctor vs plain: the better arm (by the eval's accuracy), how often the stop rule finds it, and at what size
  against the size the report says it needs.

    .venv/bin/python bench/experiment56/simulate.py --items bench/out/exp56/eval-rgb-doctor/items.jsonl \
        --runs 200 --out bench/out/exp56/simulate.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from ragclinic.experiment import stats
from ragclinic.experiment.design import Arm, Design
from ragclinic.experiment.report import compare


def outcomes(path: Path, arm: str) -> list[dict]:
    """Per question: correct, refused, ms and tokens as ``arm`` answered it in the eval."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        d = json.loads(line)
        row = d.get(arm)
        if not row:
            continue
        right = bool(row["correct"]) or (d.get("expect_refusal") and row["refused"])
        out.append({"key": d["key"], "question": d["question"], "correct": bool(right), "refused": row["refused"],
                    "ms": row["ms"], "tokens": row.get("prompt_tokens", 0)})
    return out


def traffic(design: Design, pools: dict[str, dict], keys: list[str], rated: int, rnd: random.Random, *,
            rate_p: float, noise: float) -> list[dict]:
    """Requests until each arm has ``rated`` rated answers: users ask 1–4 questions each; a user rates an answer
    with probability ``rate_p`` (helpful when it was right, flipped with probability ``noise``)."""
    rows, counts, user, t = [], {a.name: 0 for a in design.arms}, 0, 0.0
    while min(counts.values()) < rated:
        user += 1
        unit = f"user-{user}"
        arm = design.assign(unit).name
        for _ in range(rnd.randint(1, 4)):
            o = pools[arm][rnd.choice(keys)]
            t += rnd.expovariate(1.0)
            rating = []
            if rnd.random() < rate_p:
                helpful = o["correct"] != (rnd.random() < noise)
                rating = [1 if helpful else -1]
                counts[arm] += 1
            rows.append({"arm": arm, "unit": unit, "created": t, "trace_id": f"t{len(rows)}", "question": o["question"],
                         "cached": False, "refused": o["refused"], "ms": o["ms"], "tokens": o["tokens"],
                         "ratings": rating, "enforced": "[]"})
    return rows


def naive_peeking(rows: list[dict], alpha: float, min_rated: int) -> bool:
    """Whether the fixed two-proportion z test, read after every rated answer, ever crossed α."""
    k, n = {"A": 0, "B": 0}, {"A": 0, "B": 0}
    for r in rows:
        if r["ratings"]:
            n[r["arm"]] += 1
            k[r["arm"]] += r["ratings"][-1] == 1
            if min(n.values()) >= min_rated and stats.two_proportion_p(k["A"], n["A"], k["B"], n["B"]) <= alpha:
                return True
    return False


def first_stop(design: Design, rows: list[dict], alpha: float) -> tuple[str | None, int]:
    """The winner the stop rule declares first (read after every rated answer) and the rated answers per arm then."""
    c = compare(design, "A", "B", rows, alpha)
    trail = c["p_always_valid_trail"]
    hit = next((i for i, p in enumerate(trail) if p <= alpha), None)
    if hit is None:
        return None, -1
    rated = [r for r in rows if r["ratings"]][: hit + 1]
    a = [r["ratings"][-1] == 1 for r in rated if r["arm"] == "A"]
    b = [r["ratings"][-1] == 1 for r in rated if r["arm"] == "B"]
    return ("B" if sum(b) / len(b) > sum(a) / len(a) else "A"), min(len(a), len(b))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--mde", type=float, default=0.10)
    ap.add_argument("--min-rated", type=int, default=30)
    ap.add_argument("--rate-p", type=float, default=0.4)
    ap.add_argument("--noise", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    t0 = time.time()
    plain = {o["key"]: o for o in outcomes(args.items, "baseline")}
    doctor = {o["key"]: o for o in outcomes(args.items, "doctor")}
    keys = sorted(set(plain) & set(doctor))
    acc = {"plain": statistics.mean(plain[k]["correct"] for k in keys),
           "doctor": statistics.mean(doctor[k]["correct"] for k in keys)}
    # what a rating sees: P(helpful) = acc (1 − noise) + (1 − acc) noise
    seen = {k: v * (1 - args.noise) + (1 - v) * args.noise for k, v in acc.items()}
    rnd = random.Random(args.seed)

    def design(i: int) -> Design:
        return Design("sim", (Arm("A", 50.0), Arm("B", 50.0)), salt=f"run-{args.seed}-{i}", alpha=args.alpha,
                      mde=args.mde, min_rated=args.min_rated)

    planned = stats.sequential_sample_size(0.5, 0.5 + args.mde, args.alpha, 0.8, args.mde)
    # A/A: both arms the plain pipeline's outcomes; read after every rated answer up to twice the planned size
    aa_wins = aa_naive = 0
    for i in range(args.runs):
        rows = traffic(design(i), {"A": plain, "B": plain}, keys, 2 * planned, rnd, rate_p=args.rate_p,
                       noise=args.noise)
        aa_wins += first_stop(design(i), rows, args.alpha)[0] is not None
        aa_naive += naive_peeking(rows, args.alpha, args.min_rated)
    # A/B: plain (A) vs doctor (B); the report's own "needed per arm" for the observed difference
    # the size the report says the stop rule needs (report.compare: sequential_sample_size), and the fixed test's
    needed = stats.sequential_sample_size(seen["plain"], seen["doctor"], args.alpha, 0.8, args.mde)
    fixed = stats.sample_size(seen["plain"], seen["doctor"], args.alpha)
    better = "B" if acc["doctor"] > acc["plain"] else "A"
    found_at_needed = found_at_2x = wrong = 0
    stops = []
    horizon = 2 * needed if needed else 2 * planned
    for i in range(args.runs):
        d = design(args.runs + i)
        rows = traffic(d, {"A": plain, "B": doctor}, keys, horizon, rnd, rate_p=args.rate_p, noise=args.noise)
        winner, n = first_stop(d, rows, args.alpha)
        if winner is not None:
            stops.append(n)
            wrong += winner != better
            found_at_needed += winner == better and needed is not None and n <= needed
            found_at_2x += winner == better
    out = {"items": str(args.items), "questions": len(keys), "accuracy": acc, "rated_helpful_ratio": seen,
           "runs": args.runs, "alpha": args.alpha, "mde": args.mde, "min_rated": args.min_rated,
           "rate_p": args.rate_p, "noise": args.noise,
           "identical_arms": {"declared_winner": aa_wins / args.runs, "naive_z_test_peeking": aa_naive / args.runs,
                              "rated_per_arm_horizon": 2 * planned},
           "doctor_vs_plain": {"better_arm": "doctor" if better == "B" else "plain",
                               "needed_per_arm": needed, "fixed_test_size_per_arm": fixed,
                               "found_by_needed": found_at_needed / args.runs,
                               "found_by_2x_needed": found_at_2x / args.runs, "wrong_winner": wrong / args.runs,
                               "median_rated_per_arm_at_stop": statistics.median(stops) if stops else None},
           "seconds": round(time.time() - t0, 1)}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
