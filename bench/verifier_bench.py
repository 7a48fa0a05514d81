"""The verifier's sufficiency judgement at the pair and item level, on evaluation data it was neither trained nor
tuned on (thresholds come from the weights file, chosen on the training data's validation split).

RGB zh_fact: every (question, positive passage) and (question, negative passage) pair; per item, "refused" when
no negative passage reaches the threshold (the negative-only case of ``eval rag --noise neg``) and "answered"
when some positive passage does. English: HaluEval QA's test split (questions never trained on): the two-paragraph
HotpotQA context as positive, its other paragraph, the context with the answer sentence removed and the most
word-similar other context as same-topic negatives. Beside each verifier: seconds per pair (median). With
``--judge local`` the 1.5B yes/no judge is scored on the same pairs at its calibrated threshold.

    PYTHONPATH=training python bench/verifier_bench.py --rgb ../shared/data/rgb/zh_fact.json \
        --halueval ../shared/data/halueval/qa_one-turn_data.json --verifiers learned,lexical [--judge local]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.eval.datasets import load
from ragclinic.verify import create_verifier
from ragclinic_training.pairs import halueval_pairs

from output import emit  # noqa: E402  (bench/ is on sys.path when a bench runs)


def rgb_sets(path: Path, limit: int) -> list[dict]:
    items = load(f"rgb:{path}").data
    items = items[:limit] if limit else items
    return [{"id": it.id, "question": it.question, "pos": list(it.documents), "neg": list(it.negatives)}
            for it in items]


def halueval_sets(path: Path) -> list[dict]:
    groups: dict[str, dict] = defaultdict(lambda: {"pos": [], "neg": []})
    for p in halueval_pairs(path):
        if p.task == "relevance" and p.split == "test":
            g = groups[p.group]
            g["id"], g["question"] = p.group[:60], p.text
            g["pos" if p.label else "neg"].append(p.passage)
    return [g for g in groups.values() if g["pos"] and g["neg"]]


def score(verifier, threshold: float, sets: list[dict]) -> dict:
    secs, pos_acc, neg_rej, item_refused, item_answered = [], [], [], [], []
    for s in sets:
        ps = {}
        for kind in ("pos", "neg"):
            ps[kind] = []
            for passage in s[kind]:
                t0 = time.perf_counter()
                ps[kind].append(verifier.judge("relevance", passage, s["question"]))
                secs.append(time.perf_counter() - t0)
        pos_acc += [p >= threshold for p in ps["pos"]]
        neg_rej += [p < threshold for p in ps["neg"]]
        if ps["neg"]:
            item_refused.append(max(ps["neg"]) < threshold)
        if ps["pos"]:
            item_answered.append(max(ps["pos"]) >= threshold)
    share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {"threshold": threshold, "pairs": len(secs), "positive_pairs_accepted": share(pos_acc),
            "negative_pairs_rejected": share(neg_rej), "negative_only_items_refused": share(item_refused),
            "positive_items_answered": share(item_answered),
            "p50_seconds_per_pair": round(statistics.median(secs), 4) if secs else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rgb", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--verifiers", default="learned,learned-cross,lexical")
    ap.add_argument("--judge", default="", help="also score the language model's yes/no judge (local | local-small)")
    ap.add_argument("--limit", type=int, default=0, help="RGB items (0 = all)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    data = {"rgb_zh_fact": rgb_sets(a.rgb, a.limit), "halueval_test_en": halueval_sets(a.halueval)}
    result = {name: {} for name in data}
    arms = [(v, create_verifier(v)) for v in a.verifiers.split(",") if v]
    if a.judge:
        from ragclinic.models.factory import create_language_model

        arms.append((f"llm:{a.judge}", create_verifier("llm", create_language_model(a.judge, Settings.load(
            None, llm=a.judge)))))
    for name, v in arms:
        for dname, sets in data.items():
            result[dname][name] = score(v, v.relevance_threshold, sets)
            print(dname, name, json.dumps(result[dname][name]), flush=True)
    emit(result, a.out)


if __name__ == "__main__":
    main()
