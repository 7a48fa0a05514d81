"""The debugger over an evaluation run's failed items: "where is my system losing points?" Each failed row
of ``items.jsonl`` is diagnosed on the knowledge base it ran on (the rag and doctor tasks keep them), from
its recorded trace, and the verdicts are counted per layer with example items."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragclinic import wiring
from ragclinic.config import Settings
from ragclinic.debugger import LAYERS, Debugger, Expectation
from ragclinic.errors import RagclinicError
from ragclinic.eval.report import write_rag_report
from ragclinic.eval.dominance import arm_ok
from ragclinic.trace.store import load_trace


def failed_rows(folder: Path) -> tuple[list[dict[str, Any]], str]:
    """The rows answered wrong (by the doctor's arm when the run had one, else the baseline's)."""
    path = folder / "items.jsonl"
    if not path.is_file():
        raise RagclinicError(f"{folder}: no items.jsonl (give the --out folder of `ragclinic eval rag` or `doctor`)")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a killed run
    arm = "doctor" if any(r.get("doctor") for r in rows) else "baseline"
    bad = [r for r in rows if r.get(arm) and "kb" in r and not arm_ok(r, r[arm])]
    return bad, arm


def diagnose_eval(folder: Path, llm: str | None = None, *, limit: int = 0,
                  progress: Callable[[int, int], None] | None = None,
                  warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The debugger over an eval run's failed items, each in its own knowledge base, with ``llm`` or else the
    model the run used (loaded once per model and shared by the items' clinics)."""
    all_bad, arm = failed_rows(folder)
    bad = all_bad[:limit] if limit else all_bad
    items, counts, loaded = [], Counter(), {}
    for i, row in enumerate(bad, start=1):
        if progress:
            progress(i, len(bad))
        try:
            d = _diagnose_row(row, arm, llm, loaded, warn)
        except RagclinicError as e:
            items.append({"key": row["key"], "question": row["question"], "verdict": "error", "summary": str(e)})
            counts["error"] += 1
            continue
        counts[d.verdict] += 1
        items.append({"key": row["key"], "setting": row.get("setting"), "question": row["question"],
                      "verdict": d.verdict, "summary": d.layers[d.verdict].evidence.get("summary", "")
                      if d.verdict in d.layers else d.suggestion, "suggestion": d.suggestion,
                      "trace_id": d.trace_id, "kb": row["kb"]})
    order = [*LAYERS, "none", "error"]
    faults = {k: counts[k] for k in order if counts[k]}
    examples = {k: [x for x in items if x["verdict"] == k][:3] for k in faults}
    return {"folder": str(folder), "arm": arm, "failed": len(all_bad), "diagnosed": len(bad), "faults": faults,
            "examples": examples, "items": items}


def _diagnose_row(row: dict[str, Any], arm: str, llm: str | None, loaded: dict, warn):
    """The debugger's diagnosis of one failed row, on its knowledge base, with ``llm`` or the model it ran with
    (``loaded``: the models loaded so far, by name)."""
    settings = Settings.load(Path(row["kb"]))
    kb = wiring.open_kb(settings, sync_indexes=False)
    try:
        trace = load_trace(kb.db, row[arm]["trace_id"])
        name = llm or trace.settings.get("llm", "none")
        if name not in loaded:
            loaded[name], _ = wiring.language_model(Settings.load(None, llm=name), warn)
        parts = wiring.Parts(kb.settings, model=loaded[name], kb=kb)
        kept = (trace.doctor or {}).get("answer_trace_id")  # the doctor's root trace → the answer it kept
        expect = (Expectation(expect_refusal=True) if row["expect_refusal"] else
                  Expectation(tuple(tuple(a) for a in row["expected"])))
        return Debugger(parts.pipeline).diagnose(expect, trace_id=kept if kept and kept != trace.id else trace.id)
    finally:
        kb.close()


def refresh_report(folder: Path, diagnosis: dict[str, Any]) -> None:
    """Save the diagnosis beside the run and re-write its report with a faults-per-layer section and plot."""
    (folder / "diagnosis.json").write_text(json.dumps(diagnosis, ensure_ascii=False, indent=2), encoding="utf-8")
    results = folder / "results.json"
    if not results.is_file() or json.loads(results.read_text(encoding="utf-8")).get("task") not in ("rag", "doctor"):
        return
    rows = []
    for line in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    result = json.loads(results.read_text(encoding="utf-8"))
    write_rag_report(folder, {**result, "dataset": result.get("dataset", "")}, rows)


def blame_losses(dom: dict[str, Any], llm: str | None = None, *, limit: int = 20,
                 progress: Callable[[int, int], None] | None = None,
                 warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The debugger over the losses to the simple peer (eval/dominance.py): each loss case, on the knowledge base
    it ran on, gets ``blame`` — the layer the debugger localises and its evidence summary and fix — unless it
    has one already (a resumed run). At most ``limit`` diagnoses per arm (0: none); a case without a kept
    knowledge base (an eval run without --out) is left undiagnosed."""
    todo = [(arm, c) for arm, d in dom.items() for c in d["loss_cases"][:limit]
            if limit and not c.get("blame") and c.get("kb") and c.get("trace_id")]
    loaded: dict = {}
    for i, (arm, c) in enumerate(todo, start=1):
        if progress:
            progress(i, len(todo))
        row = {"kb": c["kb"], "expected": c["expected"], "expect_refusal": c["expect_refusal"],
               arm: {"trace_id": c["trace_id"]}}
        try:
            d = _diagnose_row(row, arm, llm, loaded, warn)
        except RagclinicError as e:
            c["blame"] = {"layer": "error", "summary": str(e)[:300]}
            continue
        c["blame"] = {"layer": d.verdict, "summary": d.layers[d.verdict].evidence.get("summary", "")
                      if d.verdict in d.layers else "", "suggestion": d.suggestion, "trace_id": d.trace_id}
    return dom
