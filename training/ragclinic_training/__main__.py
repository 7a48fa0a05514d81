"""``python -m ragclinic_training --cmrc PATH --halueval PATH --out FILE``: rebuild the shipped weights.

Pairs (training/pairs.py) are split by article / question hash into train / val / test; each task's head is
fitted on train (logistic and MLP; the lower validation log-loss wins), temperature-calibrated and thresholded on
val, and reported on test. Deterministic (fixed seeds, full-batch Adam); ~1 min on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragclinic.models.e5 import shared_e5
from ragclinic.verify.features import NAMES, extract
from ragclinic_training.fit import Head, calibrate, ece, fit_logistic, fit_mlp, log_loss
from ragclinic_training.pairs import Pair, all_pairs

# Sufficiency is decided per question over its passages (answer when the best reaches the threshold), so its
# threshold is chosen per question too: the highest that still answers this share of the validation questions
# whose passages include the answer (over-refusal ≤ 0.05 is the goal).
MIN_ANSWERED = 0.95


def _item_threshold(p: np.ndarray, pairs: list[Pair]) -> float:
    items: dict[tuple, list[float]] = {}
    for score, pair in zip(p, pairs):
        items.setdefault((pair.source, pair.group, pair.text), []).append(float(score))
    with_answer = [max(v) for k, v in items.items()
                   if any(q.label for q in pairs if (q.source, q.group, q.text) == k)]
    best = np.sort(np.array(with_answer))
    k = int(np.floor((1 - MIN_ANSWERED) * len(best)))
    return float(max(0.01, best[k] - 1e-6)) if len(best) else 0.5


def _balanced_threshold(p: np.ndarray, y: np.ndarray) -> float:
    grid = np.linspace(0.05, 0.95, 91)
    bacc = [((p[y == 1] >= t).mean() + (p[y == 0] < t).mean()) / 2 for t in grid]
    return float(grid[int(np.argmax(bacc))])


def metrics(p: np.ndarray, y: np.ndarray, t: float) -> dict:
    tpr = float((p[y == 1] >= t).mean()) if (y == 1).any() else None
    tnr = float((p[y == 0] < t).mean()) if (y == 0).any() else None
    bacc = (tpr + tnr) / 2 if tpr is not None and tnr is not None else None
    return {"n": int(len(y)), "positives_accepted": tpr, "negatives_rejected": tnr, "balanced_accuracy": bacc,
            "log_loss": log_loss(p, y), "ece": ece(p, y)}


def _weights(pairs: list[Pair]) -> np.ndarray:
    """Each (source, label) class weighs the same in total: neither language nor label dominates."""
    count = Counter((p.source, p.label) for p in pairs)
    return np.array([1.0 / count[(p.source, p.label)] for p in pairs]) * len(pairs) / len(count)


class CachedE5:
    """e5 vectors for the training texts, computed in batches once and kept in an .npz between runs."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.vecs = path, {}
        if path and path.is_file():
            z = np.load(path, allow_pickle=False)
            self.vecs = dict(zip(z["keys"].tolist(), z["vecs"]))

    def fill(self, texts: list[str], is_query: bool) -> None:
        todo = sorted({t for t in texts if self._key(t, is_query) not in self.vecs})
        m = shared_e5()
        for i in range(0, len(todo), 32):
            batch = todo[i:i + 32]
            out = m.query(batch) if is_query else m.passage(batch)
            for t, v in zip(batch, np.atleast_2d(out)):
                self.vecs[self._key(t, is_query)] = v / (np.linalg.norm(v) or 1.0)
            print(f"e5 {'queries' if is_query else 'passages'}: {min(i + 32, len(todo))}/{len(todo)}",
                  file=sys.stderr, flush=True)
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vecs)
            np.savez(self.path, keys=np.array(keys), vecs=np.stack([self.vecs[k] for k in keys]))

    @staticmethod
    def _key(text: str, is_query: bool) -> str:
        return ("q:" if is_query else "p:") + hashlib.sha256(text.encode()).hexdigest()

    def query(self, texts):
        return np.stack([self.vecs[self._key(t, True)] for t in texts])

    def passage(self, texts):
        return np.stack([self.vecs[self._key(t, False)] for t in texts])


