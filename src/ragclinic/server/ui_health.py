"""The UI's health page: how the knowledge base has been answering (trace/health.py) — the current window against
the baseline with any drift alert, per-day plots of the watched rates, latency and symptoms, and per KB version.
Admin keys only: it counts every tenant's questions (as /metrics does)."""

from __future__ import annotations

import hashlib
import io
import json
import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ragclinic.server.deps import state
from ragclinic.server.errors import ApiError
from ragclinic.server.ui import page, who

router = APIRouter(include_in_schema=False)
TTL = 60  # seconds a reading of the traces serves the page and its plot
_CACHE: dict = {}
ROWS = (("answer_rate", "answer rate"), ("refusal_rate", "refusal rate"), ("hit_rate", "hit rate"),
        ("top1_relevance", "top-1 relevance"), ("helpful_ratio", "helpful"), ("p50_ms", "p50 ms"),
        ("p95_ms", "p95 ms"))


def _health(request: Request) -> dict:
    caller = who(request)
    if caller.tenant:
        raise ApiError(403, "forbidden", "the health page counts every tenant's questions: it needs a key without "
                                         "a tenant")
    rc = state(request)
    if not (rc.settings.kb / "kb.sqlite3").exists():
        from ragclinic.trace.health import stats  # on use: an empty knowledge base's page

        return {"current": stats([]), "baseline": stats([]), "drift": [], "alerts": [], "by_day": [],
                "by_version": [], "window_hours": 24.0, "baseline_days": 7.0, "days": 30.0}
    key = (str(rc.settings.kb), int(time.time() // TTL))  # the page and its plot read the traces once a minute
    if _CACHE.get("key") != key:
        with rc.pool.searcher() as c:
            _CACHE.update(key=key, health=c.health())
    return _CACHE["health"]


@router.get("/health")
def health_page(request: Request):
    h = _health(request)
    symptoms = sorted(set(h["current"]["symptoms"]) | set(h["baseline"]["symptoms"]))
    return page(request, "health.html", "health", who(request), h=h, rows=ROWS, symptoms=symptoms)


@router.get("/health/plot.png")
def health_plot(request: Request):
    """Per day: the watched rates with the baseline's as dashed lines; latency; the symptoms' rates. Drawn through
    the server's bounded renders (render.py): one reading of the traces is drawn once."""
    h = _health(request)
    reading = hashlib.sha256(json.dumps(h, sort_keys=True, default=str).encode()).hexdigest()
    png = state(request).renders.get(("health", reading), lambda: _plot(h))
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})


def _plot(h: dict) -> bytes:
    import matplotlib  # on use: matplotlib (heavy), only when the plot is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use: as above
    days = [d["day"][5:] for d in h["by_day"]]
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for key, label in (("hit_rate", "hit rate"), ("top1_relevance", "top-1 relevance"),
                       ("refusal_rate", "refusal rate"), ("answer_rate", "answer rate")):
        line, = axes[0].plot(days, [d[key] for d in h["by_day"]], marker="o", label=label)
        if h["baseline"].get(key) is not None:
            axes[0].axhline(h["baseline"][key], ls="--", lw=0.8, color=line.get_color())
    axes[0].set_ylim(0, 1.05)
    axes[0].set_title("per day (dashed: the baseline window)")
    axes[0].legend(loc="lower left", fontsize=8)
    for key, label in (("p50_ms", "p50"), ("p95_ms", "p95")):
        axes[1].plot(days, [(d[key] or 0) / 1000 for d in h["by_day"]], marker="o", label=label)
    axes[1].set_ylabel("seconds")
    axes[1].legend(loc="upper left", fontsize=8)
    for name in sorted({s for d in h["by_day"] for s in d["symptoms"]}):
        axes[2].plot(days, [d["symptoms"].get(name, 0.0) for d in h["by_day"]], marker="o", label=name)
    axes[2].set_ylabel("share of questions")
    axes[2].set_title("the doctor's symptoms")
    if axes[2].lines:
        axes[2].legend(loc="upper left", fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[2].tick_params(axis="x", rotation=45)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()
