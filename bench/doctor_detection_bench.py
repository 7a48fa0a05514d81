"""The doctor's faithfulness detector (``unsupported_claim``) on HaluEval QA: right vs hallucinated answer
against the same knowledge.

    .venv/bin/python bench/doctor_detection_bench.py --pairs 300 [--llm local|local-small|none]

Each pair gives two items (right answer → supported, hallucinated answer → unsupported). Pairs are split
in two seeded halves: the judge threshold (the only tuned number) is chosen on half A and everything is
reported on half B. Tiers as in the doctor: rules decide when sure; the judge is asked only about items the
rules are unsure of. Judge outputs are cached in bench/out/ so a re-run only re-scores.
Reported: balanced accuracy, precision / recall / F1 for "unsupported", the rules alone, the judge alone
on the items it saw, judge calls per item, and seconds per judged item.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "out"


def items(n_pairs: int, seed: int) -> list[dict]:
    with open(DATA / "halueval" / "qa_one-turn_data.json", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rng = random.Random(seed)
    idx = sorted(rng.sample(range(len(rows)), min(n_pairs, len(rows))))
    half = {i: ("A" if k % 2 == 0 else "B") for k, i in enumerate(rng.sample(idx, len(idx)))}
    out = []
    for i in idx:
        r = rows[i]
        for ans, label in ((r["right_answer"], 0), (r["hallucinated_answer"], 1)):
            out.append({"pair": i, "half": half[i], "knowledge": r["knowledge"], "question": r["question"],
                        "answer": ans, "unsupported": label})
    return out


def metrics(pred: list[int], gold: list[int]) -> dict:
    tp = sum(p and g for p, g in zip(pred, gold))
    fp = sum(p and not g for p, g in zip(pred, gold))
    fn = sum((not p) and g for p, g in zip(pred, gold))
    tn = sum((not p) and (not g) for p, g in zip(pred, gold))
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    spec = tn / (tn + fp) if tn + fp else 0.0
    return {"balanced_accuracy": round((rec + spec) / 2, 4), "precision": round(prec, 4), "recall": round(rec, 4),
            "f1": round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0, "n": len(gold)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llm", default="local")
    args = ap.parse_args()
    from ragclinic.config import Settings
    from ragclinic.doctor.detectors.faithfulness import judge_text, rule_risk
    from ragclinic.models.judge import LogitJudge
    from ragclinic.models.factory import create_language_model

    data = items(args.pairs, args.seed)
    for it in data:
        r = rule_risk(it["answer"], it["knowledge"], it["question"])
        it["rule_score"], it["rule_sure"] = r.score, r.sure
    cache_path = OUT / f"doctor_detection_{args.llm}.json"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    judged_s, judged_n = 0.0, 0
    if args.llm != "none":
        judge = LogitJudge(create_language_model(args.llm, Settings(llm=args.llm)))
        todo = [it for it in data if not it["rule_sure"]]
        for k, it in enumerate(todo):
            key = f"{it['pair']}:{it['unsupported']}"
            if key not in cache:
                t0 = time.perf_counter()
                cache[key] = judge.judge("support", it["knowledge"], judge_text(it["answer"], it["question"]))
                judged_s += time.perf_counter() - t0
                judged_n += 1
                if judged_n % 25 == 0:
                    OUT.mkdir(exist_ok=True)
                    cache_path.write_text(json.dumps(cache))
                    print(f"  judged {k + 1}/{len(todo)} ({judged_s / judged_n:.2f} s/item)", flush=True)
        OUT.mkdir(exist_ok=True)
        cache_path.write_text(json.dumps(cache))
    for it in data:
        it["p_support"] = cache.get(f"{it['pair']}:{it['unsupported']}")

    def predict(it, t):
        """As claim_risk: the judge may flag a word-covered claim (P ≤ flag) or clear a doubtful one (P ≥ clear)."""
        flag, clear = t
        if it["rule_sure"] or it["p_support"] is None:
            return int(it["rule_score"] >= 0.5)
        if it["rule_score"] >= 0.5:
            return int(it["p_support"] < clear)
        return int(it["p_support"] <= flag)

    a = [it for it in data if it["half"] == "A"]
    b = [it for it in data if it["half"] == "B"]
    grid = [(f / 100, c / 100) for f in range(0, 101, 2) for c in range(0, 103, 2)]
    ba = lambda rows, t: metrics([predict(i, t) for i in rows], [i["unsupported"] for i in rows])["balanced_accuracy"]
    # ties: the least judge influence (flag low, clear high)
    t_best = max(grid, key=lambda t: (ba(a, t), -t[0], t[1])) if args.llm != "none" else (0.0, 1.02)
    judged = [i for i in b if i["p_support"] is not None]
    from ragclinic.doctor.detectors.faithfulness import CALIBRATED_SUPPORT
    shipped = CALIBRATED_SUPPORT.get(args.llm)
    rules_only = metrics([int(i["rule_score"] >= 0.5) for i in b], [i["unsupported"] for i in b])
    report = {
        "pairs": args.pairs, "llm": args.llm, "thresholds_from_half_A (flag, clear)": t_best,
        "half_A_balanced_accuracy": ba(a, t_best),
        "half_B": metrics([predict(i, t_best) for i in b], [i["unsupported"] for i in b]),
        "half_B_rules_only (rule score ≥ 0.5)": rules_only,
        "half_B_with_shipped_thresholds": ({"thresholds": shipped, **metrics([predict(i, shipped) for i in b],
                                                                             [i["unsupported"] for i in b])}
                                           if shipped else None),
        "half_B_judge_alone_on_unsure_items (P < 0.5)": metrics([int(i["p_support"] < 0.5) for i in judged],
                                                                [i["unsupported"] for i in judged]) if judged else None,
        "share_sent_to_judge": round(sum(not i["rule_sure"] for i in data) / len(data), 3),
        "seconds_per_judged_item": round(judged_s / judged_n, 2) if judged_n else None,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