def featurise(pairs: list[Pair], e5: CachedE5 | None) -> dict[int, np.ndarray]:
    if e5 is None:
        return {id(p): extract(p.passage, p.text).vector for p in pairs}
    plain = {id(p): extract(p.passage, p.text) for p in pairs}
    e5.fill([p.text for p in pairs], True)
    e5.fill([t for f in plain.values() for t in (f.window, f.sentence)], False)
    return {id(p): extract(p.passage, p.text, e5.query, e5.passage).vector for p in pairs}


def train(pairs: list[Pair], e5: CachedE5 | None = None) -> tuple[dict, dict]:
    feats = featurise(pairs, e5)
    heads, report = {}, {}
    for task in ("relevance", "support", "contradiction"):
        sub = {s: [p for p in pairs if p.task == task and p.split == s] for s in ("train", "val", "test")}
        xy = {s: (np.stack([feats[id(p)] for p in ps]).astype(np.float64), np.array([p.label for p in ps], float))
              for s, ps in sub.items()}
        (xt, yt), (xv, yv), (xs, ys) = xy["train"], xy["val"], xy["test"]
        cands = [fit_logistic(xt, yt, _weights(sub["train"])), fit_mlp(xt, yt, _weights(sub["train"]))]
        losses = [log_loss(h.prob(xv), yv) for h in cands]
        head: Head = calibrate(cands[int(np.argmin(losses))], xv, yv)
        pv = head.prob(xv)
        head.threshold = (_item_threshold(pv, sub["val"]) if task == "relevance"
                          else _balanced_threshold(pv, yv))
        heads[task] = head.to_json()
        ps = head.prob(xs)
        by_kind = {}
        for kind in sorted({p.kind for p in sub["test"]}):
            m = np.array([p.kind == kind for p in sub["test"]])
            by_kind[kind] = {"n": int(m.sum()), "accepted": float((ps[m] >= head.threshold).mean())}
        report[task] = {"chosen": head.kind, "val_log_loss": dict(zip(("logistic", "mlp"), losses)),
                        "threshold": head.threshold, "temperature": head.temperature,
                        "val": metrics(pv, yv, head.threshold), "test": metrics(ps, ys, head.threshold),
                        "test_by_kind": by_kind,
                        "n_train": len(sub["train"])}
    return heads, report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ragclinic_training", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True, help="cmrc2018_trial.json (SQuAD format)")
    ap.add_argument("--halueval", type=Path, required=True, help="qa_one-turn_data.json (JSON lines)")
    ap.add_argument("--out", type=Path, required=True, help="the weights file to write")
    ap.add_argument("--report", type=Path, default=None, help="also write the validation / test report here")
    ap.add_argument("--no-e5", action="store_true", help="lexical features only (the e5 columns stay 0)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/ragclinic/verifier-train-e5.npz",
                    help="e5 vectors of the training texts, kept between runs")
    a = ap.parse_args(argv)
    for p in (a.cmrc, a.halueval):
        if not p.is_file():
            print(f"error: training data {p} not found (see ../shared/data/*/SOURCE.md)", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    pairs = all_pairs(a.cmrc, a.halueval)
    heads, report = train(pairs, None if a.no_e5 else CachedE5(a.cache))
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    doc = {"format": 1, "features": list(NAMES), "heads": heads, "e5": not a.no_e5,
           "trained_on": {"cmrc2018": {"file": a.cmrc.name, "sha256": digest(a.cmrc)},
                          "halueval": {"file": a.halueval.name, "sha256": digest(a.halueval)},
                          "pairs": dict(Counter(p.split for p in pairs)), "split": "sha256 of article / question id"}}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")
    rep = {"seconds": round(time.perf_counter() - t0, 1), "tasks": report,
           "sha256": hashlib.sha256(a.out.read_bytes()).hexdigest()}
    if a.report:
        a.report.write_text(json.dumps(rep, indent=1))
    print(json.dumps(rep, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
