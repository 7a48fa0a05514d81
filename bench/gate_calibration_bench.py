"""Calibrating the gate's evidence thresholds: does a passage contain the answer to the question?

    .venv/bin/python bench/gate_calibration_bench.py --limit 100 --judge-pairs 40 [--llm local]

Pairs (question, passage, label) come from two evaluation sets read by path (never copied):
- RGB zh_fact (Chinese): ``positive`` passages contain the answer; ``negative`` passages are on the same
  topic but do not — the hard case for word overlap;
- HaluEval QA (English): the item's ``knowledge`` contains the answer; another item's knowledge does not.
For the lexical score (question-term coverage) every pair is scored; for the language-model judge
(P(yes) from the first-token logits) a seeded sample of ``--judge-pairs`` per set, since one pair costs
seconds on 2 cores. Reported per scorer: ROC AUC, the threshold maximising balanced accuracy, and the
balanced accuracy at the shipped default.
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


def rgb_pairs(limit: int) -> list[tuple[str, str, int]]:
    out = []
    with open(DATA / "rgb" / "zh_fact.json", encoding="utf-8") as f:
        for line in list(f)[:limit]:
            item = json.loads(line)
            out += [(item["query"], p, 1) for p in item["positive"][:2]]
            out += [(item["query"], p, 0) for p in item["negative"][:2]]
    return out


def halueval_pairs(limit: int, rng: random.Random) -> list[tuple[str, str, int]]:
    with open(DATA / "halueval" / "qa_one-turn_data.json", encoding="utf-8") as f:
        items = [json.loads(line) for line in list(f)[:limit]]
    out = []
    for i, item in enumerate(items):
        other = items[(i + 1 + rng.randrange(len(items) - 1)) % len(items)]
        out += [(item["question"], item["knowledge"], 1), (item["question"], other["knowledge"], 0)]
    return out


def auc(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def balanced_accuracy(scores, labels, t: float) -> float:
    tp = sum(s >= t and y for s, y in zip(scores, labels))
    tn = sum(s < t and not y for s, y in zip(scores, labels))
    p = sum(labels)
    return 0.5 * (tp / p + tn / (len(labels) - p))


def summarise(name: str, scores, labels, default: float) -> dict:
    grid = sorted(set(round(s, 3) for s in scores) | {default})
    best = max(grid, key=lambda t: (balanced_accuracy(scores, labels, t), -abs(t - default)))
    return {"scorer": name, "pairs": len(labels), "auc": round(auc(scores, labels), 3),
            "best_threshold": best, "bal_acc_best": round(balanced_accuracy(scores, labels, best), 3),
            "default": default, "bal_acc_default": round(balanced_accuracy(scores, labels, default), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=100, help="items per dataset")
    ap.add_argument("--judge-pairs", type=int, default=40, help="pairs per dataset scored by the judge (0 = none)")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "gate_calibration.json")
    args = ap.parse_args()
    from ragclinic.config import Settings
    from ragclinic.models.judge import LogitJudge, relevance_threshold
    from ragclinic.models.factory import create_language_model
    from ragclinic.text.support import coverage

    rng = random.Random(args.seed)
    settings = Settings.load(Path("/nonexistent-kb"), llm=args.llm)
    sets = {"rgb-zh": rgb_pairs(args.limit), "halueval-en": halueval_pairs(args.limit, rng)}
    rows, pooled = [], {}
    judge = LogitJudge(create_language_model(args.llm, settings)) if args.judge_pairs else None
    for name, pairs in sets.items():
        labels = [y for _, _, y in pairs]
        rows.append({"set": name, **summarise("lexical", [coverage(q, p) for q, p, _ in pairs], labels,
                                              settings.gate_threshold_lexical)})
        print(rows[-1], flush=True)
        if judge:
            sample = rng.sample(pairs, min(args.judge_pairs, len(pairs)))
            t0 = time.perf_counter()
            scores = [judge.judge("relevance", p, q) for q, p, _ in sample]
            per_pair = (time.perf_counter() - t0) / len(sample)
            labels_s = [y for *_, y in sample]
            shipped = relevance_threshold(judge, settings.gate_threshold_judge)
            rows.append({"set": name, **summarise(f"judge:{args.llm}", scores, labels_s, shipped),
                         "s_per_pair": round(per_pair, 2)})
            pooled[name] = (scores, labels_s)
            print(rows[-1], flush=True)
    if pooled:
        # one threshold for both languages and both kinds of negatives: the best mean balanced accuracy
        grid = sorted({round(x, 2) for sc, _ in pooled.values() for x in sc} | {0.5})
        mean = lambda t: sum(balanced_accuracy(sc, lb, t) for sc, lb in pooled.values()) / len(pooled)  # noqa: E731
        best = max(grid, key=lambda t: (round(mean(t), 4), -abs(t - 0.5)))
        rows.append({"set": "both (mean)", "scorer": f"judge:{args.llm}", "pairs": sum(len(lb) for _, lb in pooled.values()),
                     "auc": "–", "best_threshold": best, "bal_acc_best": round(mean(best), 3),
                     "default": shipped, "bal_acc_default": round(mean(shipped), 3)})
        print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "judge_scores": {k: {"scores": v[0], "labels": v[1]}
                                                                    for k, v in pooled.items()}},
                                   indent=2, ensure_ascii=False))
    print("\n| set | scorer | pairs | AUC | best threshold (bal. acc.) | default (bal. acc.) | s/pair |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['scorer']} | {r['pairs']} | {r['auc']} | {r['best_threshold']} ({r['bal_acc_best']}) "
              f"| {r['default']} ({r['bal_acc_default']}) | {r.get('s_per_pair', '–')} |")


if __name__ == "__main__":
    main()
