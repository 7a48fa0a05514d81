"""An experiment's report: per arm, the helpful ratio of rated answers, refusals and two over-refusal proxies, the
follow-up rate, p50 / p95 latency and model tokens; each arm beside the first with a confidence interval, the fixed
test's p-value, the always-valid p-value that the stop rule reads, and the sample size still needed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragclinic.experiment import stats
from ragclinic.experiment.design import Design
from ragclinic.text.support import content_terms

REPHRASE_OVERLAP = 0.5  # content-term overlap (of the smaller set) at which a next question rephrases the last


def report(design: Design, status: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The `experiment report --json` object from the experiment's request rows (store/experiments.requests)."""
    followed = follow_ups(rows, design.followup_minutes * 60)
    arms = [_arm(design, a.name, [r for r, f in zip(rows, followed) if r["arm"] == a.name],
                 [f for r, f in zip(rows, followed) if r["arm"] == a.name]) for a in design.arms]
    base = design.arms[0].name
    alpha = design.alpha / max(1, len(design.arms) - 1)  # Bonferroni over the comparisons with the first arm
    comparisons = [compare(design, base, a.name, rows, alpha) for a in design.arms[1:]]
    return {"name": design.name, "status": status.get("status", ""), "created": status.get("created"),
            "stopped": status.get("stopped"), "requests": len(rows),
            "design": {k: v for k, v in design.to_json().items() if k != "salt"},  # the salt would tell arms apart
            "arms": arms, "comparisons": comparisons, "decision": _decision(comparisons)}


def follow_ups(rows: Sequence[dict[str, Any]], window_s: float) -> list[bool]:
    """For each request, whether the same unit's next request came within ``window_s`` and rephrases it (the same
    question again, or one sharing at least half of its content terms): the user did not get what they asked."""
    out = [False] * len(rows)
    last: dict[str, int] = {}
    for i, r in enumerate(rows):
        unit = r["unit"]
        if unit and unit in last:
            prev = rows[last[unit]]
            if r["created"] - prev["created"] <= window_s and rephrases(prev["question"], r["question"]):
                out[last[unit]] = True
        if unit:
            last[unit] = i
    return out


def rephrases(before: str, after: str) -> bool:
    a, b = content_terms(before), content_terms(after)
    if not a or not b:
        return before.strip().lower() == after.strip().lower()
    return len(a & b) / min(len(a), len(b)) >= REPHRASE_OVERLAP


def _arm(design: Design, name: str, rows: list[dict[str, Any]], followed: list[bool]) -> dict[str, Any]:
    rated = _rated(rows)
    helpful = sum(rated)
    refusals = [(r, f) for r, f in zip(rows, followed) if r["refused"]]
    refusal_ratings = [r["ratings"][-1] for r, _ in refusals if r["ratings"]]
    ms = [r["ms"] for r in rows]
    ci = stats.wilson(helpful, len(rated), design.alpha)
    return {
        "arm": name, "settings": dict(design.arm(name).settings), "requests": len(rows),
        "units": len({r["unit"] for r in rows if r["unit"]}), "cached": sum(r["cached"] for r in rows),
        "rated": len(rated), "helpful": helpful, "helpful_ratio": _ratio(helpful, len(rated)),
        "helpful_ci": list(ci) if ci else None,
        "refusal_rate": _ratio(len(refusals), len(rows)),
        # over-refusal proxies: a refusal the user rated unhelpful; a refusal the user asked again in other words
        "refusals_rated_unhelpful": _ratio(sum(x == -1 for x in refusal_ratings), len(refusal_ratings)),
        "refusals_rephrased": _ratio(sum(f for _, f in refusals), len(refusals)),
        "followup_rate": _ratio(sum(followed), len(rows)),
        "p50_ms": float(np.percentile(ms, 50)) if ms else None, "p95_ms": float(np.percentile(ms, 95)) if ms else None,
        "tokens_mean": float(np.mean([r["tokens"] for r in rows])) if rows else None,
    }


def _rated(rows: Sequence[dict[str, Any]]) -> list[int]:
    """1 (helpful) / 0 per rated answer: a trace's latest rating, counted once (a cached answer shares its trace)."""
    seen, out = set(), []
    for r in rows:
        if r["ratings"] and r["trace_id"] not in seen:
            seen.add(r["trace_id"])
            out.append(int(r["ratings"][-1] == 1))
    return out


