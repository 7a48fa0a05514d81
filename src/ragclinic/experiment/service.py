"""``Experiments``: the experiments of one knowledge base — start, stop, list, report — and, for the Clinic, the arm a
request runs in and the record of its outcome. One experiment runs at a time (a user must not be in two)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import ConfigError, RagclinicError
from ragclinic.experiment import report as reports
from ragclinic.experiment.design import Arm, Design, arms_from
from ragclinic.store import experiments as records


class NoExperiment(RagclinicError):
    """A name that names no experiment of this knowledge base."""


class Experiments:
    def __init__(self, db, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.db, self.settings, self.clock = db, settings, clock

    # ------------------------------------------------------------------ the admin's
    def start(self, name: str, arms: Sequence[str] | Sequence[Arm], share: str | None = None, *,
              alpha: float = 0.05, power: float = 0.8, mde: float = 0.10, followup_minutes: float = 10.0,
              min_rated: int = 30) -> dict[str, Any]:
        """Start ``name`` with ``arms`` (``NAME=settings.toml`` specs, or Arms) → its status. Refused while another
        runs, or when the name was used."""
        built = tuple(arms) if arms and isinstance(arms[0], Arm) else arms_from(list(arms), share, self.settings)
        design = Design(name, built, alpha=alpha, power=power, mde=mde, followup_minutes=followup_minutes,
                        min_rated=min_rated)
        if (other := records.running(self.db)) is not None:
            raise ConfigError(f"experiment {other['name']!r} is running; stop it first (`ragclinic experiment stop "
                              f"{other['name']}`): a user must not be in two experiments")
        if records.get(self.db, name) is not None:
            raise ConfigError(f"an experiment named {name!r} exists already (its report stays readable); choose "
                              "another name")
        records.insert(self.db, name, self.clock(), design.to_json())
        return self.status(name)

    def stop(self, name: str) -> dict[str, Any]:
        self._design(name)
        if not records.stop(self.db, name, self.clock()):
            raise ConfigError(f"experiment {name!r} is not running (already stopped)")
        return self.status(name)

    def status(self, name: str | None = None) -> dict[str, Any]:
        """One experiment's status and per-arm request counts (the running one when ``name`` is None; {} when none
        runs)."""
        found = records.get(self.db, name) if name else records.running(self.db)
        if found is None:
            if name:
                raise self._missing(name)
            return {}
        counts = records.arm_counts(self.db, found["name"])
        design = Design.from_json(found["name"], found)
        return {"name": found["name"], "status": found["status"], "created": found["created"],
                "stopped": found["stopped"], "arms": [{**a.to_json(), "requests": counts.get(a.name, 0)}
                                                      for a in design.arms],
                "alpha": design.alpha, "mde": design.mde}

    def listed(self) -> list[dict[str, Any]]:
        return [self.status(e["name"]) for e in records.listed(self.db)]

    def report(self, name: str, enforced: dict[str, str] | None = None) -> dict[str, Any]:
        """The `experiment report --json` object; ``enforced``: a tenant's tags — only its own requests count (a
        tenant never sees another's questions, ratings or latencies in a report)."""
        design = self._design(name)
        rows = records.requests(self.db, name, enforced)
        out = reports.report(design, records.get(self.db, name) or {}, rows)
        if enforced:
            out["tenant"] = dict(enforced)
        return out

    # ------------------------------------------------------------------ the Clinic's
    def running(self) -> Design | None:
        """The running experiment's design (read each time: one row of a small table, and another process — the
        CLI beside a server — may have started or stopped it)."""
        found = records.running(self.db)
        return Design.from_json(found["name"], found) if found else None

    def record(self, design: Design, arm: Arm, unit: str, *, trace_id: str, question: str,
               enforced: dict[str, str] | None, cached: bool, refused: bool, ms: float, tokens: int) -> None:
        records.record(self.db, design.name, {
            "arm": arm.name, "unit": unit, "created": self.clock(), "trace_id": trace_id, "question": question,
            "enforced": records.enforced_json(enforced), "cached": int(cached), "refused": int(refused),
            "ms": ms, "tokens": tokens})

    def design(self, name: str) -> Design | None:
        """An experiment's design, running or stopped (None when there is no such experiment)."""
        found = records.get(self.db, name)
        return Design.from_json(name, found) if found else None

    def _design(self, name: str) -> Design:
        if (found := self.design(name)) is None:
            raise self._missing(name)
        return found

    def _missing(self, name: str) -> NoExperiment:
        names = [e["name"] for e in records.listed(self.db)]
        return NoExperiment(f"no experiment {name!r} in this knowledge base"
                            + (f"; there are: {', '.join(names[:10])}" if names else
                               "; start one with `ragclinic experiment start`"))
