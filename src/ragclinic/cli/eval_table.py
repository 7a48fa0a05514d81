"""The terminal rendering of an evaluation's result (`ragclinic eval` without --json): metrics as rows and arms
as columns, the deltas with their intervals, the losses and wins against the naive peer, the fault grids."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ragclinic.cli.base import out


def print_table(result: dict) -> None:
    """Metrics as rows, arms (retrievers, baseline / doctor) as columns: fits a narrow terminal."""
    t = Table(title=f"{result['task']} · {result['n']} items · {result['dataset']}")
    metrics = result["metrics"]
    t.add_column("metric")
    for arm in metrics:
        t.add_column(arm, justify="right")
    names = list(dict.fromkeys(k for m in metrics.values() for k in m))
    from ragclinic.eval.report import count_text  # on use: when the command runs (fast --help)

    for k in names:
        t.add_row(k, *(f"{m[k]:.4f}" if isinstance(m.get(k), float) else count_text(m[k]) if isinstance(m.get(k), dict)
                       else str(m.get(k, "—")) for m in metrics.values()))
    out.print(t)
    deltas = [("delta", result.get("delta", {}))]
    deltas += [(f"{arm} − naive", d) for arm, d in result.get("delta_vs_naive", {}).items()]
    for label, delta in deltas:
        for name, d in delta.items():
            out.print(f"{label} {name}: {d}" if not isinstance(d, dict) else
                      f"{label} {name}: {d['delta']:+.4f} (95% CI {d['ci95'][0]:+.4f} … {d['ci95'][1]:+.4f})")
    for arm, d in result.get("dominance", {}).items():
        out.print(f"{arm} against the naive peer: {d['losses']} lost (the peer right, {arm} not), {d['wins']} won, "
                  f"of {d['of']}" + (f"; losses by kind {d['losses_by_kind']}" if d["losses"] else ""))
        for c in d["loss_cases"][:5]:
            layer = (c.get("blame") or {}).get("layer", "not diagnosed")
            out.print(f"  lost {escape(c['key'])}: {escape(c['question'][:60])} → {escape(c['answer'][:60])} "
                      f"(peer: {escape(c['peer_answer'][:40])}; blamed: {layer})")
    if "faults" in result:
        _grid("per fault", result["faults"]["per_fault"])
        _grid("per symptom (against the faults that should raise it)",
              {k: v for k, v in result["faults"]["per_symptom"].items() if v["fired"] or v["recall"] is not None})


def _grid(title: str, rows: dict[str, dict]) -> None:
    """A table with one row per key and one column per field."""
    t = Table(title=title)
    cols = list(dict.fromkeys(k for r in rows.values() for k in r))
    for c in ["", *cols]:
        t.add_column(c, justify="right" if c else "left")
    for name, r in rows.items():
        t.add_row(name, *(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, "—")) for c in cols))
    out.print(t)
