"""The report's statistics against published values, and the stop rule's promise: read after every rated answer, it
declares a winner between identical arms no more often than α, and finds a real difference."""

from __future__ import annotations

import random

import pytest

from ragclinic.experiment import stats


def test_wilson_and_newcombe_match_the_published_examples():
    lo, hi = stats.wilson(81, 263)  # Newcombe (1998), table I: 0.2553, 0.3662
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    lo, hi = stats.newcombe(48, 80, 56, 70)  # Newcombe (1998) method 10, 56/70 − 48/80: 0.0524, 0.3339
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)


def test_the_sample_size_and_the_fixed_test():
    assert stats.sample_size(0.5, 0.6) == 388  # the textbook figure for 50% → 60%, α .05, power .8
    assert stats.sample_size(0.5, 0.5) is None
    assert stats.two_proportion_p(50, 100, 50, 100) == pytest.approx(1.0)
    assert stats.two_proportion_p(40, 100, 60, 100) == pytest.approx(0.0047, abs=0.0005)


def _run(p1: float, p2: float, n: int, rnd: random.Random, tau: float = 0.1) -> float:
    order = [rnd.randrange(2) for _ in range(n)]
    a = [int(rnd.random() < p1) for _ in range(n)]
    b = [int(rnd.random() < p2) for _ in range(n)]
    trail = stats.msprt_p(a, b, order, tau, min_each=30)
    return trail[-1]


def test_identical_arms_read_after_every_answer_rarely_declare_a_winner():
    rnd = random.Random(3)
    wins = sum(_run(0.6, 0.6, 600, rnd) <= 0.05 for _ in range(300))
    assert wins / 300 <= 0.05  # the z test read as often would declare a winner in about a quarter of these


def test_the_naive_peeking_test_would_not_keep_its_promise():
    """The reason for the stop rule: the fixed test's p read after every answer crosses 0.05 far too often."""
    rnd, crossed = random.Random(3), 0
    for _ in range(100):
        k = [0, 0]
        n = [0, 0]
        hit = False
        for _i in range(600):
            arm = rnd.randrange(2)
            n[arm] += 1
            k[arm] += rnd.random() < 0.6
            if min(n) >= 30 and stats.two_proportion_p(k[0], n[0], k[1], n[1]) <= 0.05:
                hit = True
                break
        crossed += hit
    assert crossed / 100 > 0.10


def test_a_real_difference_is_found():
    rnd = random.Random(5)
    found = sum(_run(0.5, 0.7, 600, rnd) <= 0.05 for _ in range(50))
    assert found / 50 >= 0.9


def test_the_bootstrap_interval_covers_the_difference_of_medians():
    a, b = [100.0 + i % 7 for i in range(200)], [150.0 + i % 7 for i in range(200)]
    lo, hi = stats.bootstrap_diff(a, b)
    assert lo <= 50.0 <= hi and hi - lo < 10
    assert stats.bootstrap_diff([], b) is None


def test_the_stop_rule_needs_more_than_the_fixed_test_and_its_size_has_the_power():
    fixed, seq = stats.sample_size(0.5, 0.65), stats.sequential_sample_size(0.5, 0.65, tau=0.1)
    assert fixed < seq < 4 * fixed
    assert stats.sequential_sample_size(0.5, 0.5) is None and stats.sequential_sample_size(1.0, 0.0) >= 2
    rnd = random.Random(9)
    found = 0
    for _ in range(60):  # at the size the report says, the always-valid rule finds the difference ≥ 80% of the time
        order = [rnd.randrange(2) for _ in range(3 * seq)]
        a = [int(rnd.random() < 0.5) for _ in range(3 * seq)]
        b = [int(rnd.random() < 0.65) for _ in range(3 * seq)]
        trail = stats.msprt_p(a, b, order, 0.1, min_each=30)
        counts, reached = [0, 0], None
        for i, arm in enumerate(order):
            counts[arm] += 1
            if min(counts) >= seq:
                reached = i
                break
        found += trail[reached] <= 0.05
    assert found / 60 >= 0.75
