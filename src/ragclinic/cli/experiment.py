"""`ragclinic experiment start | status | stop | report`: online experiments between configurations
(docs/experiments.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from ragclinic.cli.base import app, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic

experiment_app = typer.Typer(help="Online experiments: requests split between configurations by a stable hash of "
                                  "the session or key, compared on ratings, refusals, follow-ups, latency, tokens.",
                             no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")


def _open(kb: Optional[Path]) -> Clinic:
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    return Clinic.open(kb, sync_indexes=False)


@experiment_app.command("start")
@handle_errors
def start_cmd(name: str = typer.Option(..., "--name", help="The experiment's name (letters, digits, . _ -)."),
              arm: list[str] = typer.Option(..., "--arm", help="NAME=settings.toml: an arm and the query-time "
                                            "settings it changes (NAME= for the current settings); 2 to 6 arms, "
                                            "the first is the baseline."),
              share: Optional[str] = typer.Option(None, "--share", help="Traffic shares, one per arm: 50/50, 90/10 "
                                                  "[default: equal]."),
              alpha: float = typer.Option(0.05, "--alpha", help="False-positive rate of the stop rule."),
              power: float = typer.Option(0.8, "--power", help="Power the sample size is planned for."),
              mde: float = typer.Option(0.10, "--mde", help="Smallest difference in the helpful ratio worth "
                                        "finding."),
              followup_minutes: float = typer.Option(10.0, "--followup-minutes", help="A rephrased question within "
                                                     "this many minutes counts as a follow-up."),
              min_rated: int = typer.Option(30, "--min-rated", help="Rated answers each arm needs before any "
                                            "decision."),
              kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Start an experiment: from now on every question (CLI, Python API, server) runs in the arm its session or key
    is assigned to, until `experiment stop`."""
    with _open(kb) as clinic:
        status = clinic.experiments.start(name, arm, share, alpha=alpha, power=power, mde=mde,
                                          followup_minutes=followup_minutes, min_rated=min_rated)
    _print_status(status, json_out)


@experiment_app.command("status")
@handle_errors
def status_cmd(name: Optional[str] = typer.Argument(None, help="An experiment [default: every one]."),
               kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """The experiments (or one): running or stopped, arms, shares and requests so far."""
    with _open(kb) as clinic:
        found = [clinic.experiments.status(name)] if name else clinic.experiments.listed()
    if json_out:
        print_json({"experiments": found})
        return
    if not found:
        out.print("no experiment yet: `ragclinic experiment start --name N --arm A=a.toml --arm B=b.toml`")
    for s in found:
        _print_status(s, False)


@experiment_app.command("stop")
@handle_errors
def stop_cmd(name: str = typer.Argument(..., help="The running experiment."),
             kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Stop assigning requests to arms (questions run with the knowledge base's settings again); the report stays."""
    with _open(kb) as clinic:
        status = clinic.experiments.stop(name)
    _print_status(status, json_out)


@experiment_app.command("report")
@handle_errors
def report_cmd(name: str = typer.Argument(..., help="The experiment."),
               plot: Optional[Path] = typer.Option(None, "--plot", help="Also write the report's plot (PNG) here."),
               kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Each arm beside the first: helpful ratio of rated answers (with its interval), refusals and over-refusal
    proxies, follow-up rate, p50/p95 latency, model tokens; the always-valid p-value the stop rule reads, and the
    sample size still needed."""
    with _open(kb) as clinic:
        rep = clinic.experiments.report(name)
    if plot is not None:
        from ragclinic.experiment.plot import plot_png  # on use: matplotlib

        plot.write_bytes(plot_png(rep))
        rep["plot"] = str(plot)
    if json_out:
        print_json(rep)
        return
    t = Table("arm", "requests", "rated", "helpful", "refusals", "follow-ups", "p50 s", "p95 s", "tokens",
              title=f"experiment {rep['name']} ({rep['status']})")
    for a in rep["arms"]:
        ci = f" [{a['helpful_ci'][0]:.2f}, {a['helpful_ci'][1]:.2f}]" if a["helpful_ci"] else ""
        t.add_row(a["arm"], str(a["requests"]), str(a["rated"]), _pct(a["helpful_ratio"]) + ci,
                  _pct(a["refusal_rate"]), _pct(a["followup_rate"]), _s(a["p50_ms"]), _s(a["p95_ms"]),
                  f"{a['tokens_mean']:.0f}" if a["tokens_mean"] is not None else "—")
    out.print(t)
    for c in rep["comparisons"]:
        diff = f"{c['difference']:+.3f}" if c["difference"] is not None else "—"
        ci = f" [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c["ci"] else ""
        out.print(f"{c['arm']} − {c['baseline']}: {diff}{ci}; always-valid p {c['p_always_valid']:.4f} "
                  f"(α {c['alpha']:g}); needs {c['sample_size_per_arm'] or '—'} rated answers per arm "
                  f"({c['needed_more_per_arm'] if c['needed_more_per_arm'] is not None else '—'} more)")
    out.print(f"[bold]decision:[/] {rep['decision']['text']}")
    if plot is not None:
        out.print(f"plot: {plot}")


def _print_status(s: dict, json_out: bool) -> None:
    if json_out:
        print_json(s)
        return
    arms = ", ".join(f"{a['name']} {a['share']:g}% ({a['requests']} requests)" for a in s["arms"])
    out.print(f"experiment {s['name']}: {s['status']}; arms {arms}")


def _pct(x) -> str:
    return f"{x:.2f}" if x is not None else "—"


def _s(ms) -> str:
    return f"{ms / 1000:.2f}" if ms is not None else "—"
