"""Fitting the failure forecast's heads (doctor/forecast.py): one standardised logistic regression per kind (L2
chosen on val by log-loss, Newton's method, numpy only), Platt-calibrated on val and folded into the head,
reported on test per kind and per source. ``make train-forecast`` (training/ragclinic_training/forecast_train.py)
fits the shipped heads with it; ``ragclinic doctor train`` refits a knowledge base's own from its traces."""

from __future__ import annotations

import hashlib

import numpy as np

from ragclinic.doctor.forecast import FEATURES, KINDS, features
from ragclinic.pipeline.generate import CITE
from ragclinic.trace.store import list_traces, load_trace
from ragclinic.verify.head import Head

L2_GRID = (1e-3, 1e-2, 1e-1, 1.0)
MIN_CLASS = 8  # a kind is fitted only with at least this many rows of each class in train and in val


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def auroc(score: np.ndarray, y: np.ndarray) -> float:
    """P(a failing row scores above a healthy one), ties half."""
    pos, neg = score[y == 1], score[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / (len(pos) * len(neg)))


def logistic(z: np.ndarray, y: np.ndarray, l2: float, steps: int = 100) -> tuple[np.ndarray, float]:
    """Newton's method on the L2-penalised log-loss over standardised ``z``: weights, bias."""
    n, d = z.shape
    xb = np.hstack([z, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(steps):
        p = _sigmoid(xb @ w)
        g = xb.T @ (p - y) / n + reg * w
        h = (xb * (p * (1 - p))[:, None]).T @ xb / n + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def _loss(p, y) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def fit_kind(x: np.ndarray, y: np.ndarray, split: np.ndarray) -> tuple[Head, dict] | None:
    """A calibrated head for one kind (None when a split lacks MIN_CLASS rows of either class)."""
    tr, va = split == "train", split == "val"
    if min(y[tr].sum(), (1 - y[tr]).sum(), y[va].sum(), (1 - y[va]).sum()) < MIN_CLASS:
        return None
    mean, std = x[tr].mean(axis=0), x[tr].std(axis=0)
    std[std < 1e-6] = 1.0
    z = (x - mean) / std
    best = None
    for l2 in L2_GRID:
        w, b = logistic(z[tr], y[tr], l2)
        loss = _loss(_sigmoid(z[va] @ w + b), y[va])
        if best is None or loss < best[0]:
            best = (loss, l2, w, b)
    _, l2, w, b = best
    a, c = logistic(((z[va] @ w + b))[:, None], y[va], 1e-4)  # Platt: p = sigmoid(a·logit + c)
    if float(a[0]) <= 1e-3:  # on val the head's scores rank nothing (or backwards): no head
        return None
    a = float(a[0])
    # fold Platt into the head: logit' = a (z·w + b) + c
    head = Head("logistic", mean, std, w * a, np.asarray(b * a + c), temperature=1.0, threshold=0.5)
    return head, {"l2": l2, "platt": [round(a, 4), round(c, 4)]}


def _num(v: float) -> float | None:
    """A figure for a JSON report: rounded, None where it is undefined (a test split with one class)."""
    return None if v != v else round(v, 4)


def fit(rows: list[dict], kinds=KINDS, used=FEATURES) -> tuple[dict, dict]:
    """(the forecast file's data, the report): every kind with enough labelled rows; test AUROC per kind and
    per source. Only the features in ``used`` are read (the others are held at 0: their weights stay 0)."""
    x = np.asarray([[r["features"][f] if f in used else 0.0 for f in FEATURES] for r in rows], dtype=np.float64)
    split = np.asarray([r["split"] for r in rows])
    source = np.asarray([r.get("source", "") for r in rows])
    data = {"version": 1, "features": list(FEATURES), "used_features": [f for f in FEATURES if f in used], "kinds": {}}
    report: dict = {"rows": len(rows), "splits": {s: int((split == s).sum()) for s in ("train", "val", "test")},
                    "kinds": {}}
    for kind in kinds:
        have = np.asarray([kind in r["labels"] for r in rows])
        if not have.any():
            report["kinds"][kind] = {"fitted": False, "why": "no labelled rows"}
            continue
        y = np.asarray([r["labels"].get(kind, 0) for r in rows], dtype=np.float64)
        got = fit_kind(x[have], y[have], split[have])
        if got is None:
            report["kinds"][kind] = {"fitted": False, "why": f"fewer than {MIN_CLASS} rows of a class in train or "
                                     "val, or no signal on val", "positives": int(y[have].sum()),
                                     "rows": int(have.sum())}
            continue
        head, how = got
        data["kinds"][kind] = head.to_json()
        te = have & (split == "test")
        p = head.prob(x[te])
        entry = {"fitted": True, **how, "positives": {s: int(y[have & (split == s)].sum()) for s in ("train", "val", "test")},
                 "test_auroc": _num(auroc(p, y[te])), "test_rows": int(te.sum()),
                 "test_brier": round(float(np.mean((p - y[te]) ** 2)), 4) if te.any() else None, "by_source": {}}
        for src in sorted(set(source[te])):
            m = te & (source == src)
            entry["by_source"][src] = {"auroc": _num(auroc(head.prob(x[m]), y[m])), "rows": int(m.sum()),
                                       "positives": int(y[m].sum())}
        order = np.argsort(-np.abs(head.w1))[:5]
        entry["top_features"] = [[FEATURES[i], round(float(head.w1[i]), 3)] for i in order]
        report["kinds"][kind] = entry
    return data, report


# ---------------------------------------------------------------------- a knowledge base's own history
def _h(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def history_rows(kb, limit: int = 20000) -> list[dict]:
    """Rows from the knowledge base's traces the doctor examined (root traces): the forecast's features from
    the state after the gate, labels from what the doctor found and what won, and the users' ratings:

    - ``retrieval_miss``: a retrieval treatment's answer won and says something else (a refusal that stays a
      refusal does not count), or a refusal was rated not helpful;
    - ``noisy_context``: a context treatment's answer (filter_context, diversify) won and says something else,
      or an answer no repair changed was rated not helpful;
    - ``insufficient_evidence``: the plain answer was a refusal no repair changed and nobody rated it not helpful;
    - ``conflict`` / ``ambiguous``: the doctor found conflicting evidence / an ambiguous question.

    A label is left out where the doctor did not try what would have shown it (the fast path; a refusal whose
    retrieval was not re-run). Split by the question's hash (its repeats together, the same split every
    run): 60% train, 20% val, 20% test."""
    rows = []
    for t in list_traces(kb.db, limit, reruns=False):
        trace = load_trace(kb.db, t["id"], exact=True)
        if not trace.doctor or trace.parent_id:
            continue
        try:
            state = trace.state_after("gate")
        except Exception:  # noqa: BLE001 - a trace without a gate span (a crash, a clarification) teaches nothing
            continue
        won = [r for r in trace.repairs if _changed(r)]
        found = {s.name for s in trace.symptoms}
        refused = trace.answer.refused or trace.answer.route == "refuse"
        rated = [f.get("rating") for f in trace.feedback]
        bad = -1 in rated and 1 not in rated
        searched = any(r.layer == "retrieve" and r.after is not None for r in trace.repairs)  # a retrieval re-run
        labels = {"conflict": int("conflicting_evidence" in found), "ambiguous": int("ambiguous" in found)}
        # what the doctor did not try teaches nothing about it (the fast path, a refusal whose retrieval was not
        # re-run): those labels are left out, or each forecast would only confirm itself
        if not trace.doctor.get("fast_path"):
            if not refused or searched or bad:  # a refusal whose retrieval was not re-run says nothing of a miss
                labels["retrieval_miss"] = int(any(r.layer == "retrieve" for r in won) or (bad and refused))
            labels["noisy_context"] = int(any(r.symptom in ("noisy_context", "homogeneous_context") for r in won)
                                          or (bad and not refused and not won))
        if not refused or searched or bad:
            labels["insufficient_evidence"] = int(refused and not won and not bad)
        x = _h("forecast-history:" + " ".join(trace.query.lower().split()))  # a question's repeats in one split
        rows.append({"id": trace.id, "split": "train" if x < 0.6 else "val" if x < 0.8 else "test",
                     "source": "history", "labels": labels,
                     "features": dict(zip(FEATURES, (float(v) for v in features(state))))})
    return rows


MIN_AUROC = 0.75  # a head refitted from history is kept only if it ranks its held-out traces at least this well


def _changed(r) -> bool:
    """A repair that won and changed what the answer says (a refusal that stays a refusal at a higher confidence
    is no evidence the search had missed)."""
    if not r.accepted or r.after is None or r.before is None:
        return False
    words = [" ".join(CITE.sub("", x.answer).split()) for x in (r.before, r.after)]
    return r.before.route != r.after.route or words[0] != words[1]


def refit(kb, limit: int = 20000) -> tuple[dict, dict]:
    """(the knowledge base's forecast file, the report): a head for every kind its history has enough of, kept
    only when it ranks the held-out 20% of that history with AUROC ≥ MIN_AUROC — the doctor then acts on a
    forecast measured on this knowledge base, never on one that merely fitted it."""
    rows = history_rows(kb, limit)
    data, report = fit(rows)
    for kind in list(data["kinds"]):
        r = report["kinds"][kind]
        score = r.get("test_auroc")
        if not isinstance(score, float) or not score >= MIN_AUROC:
            del data["kinds"][kind]
            r.update(fitted=False, why=f"held-out AUROC {score} < {MIN_AUROC}: not kept")
    data["trained_on"] = f"{len(rows)} of this knowledge base's traces (ragclinic doctor train)"
    return data, report
