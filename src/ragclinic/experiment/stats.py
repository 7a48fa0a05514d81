"""The statistics of an experiment's report, in numpy and the standard library: Wilson intervals for a ratio, Newcombe's
interval for a difference of two ratios, the two-proportion z test, the sample size a difference needs, a bootstrap
interval for a difference of medians, and the always-valid p-value of a mixture sequential probability ratio test
(mSPRT; Johari, Pekelis & Walsh, "Always valid inference", 2017) — the stop rule: it may be read after every
request without raising the false-positive rate above α, where the z test's p-value read again and again would."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

N = NormalDist()


def z(alpha: float) -> float:
    """The two-sided normal quantile for ``alpha``."""
    return N.inv_cdf(1 - alpha / 2)


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float] | None:
    """Wilson score interval of k/n; None without observations."""
    if n == 0:
        return None
    q, p = z(alpha), k / n
    mid = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q * math.sqrt(p * (1 - p) / n + q * q / (4 * n * n)) / (1 + q * q / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def newcombe(k1: int, n1: int, k2: int, n2: int, alpha: float = 0.05) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval for p2 − p1 (method 10); None when an arm has no observation."""
    a, b = wilson(k1, n1, alpha), wilson(k2, n2, alpha)
    if a is None or b is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    d = p2 - p1
    lo = d - math.sqrt((p2 - b[0]) ** 2 + (a[1] - p1) ** 2)
    hi = d + math.sqrt((b[1] - p2) ** 2 + (p1 - a[0]) ** 2)
    return lo, hi


def two_proportion_p(k1: int, n1: int, k2: int, n2: int) -> float | None:
    """Two-sided p-value of the pooled two-proportion z test (valid read once, at a sample size fixed ahead)."""
    if n1 == 0 or n2 == 0:
        return None
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    return 2 * (1 - N.cdf(abs(k2 / n2 - k1 / n1) / se))


def sample_size(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Observations each arm needs for the z test to find p2 − p1 with ``power`` at ``alpha``; None for no
    difference."""
    if p1 == p2:
        return None
    pbar = (p1 + p2) / 2
    num = z(alpha) * math.sqrt(2 * pbar * (1 - pbar)) + N.inv_cdf(power) * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(num * num / (p2 - p1) ** 2)


def sequential_sample_size(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8, tau: float = 0.1,
                           limit: int = 10_000_000) -> int | None:
    """Observations each arm needs for the always-valid test (``msprt_p`` with mixing ``tau``) to reach ``alpha``
    with probability ≥ ``power``: the smallest n at which the observed difference, ``power``'s quantile below the
    true one, already makes the likelihood ratio ≥ 1/α (read once at n; reading all along only finds it sooner).
    Larger than ``sample_size``: the price of a rule that may be read at any time. None for no difference."""
    if p1 == p2:
        return None
    # the variance kept ≥ 0.01: an arm observed all-right or all-wrong so far has not shown it has none
    d, v, zp = abs(p2 - p1), max(p1 * (1 - p1) + p2 * (1 - p2), 0.01), N.inv_cdf(power)

    def reached(n: int) -> bool:
        s2 = v / n
        low = d - zp * math.sqrt(s2)
        if low <= 0:
            return False
        t2 = tau * tau
        return 0.5 * math.log(s2 / (s2 + t2)) + t2 * low * low / (2 * s2 * (s2 + t2)) >= math.log(1 / alpha)

    hi = 2
    while not reached(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reached(mid) else (mid, hi)
    return hi


def msprt_p(first: Sequence[int], second: Sequence[int], order: Sequence[int], tau: float,
            min_each: int = 1) -> list[float]:
    """The always-valid p-value after each observation: ``first`` / ``second`` the two arms' outcomes (0 / 1),
    ``order`` which arm each successive observation came from (0 or 1, in time order). The normal-mixture likelihood
    ratio of the difference of means, with the mixing variance ``tau``² and the plug-in variance of each arm
    (bounded below so that a run of identical early outcomes cannot look certain); the p-value is the running
    minimum of 1/Λ, read only once each arm has ``min_each`` observations (1.0 before)."""
    out, p, i, j, s1, s2 = [], 1.0, 0, 0, 0, 0
    t2 = tau * tau
    for arm in order:
        if arm == 0:
            s1 += first[i]
            i += 1
        else:
            s2 += second[j]
            j += 1
        if i >= min_each and j >= min_each:
            m1, m2 = s1 / i, s2 / j
            v = _var(m1, i) / i + _var(m2, j) / j  # the variance of the difference of means
            lam = math.sqrt(v / (v + t2)) * math.exp(t2 * (m2 - m1) ** 2 / (2 * v * (v + t2)))
            p = min(p, 1.0 / lam)
        out.append(p)
    return out


def _var(m: float, n: int) -> float:
    """A Bernoulli arm's variance, with its mean kept ≥ 1/(n+2) from 0 and 1 (the Laplace-smoothed mean)."""
    m = min(max(m, 1.0 / (n + 2)), 1 - 1.0 / (n + 2))
    return m * (1 - m)


def bootstrap_diff(a: Sequence[float], b: Sequence[float], stat=np.median, n: int = 2000, alpha: float = 0.05,
                   seed: int = 0) -> tuple[float, float] | None:
    """A percentile bootstrap interval for stat(b) − stat(a); None when an arm has no value."""
    if not len(a) or not len(b):
        return None
    rng = np.random.default_rng(seed)
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    diffs = stat(xb[rng.integers(0, len(xb), (n, len(xb)))], axis=1) - stat(
        xa[rng.integers(0, len(xa), (n, len(xa)))], axis=1)
    return float(np.quantile(diffs, alpha / 2)), float(np.quantile(diffs, 1 - alpha / 2))
