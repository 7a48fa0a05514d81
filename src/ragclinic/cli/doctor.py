"""`ragclinic doctor train`: refit the doctor's failure forecast from a knowledge base's own history."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ragclinic.cli.base import EXIT_ERROR, app, fail, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption

doctor_app = typer.Typer(help="The doctor's failure forecast.", no_args_is_help=True)
app.add_typer(doctor_app, name="doctor")


@doctor_app.command("train")
@handle_errors
def train(kb: Optional[Path] = KbOption, limit: int = typer.Option(20000, min=1, help="Newest traces to read."),
          json_out: bool = JsonOption) -> None:
    """Fit the doctor's failure forecast from this knowledge base's traces (what the doctor found and what won, and
    the users' helpful / not-helpful ratings): a head per failure kind with enough history, kept when it ranks the
    held-out fifth of it with AUROC >= 0.75. Writes KB/forecast.json, which the doctor then reads (delete it to
    go back)."""
    import json  # on use: when the command runs (fast --help)

    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)
    from ragclinic.doctor import forecast  # on use: numpy and the pipeline
    from ragclinic.doctor.forecast_fit import refit  # on use: numpy

    with Clinic.open(kb, sync_indexes=False) as clinic:  # reads traces only
        base = clinic.kb
        data, report = refit(base, limit)
        if not report["rows"]:
            raise fail(f"no trace of {base.folder} was examined by the doctor: ask questions with the doctor on "
                       "first (`ragclinic ask`), then train", EXIT_ERROR)
        path = base.folder / forecast.KB_FILE
        if data["kinds"]:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, sort_keys=True))
            tmp.replace(path)
        elif path.exists():  # the history no longer supports the heads written before: none is used
            path.unlink()
            report["removed"] = str(path)
    report["path"] = str(path) if data["kinds"] else None
    if json_out:
        print_json(report)
        return
    t = Table("kind", "kept", "failing rows", "held-out AUROC", "why not",
              title=f"failure forecast → {path}" if data["kinds"] else "failure forecast: no head kept, nothing written"
              + (f" (the earlier {path.name} removed)" if report.get("removed") else ""))
    for kind, r in report["kinds"].items():
        pos = r.get("positives")
        t.add_row(kind, "yes" if r.get("fitted") else "no", f"{sum(pos.values()) if isinstance(pos, dict) else pos or 0}",
                  f"{r['test_auroc']:.2f}" if isinstance(r.get("test_auroc"), float) else "—",
                  "" if r.get("fitted") else r.get("why", ""))
    out.print(t)
    out.print(f"{report['rows']} traces read ({report['splits']})")
