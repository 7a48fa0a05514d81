"""Fit the answerability probe on the generator's hidden states (probe_data.py's output), per layer, and ship one.

Two readings of each layer's vector at the token that closes ``{"status": "``, both fitted on the train split only:

- ``meandiff``: the direction from the answerable prompts' mean to the unanswerable ones' (Lavi, Milo & Geva 2026
  find such a linear direction; the projection is the score);
- ``logistic``: L2-regularised logistic regression on the standardised vector, its strength chosen on val.

Each is calibrated by Platt scaling on the val split; the layer and reading shipped are the ones with the best val
AUROC (ties: the earlier layer, the simpler reading). Test is reported, never used to choose. The shipped file is
``w`` (float32, the calibrated score's weights folded back to the raw vector), ``b`` and the layer:
p(unanswerable) = sigmoid(w · h + b); and the combiner (``fit_combiner``): the probe's logit, the learned
verifier's best relevance over the prompt's passages and the constraint check, weighted by a logistic regression
fitted on val, with the threshold that keeps val's over-refusal within ``--max-over-refusal``. A report (JSON)
and a plot of AUROC per layer go beside it.

    python -m ragclinic_training.probe_train --states bench/out/probe/states \
        --out src/ragclinic/verify/weights/probe-local-v1.npz --report bench/out/probe/train.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

L2_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)


def auroc(score: np.ndarray, y: np.ndarray) -> float:
    """P(score of a positive > score of a negative), ties counted half (y = 1: unanswerable)."""
    pos, neg = score[y == 1], score[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    allv = np.concatenate([pos, neg])[order]
    i = 0
    while i < len(allv):  # average ranks over ties
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def logistic(x: np.ndarray, y: np.ndarray, l2: float, steps: int = 300) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-penalised log-loss (``x`` standardised): weights and bias."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(steps):
        p = _sigmoid(xb @ w)
        g = xb.T @ (p - y) / n + reg * w
        h = (xb * (p * (1 - p))[:, None]).T @ xb / n + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    return w[:-1], float(w[-1])


def platt(z: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """a, c with p = sigmoid(a z + c) fitted to the labels (val split)."""
    w, b = logistic(z[:, None], y.astype(float), l2=1e-4)
    return float(w[0]), b


def load(states: Path) -> tuple[list[dict], np.ndarray]:
    rows = [json.loads(line) for line in states.with_suffix(".jsonl").read_text().splitlines() if line.strip()]
    x = np.stack([np.load(states.parent / r["shard"]).astype(np.float32) for r in rows])  # (n, layers, d)
    return rows, x


def fit_layer(x: np.ndarray, y: np.ndarray, split: np.ndarray) -> dict:
    """Both readings of one layer: val / test AUROC and the folded, calibrated (w, b) of each."""
    tr, va, te = split == "train", split == "val", split == "test"
    out = {}
    mu1, mu0 = x[tr & (y == 1)].mean(0), x[tr & (y == 0)].mean(0)
    d = mu1 - mu0
    d /= np.linalg.norm(d) or 1.0
    z = x @ d - float(((mu1 + mu0) / 2) @ d)
    a, c = platt(z[va], y[va])
    out["meandiff"] = {"val": auroc(z[va], y[va]), "test": auroc(z[te], y[te]),
                       "w": a * d, "b": a * -float(((mu1 + mu0) / 2) @ d) + c}
    mean, std = x[tr].mean(0), x[tr].std(0) + 1e-6
    s = (x - mean) / std
    best = None
    for l2 in L2_GRID:
        w, b = logistic(s[tr], y[tr].astype(float), l2)
        v = auroc(s[va] @ w + b, y[va])
        if best is None or v > best[0] + 1e-9:
            best = (v, l2, w, b)
    v, l2, w, b = best
    z = s @ w + b
    a, c = platt(z[va], y[va])
    wf = a * w / std
    out["logistic"] = {"val": v, "test": auroc(z[te], y[te]), "l2": l2, "w": wf,
                       "b": float(a * (b - (w / std) @ mean) + c)}
    return out


def combiner_features(rows: list[dict], probe_z: np.ndarray, cmrc: Path, halueval: Path, per_source: int,
                      seed: int, cache: Path, style: str = "pair") -> np.ndarray:
    """(probe logit, verifier logit, constraint missing) per row: the learned verifier's best relevance over the
    prompt's passages (the gate's evidence score) and whether no passage meets all the question's constraints
    (verify/constraints.py) — computed on the very passages of each prompt (probe_data.planned)."""
    from ragclinic.verify import create_verifier
    from ragclinic.verify.constraints import check_all
    from ragclinic.verify.probe import combiner_features as combiner_features_rt  # the run time's own transform
    from ragclinic_training.probe_data import planned

    texts = {key: t for key, _, _, t in planned(cmrc, halueval, per_source, seed, style)}
    known = json.loads(cache.read_text()) if cache.exists() else {}
    verifier = None
    out = []
    for r, z in zip(rows, probe_z):
        q, ps = r["question"], texts[r["key"]]
        ck = hashlib.sha256(json.dumps([q, ps], ensure_ascii=False).encode()).hexdigest()[:24]  # the passages too
        if ck not in known:
            verifier = verifier or create_verifier("learned")
            known[ck] = max(verifier.verify("relevance", p, q).p for p in ps)
        missing = not any(all(c.verdict == "found" for c in check_all(q, p)) for p in ps)
        out.append(combiner_features_rt(float(z), known[ck], missing))
    cache.write_text(json.dumps(known))
    return np.array(out)


def fit_combiner(f: np.ndarray, y: np.ndarray, split: np.ndarray, max_over_refusal: float) -> dict:
    """p(unanswerable) = sigmoid(w · features + b), fitted on val (the probe's own fit never saw it), and the
    threshold: the lowest whose over-refusal on val's answerable prompts is at most ``max_over_refusal``."""
    va, te = split == "val", split == "test"
    w, b = logistic(f[va], y[va].astype(float), l2=1e-2)
    p = _sigmoid(f @ w + b)
    answerable = np.sort(p[va & (y == 0)])
    k = int(np.floor(max_over_refusal * len(answerable)))
    threshold = float(answerable[len(answerable) - k - 1]) + 1e-6 if len(answerable) > k else 0.5
    out = {"w": w, "b": b, "threshold": threshold}
    for name, m in (("val", va), ("test", te)):
        out[name] = {"auroc": round(auroc(p[m], y[m]), 4),
                     "refusal": round(float((p[m & (y == 1)] >= threshold).mean()), 4),
                     "over_refusal": round(float((p[m & (y == 0)] >= threshold).mean()), 4)}
    for i, part in enumerate(("probe", "verifier", "constraint")):  # each part alone, test (oriented: high = unanswerable)
        out.setdefault("test_auroc_alone", {})[part] = round(auroc(-f[te, i] if part == "verifier" else f[te, i], y[te]), 4)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--cmrc", type=Path, required=True, help="the data probe_data read (to rebuild its passages)")
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--per-source", type=int, default=300)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--max-over-refusal", type=float, default=0.05)
    ap.add_argument("--style", default="pair", choices=("pair", "retrieved"),
                    help="the prompts' style probe_data built (its --style): the combiner's features are computed on "
                         "that style's passages")
    a = ap.parse_args(argv)
    rows, x = load(a.states)
    if {r.get("style", a.style) for r in rows} != {a.style}:  # rows written before the field existed: trusted
        raise SystemExit(f"{a.states} holds prompts of another style than --style {a.style}")
    layers = rows[0]["layers"]
    y = np.array([1 - r["label"] for r in rows])  # 1 = unanswerable (what the probe flags)
    split = np.array([r["split"] for r in rows])
    source = np.array([r["source"] for r in rows])
    report: dict = {"n": {s: int((split == s).sum()) for s in ("train", "val", "test")}, "layers": {}}
    best = None
    every: dict[str, np.ndarray] = {}  # each layer's readings, for the per-layer figures on other sets
    for i, layer in enumerate(layers):
        fits = fit_layer(x[:, i, :], y, split)
        report["layers"][layer] = {}
        for method, f in fits.items():
            every[f"{method}.{layer}.w"], every[f"{method}.{layer}.b"] = f["w"].astype(np.float32), np.float32(f["b"])
            per_source = {src: auroc(x[(split == "test") & (source == src), i, :] @ f["w"] + f["b"],
                                     y[(split == "test") & (source == src)]) for src in sorted(set(source))}
            report["layers"][layer][method] = {"val_auroc": round(f["val"], 4), "test_auroc": round(f["test"], 4),
                                               "test_auroc_by_source": {k: round(v, 4) for k, v in per_source.items()},
                                               **({"l2": f["l2"]} if "l2" in f else {})}
            key = (round(f["val"], 3), -layer, method == "meandiff")  # ties: the earlier layer, the simpler reading
            if best is None or key > best[0]:
                best = (key, layer, method, f)
    _, layer, method, f = best
    te = split == "test"
    p = _sigmoid(x[te, layers.index(layer), :] @ f["w"] + f["b"])
    model_said_no = np.array([r["model_status"].startswith("not") for r in rows])
    report["chosen"] = {"layer": layer, "method": method, "val_auroc": round(f["val"], 4),
                        "test_auroc": round(f["test"], 4),
                        "test_accuracy_at_0.5": round(float(((p >= 0.5) == y[te]).mean()), 4),
                        "test_brier": round(float(((p - y[te]) ** 2).mean()), 4)}
    report["model_status_baseline_test"] = {
        "refusal_when_unanswerable": round(float(model_said_no[te & (y == 1)].mean()), 4),
        "refusal_when_answerable": round(float(model_said_no[te & (y == 0)].mean()), 4)}
    z = x[:, layers.index(layer), :] @ f["w"] + f["b"]
    feats = combiner_features(rows, z, a.cmrc, a.halueval, a.per_source, a.seed,
                              a.report.with_name(a.report.stem + "-verifier.json"), a.style)
    comb = fit_combiner(feats, y, split, a.max_over_refusal)
    report["combiner"] = {k: v for k, v in comb.items() if k not in ("w", "b")}
    report["combiner"]["weights"] = {"probe": round(float(comb["w"][0]), 4), "verifier": round(float(comb["w"][1]), 4),
                                     "constraint": round(float(comb["w"][2]), 4), "bias": round(comb["b"], 4)}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(a.out, w=f["w"].astype(np.float32), b=np.float32(f["b"]), layer=np.int32(layer),
             method=np.array(method), model=np.array(rows[0]["model"]),
             combine_w=comb["w"].astype(np.float32), combine_b=np.float32(comb["b"]),
             threshold=np.float32(comb["threshold"]))
    report["sha256"] = hashlib.sha256(a.out.read_bytes()).hexdigest()
    np.savez(a.report.with_name(a.report.stem + "-layers.npz"), **every)
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(json.dumps(report, indent=1))
    _plot(report, a.report.with_suffix(".png"))
    print(json.dumps({"chosen": report["chosen"], "sha256": report["sha256"], "combiner": report["combiner"],
                      "baseline": report["model_status_baseline_test"]}, indent=1))


def _plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = sorted(report["layers"], key=int)
    fig, ax = plt.subplots(figsize=(7, 4))
    for method, style in (("meandiff", "-o"), ("logistic", "-s")):
        for split in ("val", "test"):
            ax.plot([int(x) for x in layers], [report["layers"][x][method][f"{split}_auroc"] for x in layers],
                    style, alpha=1.0 if split == "test" else 0.5, label=f"{method} ({split})")
    ax.set_xlabel("layer (output of)")
    ax.set_ylabel("AUROC, unanswerable vs answerable")
    ax.set_title("Answerability probe on the generator's residual stream")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