def compare(design: Design, base: str, other: str, rows: Sequence[dict[str, Any]], alpha: float) -> dict[str, Any]:
    """``other`` against ``base`` on the helpful ratio: difference, interval, the fixed test's p, the always-valid p
    over the rated answers in time order, the sample size the observed (or the planned) difference needs, and the
    stop rule's verdict; latency beside it (a bootstrap interval of the difference of medians)."""
    seen: set[str] = set()
    seq: list[tuple[int, int]] = []  # (arm index, helpful) per rated answer, in time order
    for r in rows:
        if r["arm"] in (base, other) and r["ratings"] and r["trace_id"] not in seen:
            seen.add(r["trace_id"])
            seq.append((0 if r["arm"] == base else 1, int(r["ratings"][-1] == 1)))
    a = [h for i, h in seq if i == 0]
    b = [h for i, h in seq if i == 1]
    k1, n1, k2, n2 = sum(a), len(a), sum(b), len(b)
    p_seq = stats.msprt_p(a, b, [i for i, _ in seq], design.mde, design.min_rated)
    p_valid = p_seq[-1] if p_seq else 1.0
    p1, p2 = (k1 / n1 if n1 else None), (k2 / n2 if n2 else None)
    diff = p2 - p1 if n1 and n2 else None
    # what the stop rule needs: for the observed difference, else for the planned one at the worst case p = 0.5
    planned = stats.sequential_sample_size(0.5, 0.5 + design.mde, alpha, design.power, design.mde)
    observed = stats.sequential_sample_size(p1, p2, alpha, design.power, design.mde) if diff else None
    need = observed if observed is not None else planned
    fixed = stats.sample_size(p1, p2, alpha, design.power) if diff else stats.sample_size(
        0.5, 0.5 + design.mde, alpha, design.power)
    enough = n1 >= design.min_rated and n2 >= design.min_rated
    if enough and p_valid <= alpha:
        verdict, why = (other if diff > 0 else base), (f"always-valid p = {p_valid:.4f} ≤ α = {alpha:g} with "
                                                       f"{n1} and {n2} rated answers")
    elif enough and min(n1, n2) >= (planned or 0):
        verdict, why = "none", (f"no difference of {design.mde:g} or more: both arms passed the planned "
                                f"{planned} rated answers and the always-valid p is {p_valid:.3f}")
    else:
        verdict, why = "", (f"keep running: always-valid p = {p_valid:.3f} > α = {alpha:g}" if enough else
                            f"keep running: each arm needs {design.min_rated} rated answers before any decision")
    base_ms = [r["ms"] for r in rows if r["arm"] == base]
    other_ms = [r["ms"] for r in rows if r["arm"] == other]
    lat = stats.bootstrap_diff(base_ms, other_ms)
    ci = stats.newcombe(k1, n1, k2, n2, alpha)
    return {"baseline": base, "arm": other, "metric": "helpful_ratio", "difference": diff,
            "ci": list(ci) if ci else None, "alpha": alpha, "p_fixed": stats.two_proportion_p(k1, n1, k2, n2),
            "p_always_valid": p_valid, "p_always_valid_trail": [round(p, 6) for p in p_seq],
            "sample_size_per_arm": need, "needed_more_per_arm": max(0, need - min(n1, n2)) if need else None,
            "fixed_sample_size_per_arm": fixed,
            "winner": verdict or None, "stop": bool(verdict), "why": why,
            "p50_ms_difference": (float(np.median(other_ms) - np.median(base_ms)) if base_ms and other_ms else None),
            "p50_ms_ci": list(lat) if lat else None}


def _decision(comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    winners = [c["winner"] for c in comparisons if c["winner"] and c["winner"] != "none"]
    stop = bool(comparisons) and all(c["stop"] for c in comparisons)
    if winners:
        text = "; ".join(f"{c['winner']} is better than {c['baseline'] if c['winner'] == c['arm'] else c['arm']} "
                         f"({c['why']})" for c in comparisons if c["winner"] and c["winner"] != "none")
    elif stop:
        text = "no arm differs from the first by the planned difference: stop; keep the first arm"
    else:
        text = "; ".join(c["why"] for c in comparisons) or "no comparison"
    return {"stop": stop or bool(winners), "winners": winners, "text": text}


def _ratio(k: int, n: int) -> float | None:
    return k / n if n else None
