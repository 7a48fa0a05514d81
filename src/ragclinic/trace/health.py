"""A knowledge base's health over time, from its own traces and ratings (issue 38): per day and per version of the
knowledge base, and the current window against a baseline window before it.

Each question's root trace (not the doctor's or the debugger's re-runs) is read into a :class:`Reading`:

- **answered / refused**: the route of the answer the user got (``final``);
- **hit**: the retrieval brought a passage the gate scored as evidence (its support at or above the gate's threshold
  in the trace's own settings) — the hit rate of retrieval without gold labels; None where the gate did not score;
- **top-1 relevance**: the gate's support of the first passage (the retrieval's best after scope);
- **symptoms**: the doctor's findings on it; **ms**: the run's time; **ratings**: users' helpful (1) / not (-1).

``drift`` compares the watched rates (hit rate, top-1 relevance, refusal rate) of the current window with the
baseline's: a relative change above ``DRIFT`` (15%) that is also at least ``Z`` standard errors (so that a day of few
questions does not alert by chance), with at least ``MIN_QUESTIONS`` in each window, is an alert — the rule the
shipped Prometheus alerts apply to the gauges `ragclinic serve` exports from this (server/monitoring/alerts.yml).
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ragclinic.store.db import Database

DRIFT = 0.15  # a watched rate that moves this much (relative) from the baseline is an alert ...
Z = 2.0  # ... when the move is also this many standard errors (not one unlucky day of few questions)
MIN_QUESTIONS = 10  # a window with fewer questions says nothing
WATCHED = ("hit_rate", "top1_relevance", "refusal_rate")
SPIKE = 2.0  # a symptom whose rate is this many times the baseline's (and at least SPIKE_MIN) is a spike
SPIKE_MIN = 0.1
DAY = 86400.0
_NEED = re.compile(r"best evidence score [0-9.]+ (?:≥|<) ([0-9.]+)")


@dataclass(frozen=True)
class Reading:
    created: float
    kb_version: int
    route: str
    refused: bool
    hit: bool | None
    top1: float | None
    ms: float
    symptoms: tuple[str, ...] = ()
    ratings: tuple[int, ...] = ()


def readings(db: Database, since: float = 0.0, until: float | None = None) -> list[Reading]:
    """The root traces created in [since, until), oldest first."""
    sql = "SELECT data FROM traces WHERE parent_id = '' AND created >= ?"
    args: list[Any] = [since]
    if until is not None:
        sql += " AND created < ?"
        args.append(until)
    return [reading(json.loads(data)) for (data,) in db.conn.execute(sql + " ORDER BY created", args)]


def reading(t: dict) -> Reading:
    """One stored trace (its JSON) reduced to what health reads."""
    final = t.get("final") or {}
    gate = next((s for s in t.get("spans", ()) if s.get("layer") == "gate" and s.get("status") == "ok"), None)
    out = (gate or {}).get("outputs") or {}
    supports = {int(n): float(v) for n, v in (out.get("supports") or {}).items()}
    threshold = _threshold(out, t.get("settings") or {})
    ms = max((s.get("started_ms", 0.0) + s.get("duration_ms", 0.0) for s in t.get("spans", ())), default=0.0)
    ratings = tuple(int(f["rating"]) for f in t.get("feedback", ()) if f.get("rating") in (1, -1))
    return Reading(float(t.get("created", 0.0)), int(t.get("kb_version", 0)), final.get("route", ""),
                   bool(final.get("refused")), (max(supports.values()) >= threshold) if supports else None,
                   supports.get(1), float(ms), tuple(s.get("name", "") for s in t.get("symptoms", ())), ratings)


def _threshold(gate: dict, settings: dict) -> float:
    """The evidence the gate needed: as its decision states it ("best evidence score 0.42 < 0.55 threshold"), else
    the trace's setting for how the passages were scored."""
    if m := _NEED.search((gate.get("decision") or {}).get("reason", "")):
        return float(m.group(1))
    lexical = any("lexical" in by for by in gate.get("support_by", ()))  # scored by word overlap, not a judge
    return float(settings.get("gate_threshold_lexical" if lexical else "gate_threshold_judge") or 0.5)


def stats(rs: list[Reading]) -> dict[str, Any]:
    """The window's rates (None where nothing in it says), latency percentiles and symptom rates."""
    n = len(rs)
    scored = [r for r in rs if r.hit is not None]
    tops = [r.top1 for r in rs if r.top1 is not None]
    ratings = [x for r in rs for x in r.ratings]
    ms = sorted(r.ms for r in rs)
    symptoms = Counter(s for r in rs for s in set(r.symptoms))
    return {"questions": n,
            "answer_rate": _share(sum(r.route == "answer" and not r.refused for r in rs), n),
            "refusal_rate": _share(sum(r.refused for r in rs), n),
            "hit_rate": _share(sum(bool(r.hit) for r in scored), len(scored)),
            "top1_relevance": round(statistics.fmean(tops), 4) if tops else None,
            "top1_sd": round(statistics.pstdev(tops), 4) if tops else None, "scored": len(scored),
            "top1_n": len(tops),
            "helpful_ratio": _share(sum(x == 1 for x in ratings), len(ratings)),
            "ratings": len(ratings),
            "p50_ms": round(_percentile(ms, 0.5), 1) if ms else None,
            "p95_ms": round(_percentile(ms, 0.95), 1) if ms else None,
            "symptoms": {k: round(v / n, 4) for k, v in sorted(symptoms.items())} if n else {}}


