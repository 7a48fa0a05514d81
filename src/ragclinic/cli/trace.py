"""`ragclinic trace show ID | list`: the per-layer timeline of a query."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.main import app, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption
from ragclinic.config import Settings
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.model import Trace
from ragclinic.trace.store import list_traces, load_trace

trace_app = typer.Typer(help="Inspect saved query traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


def _open(kb: Optional[Path]) -> KnowledgeBase:
    return KnowledgeBase.open(Settings.load(kb), sync_indexes=False)


@trace_app.command("list")
@handle_errors
def list_cmd(kb: Optional[Path] = KbOption, limit: int = typer.Option(20, "--limit", min=1),
             round_id: Optional[str] = typer.Option(None, "--round", help="Only this query's traces (its re-runs too)."),
             all_: bool = typer.Option(False, "--all", help="Include the doctor's and debugger's re-runs."),
             json_out: bool = JsonOption) -> None:
    """The most recent queries, newest first (re-runs with --all, or --round ID)."""
    base = _open(kb)
    try:
        rows = list_traces(base.db, limit, round_id, reruns=all_)
    finally:
        base.close()
    if json_out:
        print_json({"traces": rows})
        return
    t = Table("trace", "round", "route", "question")
    for r in rows:
        t.add_row(r["id"], r["debug_round_id"] if r["debug_round_id"] != r["id"] else "", r["route"],
                  escape(r["query"][:80]))
    out.print(t)


@trace_app.command("show")
@handle_errors
def show_cmd(trace_id: str = typer.Argument(..., help="Trace id (or a unique prefix)."),
             kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """One trace: a timeline of the layers, what each produced, and every model call."""
    base = _open(kb)
    try:
        trace = load_trace(base.db, trace_id)
    finally:
        base.close()
    if json_out:
        print_json(trace.to_dict())
        return
    render(trace)


def render(trace: Trace) -> None:
    total = trace.total_ms or 1.0
    out.print(f"[bold]trace {trace.id}[/]  {escape(trace.query)}")
    if trace.parent_id:
        out.print(f"re-run of {trace.parent_id} from {trace.rerun_from}")
    t = Table("layer", "status", "start ms", "ms", "", "summary", box=None)
    for s in trace.spans:
        bar = "█" * max(1, round(24 * s.duration_ms / total)) if s.duration_ms else ""
        t.add_row(s.layer, s.status, f"{s.started_ms:.1f}", f"{s.duration_ms:.1f}", bar, escape(_summary(s)))
    out.print(t)
    if trace.model_calls:
        m = Table("#", "layer", "kind", "model", "prompt tok", "out tok", "ms", box=None)
        for c in trace.model_calls:
            m.add_row(str(c.seq), c.layer, c.kind, c.model_id, str(c.prompt_tokens), str(c.completion_tokens),
                      f"{c.duration_ms:.0f}")
        out.print(m)
    f = trace.final
    out.print(f"[bold]answer[/] ({f.get('route')}, confidence {f.get('confidence')}): {escape(f.get('answer', ''))}")
    render_doctor(trace)


def render_doctor(trace: Trace) -> None:
    """The doctor's record on a root trace: symptoms found, and each repair round with before → after."""
    if trace.symptoms:
        st = Table("round", "symptom", "score", "layer", "evidence", box=None, title="symptoms")
        for x in trace.symptoms:
            st.add_row(str(x.get("round", 0)), x["name"], f"{x['score']:.2f}", x["layer"], escape(x["evidence"][:90]))
        out.print(st)
    if trace.repairs:
        rt = Table("round", "treatment", "for", "from", "accepted", "confidence", "why", "trace", box=None,
                   title="repairs")
        for r in trace.repairs:
            after = r.get("after") or {}
            conf = f"{r['before']['confidence']:.2f} → {after['confidence']:.2f}" if after else "—"
            rt.add_row(str(r["round"]), r["treatment"], r.get("symptom", ""), r.get("layer", ""),
                       "[green]yes[/]" if r["accepted"] else "no", conf, escape(r.get("reason", "")[:60]),
                       after.get("trace_id", ""))
        out.print(rt)
    if trace.doctor:
        d = trace.doctor
        out.print(f"[bold]doctor[/]: {d.get('outcome')}; confidence {d.get('initial_confidence')} → "
                  f"{d.get('final_confidence')}; {d.get('lm_calls')} extra model call(s), {d.get('seconds')} s; "
                  f"answer from trace {d.get('answer_trace_id')}")


def _summary(span) -> str:
    if span.status == "error":
        return span.error  # e.g. the model worker crashed; the layer ran again without the model
    o = span.outputs
    if span.layer == "retrieve":
        allowed = o.get("allowed_chunks")
        return (f"{len(o.get('hits', []))} hits via {o.get('retriever')}"
                + (" + rerank" if o.get("rerank") else "") + (f", scope allows {allowed} chunks" if allowed is not None else ""))
    if span.layer == "scope":
        return (f"{len(o.get('passages', []))} passages, {len(o.get('excluded', []))} docs excluded, "
                f"{len(o.get('conflicts', []))} conflicts, {o.get('reordered_by_authority', 0)} moved by authority")
    if span.layer == "gate":
        d = o.get("decision", {})
        return f"{d.get('route')} ({d.get('question_type')}): {d.get('reason')}"
    if span.layer == "generate":
        a = o.get("answer", {})
        claims = a.get("claims", [])
        ok = sum(c["verdict"] == "supported" for c in claims)
        return f"{a.get('generator')}: {ok}/{len(claims)} claims supported, {len(a.get('flags', []))} flags"
    return ""
