"""Online experiments over HTTP (issue 56): the admin API — `GET/POST /v1/experiments`, `POST
/v1/experiments/{name}/stop` — the report (`GET /v1/experiments/{name}/report`, a tenant's key: its own requests
only) and its plot, the failed-answer library's list (`GET /v1/cases`, a tenant's: its own), and the UI's
Experiments page."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from ragclinic.cases.library import NoCase
from ragclinic.experiment.design import Arm, arm_settings, parse_share
from ragclinic.experiment.service import NoExperiment
from ragclinic.server.auth import Principal
from ragclinic.server.deps import Caller, state
from ragclinic.server.errors import ApiError
from ragclinic.server.ui import page, who

router = APIRouter(prefix="/v1", tags=["experiments"])
pages = APIRouter(include_in_schema=False)
# A report reads every request of the experiment (the caller's tenant's): the route, its plot and the page share one
# reading per caller for REPORT_TTL_S, so repeated reads cost one computation (as the health page does).
REPORT_TTL_S = 10.0
_REPORTS: OrderedDict[tuple, tuple[float, dict]] = OrderedDict()
_REPORTS_MAX = 64
_REPORTS_LOCK = threading.Lock()


class ArmBody(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict, max_length=60)  # query-time settings only
    share: float | None = Field(None, gt=0, le=100)


class StartBody(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    arms: list[ArmBody] = Field(min_length=2, max_length=6)
    alpha: float = Field(0.05, gt=0, lt=0.5)
    power: float = Field(0.8, gt=0.5, lt=1)
    mde: float = Field(0.10, gt=0, lt=1)
    followup_minutes: float = Field(10.0, gt=0, le=24 * 60)
    min_rated: int = Field(30, ge=1, le=100_000)


def _admin(who_: Principal, what: str) -> None:
    if who_.tenant:
        raise ApiError(403, "forbidden", f"{what} concerns every tenant's traffic: it needs a key without a tenant")


@router.get("/experiments")
def listed(request: Request, who_: Principal = Caller) -> dict:
    """Every experiment with its arms, shares and requests (admin keys)."""
    _admin(who_, "the list of experiments")
    with state(request).pool.searcher() as clinic:
        return {"experiments": clinic.experiments.listed()}


@router.post("/experiments", status_code=201)
def start(body: StartBody, request: Request, who_: Principal = Caller) -> dict:
    """Start an experiment (admin keys): `arms` [{name, settings, share}] — the first is the baseline; shares
    default to equal. Every question then runs in the arm its `session` (else its key) is assigned to."""
    _admin(who_, "an experiment")
    with state(request).pool.writing() as clinic:
        given = [a.share for a in body.arms]
        if any(given) and not all(given):
            raise ApiError(422, "invalid_request", "arms: give every arm a share, or none (equal shares)")
        shares = parse_share("/".join(f"{s:g}" for s in given) if all(given) else None, len(body.arms))
        arms = [Arm(a.name, s, arm_settings(a.settings, f"arm {a.name}", clinic.settings))
                for a, s in zip(body.arms, shares)]
        return clinic.experiments.start(body.name, arms, alpha=body.alpha, power=body.power, mde=body.mde,
                                        followup_minutes=body.followup_minutes, min_rated=body.min_rated)


@router.post("/experiments/{name}/stop")
def stop(name: str, request: Request, who_: Principal = Caller) -> dict:
    _admin(who_, "stopping an experiment")
    with state(request).pool.writing() as clinic:
        return _found(lambda: clinic.experiments.stop(name))


@router.get("/experiments/{name}/report")
def report(name: str, request: Request, who_: Principal = Caller) -> dict:
    """The `experiment report --json` object; a tenant's key gets the report over its own requests only (read at
    most once every 10 s per experiment and tenant)."""
    return _report(request, name, who_)


@router.get("/experiments/{name}/plot.png", response_class=Response)
def plot(name: str, request: Request, who_: Principal = Caller) -> Response:
    """The report's plot (per-arm helpful ratio with intervals; the always-valid p-value over time)."""
    return _plot(request, name, who_)


@router.get("/cases")
def cases(request: Request, limit: int = 100, who_: Principal = Caller) -> dict:
    """The failed-answer library, newest first (a tenant's key: its own cases)."""
    if not 1 <= limit <= 1000:
        raise ApiError(422, "invalid_request", "limit: between 1 and 1000")
    with state(request).pool.searcher() as clinic:
        return {"cases": clinic.cases.listed(enforced=who_.enforced if who_.tenant else None, limit=limit)}


@router.get("/cases/{case_id}")
def case(request: Request, case_id: int = Path(ge=1, le=2 ** 63 - 1), who_: Principal = Caller) -> dict:
    with state(request).pool.searcher() as clinic:
        try:
            return clinic.cases.show(case_id, who_.enforced if who_.tenant else None)
        except NoCase as e:
            raise ApiError(404, "not_found", str(e)) from None


# ---------------------------------------------------------------------- the UI's page
@pages.get("/experiments")
def experiments_page(request: Request):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        names = [e["name"] for e in clinic.experiments.listed()]
        found = clinic.cases.listed(enforced=caller.enforced if caller.tenant else None, limit=20)
    reports = [_report(request, n, caller) for n in names[:5]]
    return page(request, "experiments.html", "experiments", caller, reports=reports, cases=found)


@pages.get("/experiments/{name}/plot.png")
def experiments_plot(name: str, request: Request):
    return _plot(request, name, who(request))


def _plot(request: Request, name: str, who_: Principal) -> Response:
    from ragclinic.experiment.plot import plot_png  # on use: matplotlib

    rep = _report(request, name, who_)
    reading = hashlib.sha256(json.dumps(rep, sort_keys=True, default=str).encode()).hexdigest()
    png = state(request).renders.get(("experiment", reading), lambda: plot_png(rep))
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})


def _report(request: Request, name: str, who_: Principal) -> dict:
    """The report as ``who_`` may see it (a tenant's: its own requests), computed at most once per REPORT_TTL_S."""
    rc = state(request)
    key = (str(rc.settings.kb), name, tuple(sorted(who_.enforced.items())))
    now = time.monotonic()
    with _REPORTS_LOCK:
        hit = _REPORTS.get(key)
    if hit is not None and now - hit[0] < REPORT_TTL_S:
        return hit[1]
    with rc.pool.searcher() as clinic:
        rep = _found(lambda: clinic.experiments.report(name, who_.enforced or None))
    with _REPORTS_LOCK:
        _REPORTS[key] = (now, rep)
        _REPORTS.move_to_end(key)
        while len(_REPORTS) > _REPORTS_MAX:
            _REPORTS.popitem(last=False)
    return rep


def _found(fn):
    try:
        return fn()
    except NoExperiment as e:
        raise ApiError(404, "not_found", str(e)) from None
