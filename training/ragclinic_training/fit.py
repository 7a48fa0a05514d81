"""Fitting the verifier's heads: a standardised logistic regression and a one-hidden-layer MLP per task, chosen by
validation log-loss, then temperature-calibrated and thresholded on the validation split (never on test)."""

from __future__ import annotations

import numpy as np

from ragclinic.verify.head import Head


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _adam(params, grads_fn, steps: int, lr: float):
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        grads = grads_fn(params)
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            p -= lr * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
    return params


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, std = x.mean(axis=0), x.std(axis=0)
    mean[0], std[0] = 0.0, 1.0  # the bias column stays 1
    std[std < 1e-6] = 1.0
    return mean, std


def fit_logistic(x, y, weights, l2: float = 1e-3, steps: int = 1500, lr: float = 0.05) -> Head:
    mean, std = _standardise(x)
    z = (x - mean) / std

    def grads(ps):
        w, = ps
        err = (_sigmoid(z @ w) - y) * weights
        return [z.T @ err / weights.sum() + l2 * w]

    w, = _adam([np.zeros(x.shape[1])], grads, steps, lr)
    return Head("logistic", mean, std, w, np.zeros(()))


def fit_mlp(x, y, weights, hidden: int = 16, l2: float = 1e-3, steps: int = 3000, lr: float = 0.01,
            seed: int = 0) -> Head:
    rng = np.random.default_rng(seed)
    mean, std = _standardise(x)
    z = (x - mean) / std
    d = x.shape[1]
    params = [rng.normal(0, 1 / np.sqrt(d), (d, hidden)), np.zeros(hidden), rng.normal(0, 1 / np.sqrt(hidden), hidden),
              np.zeros(1)]

    def grads(ps):
        w1, b1, w2, b2 = ps
        h = np.tanh(z @ w1 + b1)
        err = (_sigmoid(h @ w2 + b2[0]) - y) * weights / weights.sum()
        gw2 = h.T @ err + l2 * w2
        dh = np.outer(err, w2) * (1 - h * h)
        return [z.T @ dh + l2 * w1, dh.sum(axis=0), gw2, np.array([err.sum()])]

    w1, b1, w2, b2 = _adam(params, grads, steps, lr)
    return Head("mlp", mean, std, w1, b1, w2, float(b2[0]))


def calibrate(head: Head, x, y) -> Head:
    """The temperature minimising validation log-loss (a grid: one parameter needs nothing finer)."""
    raw = head.logit(x) * head.temperature
    best = min(np.linspace(0.5, 3.0, 51), key=lambda t: log_loss(_sigmoid(raw / t), y))
    head.temperature = float(best)
    return head


def choose_threshold(p: np.ndarray, y: np.ndarray, min_recall: float) -> float:
    """The highest threshold that keeps recall of the positives ≥ ``min_recall`` on this split."""
    pos = np.sort(p[y == 1])
    if not len(pos):
        return 0.5
    k = int(np.floor((1 - min_recall) * len(pos)))
    return float(max(0.01, min(0.99, pos[k] - 1e-6)))


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return float(total)
