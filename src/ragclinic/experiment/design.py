"""An experiment's design: its arms (each a set of query-time settings over the knowledge base's), their shares of
the traffic, and the stop rule's parameters; and the assignment of a unit (a session, else a key) to an arm by a
stable hash, so that a user stays in one arm for the experiment's life."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragclinic.config import Settings
from ragclinic.config.files import explain, read_file
from ragclinic.errors import ConfigError

# The settings an arm may change: those a question's run reads from its pipeline's settings. What defines the stored
# data (the embedder, chunk sizes), what the process holds once (the model, its context, the server's limits) and
# what the hybrid retriever reads from the knowledge base's own settings (fusion) cannot differ between requests.
ARM_SETTINGS = frozenset((
    "retriever", "top_k", "context_k", "rerank", "rerank_depth", "answer_prompt", "crosslingual",
    "scope_newest_version", "authority_boost", "conflict_top_n", "strip_instructions", "instruction_detector",
    "answer_probe", "active_retrieval", "llm_max_tokens", "llm_temperature", "llm_field_decoding", "judge",
    "generator", "answer_cache", "context_select", "context_select_floor", "extractive_sentences",
    "gate_threshold_lexical", "gate_threshold_judge", "gate_reread", "subject_check", "gate_judge_max",
    "claim_lexical_threshold", "claim_threshold_judge", "claim_judge_max", "claim_judge_contradiction",
    "ambiguity_threshold", "tools_path", "tools_max_calls", "decline_retry_evidence", "graph_global_threshold",
    "graph_communities_k", "need_routing", "graph_expand", "causal_weights", "learned_gate", "doctor",
    "doctor_max_rounds", "doctor_max_lm_calls", "doctor_max_seconds", "doctor_threshold", "doctor_escalate_floor",
    "doctor_candidates", "doctor_fast_evidence", "doctor_accept_margin", "doctor_weak_answer",
    "doctor_refusal_budget_s", "doctor_forecast", "doctor_forecast_skip", "doctor_forecast_miss",
    "doctor_forecast_absent", "doctor_refusal_coverage"))
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_ARMS = 6


@dataclass(frozen=True)
class Arm:
    name: str
    share: float  # percent of the traffic
    settings: tuple[tuple[str, Any], ...] = ()  # the query-time settings it changes, sorted

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "share": self.share, "settings": dict(self.settings)}

    def settings_over(self, base: Settings) -> Settings:
        """``base`` with this arm's settings (validated when the experiment started)."""
        return base.model_copy(update=dict(self.settings)) if self.settings else base