def drift(current: dict[str, Any], baseline: dict[str, Any], threshold: float = DRIFT) -> list[dict[str, Any]]:
    """Each watched rate's relative change from the baseline and its z-score (two proportions; two means for top-1
    relevance), and symptom spikes; ``alert`` where the change passes ``threshold``, |z| ≥ ``Z`` and the current
    window has ``MIN_QUESTIONS``."""
    enough = current.get("questions", 0) >= MIN_QUESTIONS and baseline.get("questions", 0) >= MIN_QUESTIONS
    out = []
    for k in WATCHED:
        a, b = current.get(k), baseline.get(k)
        if a is None or b is None:
            continue
        change = (a - b) / b if b else (0.0 if a == 0 else math.inf)
        z = zscore(k, current, baseline)
        out.append({"metric": k, "current": a, "baseline": b, "change": _finite(change, 4), "z": _finite(z, 2),
                    "alert": enough and abs(change) > threshold and abs(z) >= Z})
    n1, n2 = current.get("questions", 0), baseline.get("questions", 0)
    for name, rate in (current.get("symptoms") or {}).items():
        base = (baseline.get("symptoms") or {}).get(name, 0.0)
        z = _two_proportions(rate, n1, base, n2)
        spike = enough and rate >= SPIKE_MIN and rate >= SPIKE * base and z >= Z
        out.append({"metric": f"symptom:{name}", "current": rate, "baseline": base,
                    "change": round((rate - base) / base, 4) if base else None, "z": _finite(z, 2), "alert": spike})
    return out


def zscore(metric: str, current: dict[str, Any], baseline: dict[str, Any]) -> float:
    """How many standard errors the current window's ``metric`` is from the baseline's."""
    if metric == "top1_relevance":
        n1, n2 = current.get("top1_n", 0), baseline.get("top1_n", 0)
        if not n1 or not n2:
            return 0.0
        se = ((current["top1_sd"] ** 2) / n1 + (baseline["top1_sd"] ** 2) / n2) ** 0.5
        diff = current[metric] - baseline[metric]
        return diff / se if se else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    n = "scored" if metric == "hit_rate" else "questions"
    return _two_proportions(current[metric], current.get(n, 0), baseline[metric], baseline.get(n, 0))


def _two_proportions(p1: float, n1: int, p2: float, n2: int) -> float:
    if not n1 or not n2:
        return 0.0
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)) ** 0.5
    return (p1 - p2) / se if se else 0.0


def health(db: Database, *, window_hours: float = 24.0, baseline_days: float = 7.0, days: float = 30.0,
           now: float | None = None) -> dict[str, Any]:
    """Per day and per knowledge-base version over the last ``days``, and the last ``window_hours`` against the
    ``baseline_days`` before them."""
    now = time.time() if now is None else now
    cur_start = now - window_hours * 3600
    base_start = cur_start - baseline_days * DAY
    rs = readings(db, min(now - days * DAY, base_start), now)
    current = stats([r for r in rs if r.created >= cur_start])
    baseline = stats([r for r in rs if base_start <= r.created < cur_start])
    per_day: dict[str, list[Reading]] = defaultdict(list)
    per_version: dict[int, list[Reading]] = defaultdict(list)
    for r in rs:
        if r.created >= now - days * DAY:
            per_day[datetime.fromtimestamp(r.created, timezone.utc).strftime("%Y-%m-%d")].append(r)
            per_version[r.kb_version].append(r)
    checks = drift(current, baseline) if current["questions"] and baseline["questions"] else []
    return {"now": now, "window_hours": window_hours, "baseline_days": baseline_days, "days": days,
            "current": current, "baseline": baseline, "drift": checks,
            "alerts": [c for c in checks if c["alert"]],
            "by_day": [{"day": d, **stats(v)} for d, v in sorted(per_day.items())],
            "by_version": [{"kb_version": k, **stats(v)} for k, v in sorted(per_version.items())]}


def _finite(x: float, digits: int) -> float | None:
    """``x`` rounded, None where it is infinite (JSON has no Infinity): a change from a baseline of 0."""
    return round(x, digits) if math.isfinite(x) else None


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def _percentile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``xs`` (nearest rank)."""
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]