@dataclass(frozen=True)
class Design:
    """``alpha``: the stop rule's false-positive rate (per comparison with the first arm, Bonferroni over several);
    ``mde``: the smallest difference in the helpful ratio worth finding (the sample size is planned for it, and it
    sets the always-valid test's mixing); ``followup_minutes``: how soon a rephrased question counts as a
    follow-up; ``min_rated``: rated answers each arm needs before any decision."""

    name: str
    arms: tuple[Arm, ...]
    salt: str = field(default_factory=lambda: secrets.token_hex(8))
    alpha: float = 0.05
    power: float = 0.8
    mde: float = 0.10
    followup_minutes: float = 10.0
    min_rated: int = 30

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ConfigError(f"experiment name {self.name!r}: letters, digits, '.', '_' or '-', at most 64")
        if not 2 <= len(self.arms) <= MAX_ARMS:
            raise ConfigError(f"an experiment needs 2 to {MAX_ARMS} arms (--arm NAME=settings.toml), not "
                              f"{len(self.arms)}")
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names) or not all(NAME.match(n) for n in names):
            raise ConfigError(f"arm names must be distinct words: {', '.join(names)}")
        if abs(sum(a.share for a in self.arms) - 100.0) > 1e-6 or any(a.share <= 0 for a in self.arms):
            raise ConfigError(f"arm shares must be positive and add up to 100: "
                              f"{'/'.join(f'{a.share:g}' for a in self.arms)}")
        for value, name, lo, hi in ((self.alpha, "alpha", 0.0, 0.5), (self.power, "power", 0.5, 1.0),
                                    (self.mde, "mde", 0.0, 1.0)):
            if not lo < value < hi:
                raise ConfigError(f"{name}={value}: between {lo} and {hi} (exclusive)")
        if self.followup_minutes <= 0 or self.min_rated < 1:
            raise ConfigError("followup_minutes must be > 0 and min_rated ≥ 1")

    def assign(self, unit: str) -> Arm:
        """The unit's arm: the same unit always gets the same arm in this experiment (a hash of the experiment's
        salt and the unit against the shares); an empty unit (no session, no key) gets a random one."""
        key = unit or secrets.token_hex(8)
        point = int(hashlib.sha256(f"{self.salt}\x00{key}".encode()).hexdigest()[:15], 16) / 16 ** 15 * 100.0
        edge = 0.0
        for arm in self.arms:
            edge += arm.share
            if point < edge:
                return arm
        return self.arms[-1]

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)

    def to_json(self) -> dict[str, Any]:
        return {"arms": [a.to_json() for a in self.arms], "salt": self.salt, "alpha": self.alpha,
                "power": self.power, "mde": self.mde, "followup_minutes": self.followup_minutes,
                "min_rated": self.min_rated}

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> "Design":
        arms = tuple(Arm(a["name"], float(a["share"]), tuple(sorted(a.get("settings", {}).items())))
                     for a in d["arms"])
        return cls(name, arms, d["salt"], d["alpha"], d.get("power", 0.8), d["mde"], d["followup_minutes"],
                   d["min_rated"])


def arm_settings(values: Mapping[str, Any], where: str, base: Settings) -> tuple[tuple[str, Any], ...]:
    """An arm's settings, checked: known names, ones an arm may change, values the settings accept."""
    unknown = sorted(set(values) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} in {where}; docs/settings.md lists them")
    fixed = sorted(set(values) - ARM_SETTINGS)
    if fixed:
        raise ConfigError(f"{where} sets {', '.join(fixed)}, which an arm cannot change (what is stored, what the "
                          "process holds once, or what the knowledge base's retriever reads); an arm may set: "
                          + ", ".join(sorted(ARM_SETTINGS)))
    try:
        checked = Settings.model_validate({**base.model_dump(), **values})
    except ValidationError as e:
        raise ConfigError(f"{where}: {explain(e).split(' (set it by')[0]}; fix the value in the arm's file") from None
    return tuple(sorted((k, getattr(checked, k)) for k in values))


def arms_from(specs: Sequence[str], share: str | None, base: Settings) -> tuple[Arm, ...]:
    """``NAME=settings.toml`` (an empty file or ``NAME=`` keeps the knowledge base's settings) with ``share``
    ("50/50", one number per arm; default equal shares)."""
    parts = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name:
            raise ConfigError(f"--arm {spec!r}: expected NAME=settings.toml (NAME= for the current settings)")
        values = {}
        if path:
            if not Path(path).is_file():
                raise ConfigError(f"--arm {name}: no settings file {path}")
            values = read_file(Path(path), Settings.model_fields)
        parts.append((name, arm_settings(values, f"arm {name} ({path or 'current settings'})", base)))
    shares = parse_share(share, len(parts))
    return tuple(Arm(n, s, v) for (n, v), s in zip(parts, shares))


def parse_share(share: str | None, n: int) -> list[float]:
    if not share:
        return [100.0 / n] * n if n else []
    try:
        values = [float(x) for x in share.split("/")]
    except ValueError:
        raise ConfigError(f"--share {share!r}: numbers separated by '/', one per arm (e.g. 50/50)") from None
    if len(values) != n:
        raise ConfigError(f"--share {share!r} gives {len(values)} shares for {n} arms")
    total = sum(values)
    if total <= 0 or any(v <= 0 for v in values):
        raise ConfigError(f"--share {share!r}: every share must be positive")
    return [v * 100.0 / total for v in values]
