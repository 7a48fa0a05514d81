"""`ragclinic trace show ID | list`: the per-layer timeline of a query."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.base import app, fail, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic
    from ragclinic.trace.model import Trace

trace_app = typer.Typer(help="Inspect saved query traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


def _open(kb: Optional[Path]) -> Clinic:
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    return Clinic.open(kb, sync_indexes=False)


@trace_app.command("list")
@handle_errors
def list_cmd(kb: Optional[Path] = KbOption, limit: int = typer.Option(20, "--limit", min=1),
             round_id: Optional[str] = typer.Option(None, "--round", help="Only this query's traces (its re-runs too)."),
             all_: bool = typer.Option(False, "--all", help="Include the doctor's and debugger's re-runs."),
             json_out: bool = JsonOption) -> None:
    """The most recent queries, newest first (re-runs with --all, or --round ID)."""
    from ragclinic.trace.store import list_traces  # on use: when the command runs (fast --help)

    with _open(kb) as clinic:
        rows = list_traces(clinic.kb.db, limit, round_id, reruns=all_)
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
def show_cmd(trace_id: Optional[str] = typer.Argument(None, help="Trace id (or a unique prefix).", show_default=False),
             kb: Optional[Path] = KbOption,
             round_id: Optional[str] = typer.Option(None, "--round", show_default=False,
                                                    help="Every trace of this debug round, in the order they ran: the "
                                                         "question, the doctor's re-runs, the debugger's probes."),
             json_out: bool = JsonOption) -> None:
    """One trace: a timeline of the layers, what each produced, and every model call. With --round ID (a root
    trace's id is its round's id): the whole path of one question, trace after trace."""
    from ragclinic.trace.store import list_traces  # on use: when the command runs (fast --help)

    if (trace_id is None) == (round_id is None):
        raise fail("give a trace id, or --round ID")
    with _open(kb) as clinic:
        if trace_id is not None:
            traces = [clinic.trace(trace_id)]
        else:
            rows = list_traces(clinic.kb.db, 10_000, clinic.trace(round_id).debug_round_id)
            traces = [clinic.trace(r["id"]) for r in sorted(rows, key=lambda r: r["created"])]
    if json_out:
        print_json(traces[0].to_dict() if trace_id is not None else {"round": traces[0].debug_round_id,
                                                                      "traces": [t.to_dict() for t in traces]})
        return
    for i, t in enumerate(traces):
        if round_id is not None:
            out.rule(f"{i + 1} / {len(traces)}" + (f" · re-run from {t.rerun_from}" if t.parent_id else " · the question"))
        render(t)


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
    render_thinking(trace)
    f = trace.final
    out.print(f"[bold]answer[/] ({f.get('route')}, confidence {f.get('confidence')}): {escape(f.get('answer', ''))}")
    render_doctor(trace)


def render_thinking(trace: Trace) -> None:
    """What the gate's reasoning steps did: the ambiguity assessment, the plan(s) and each tool call in order."""
    gate = next((s for s in trace.spans if s.layer == "gate"), None)
    amb = dict(gate.output.ambiguity) if gate is not None and gate.output is not None else {}
    if amb.get("has_ambiguity"):
        out.print(f"[bold]ambiguity[/]: {amb['ambiguity_type']} ({amb['confidence']:.2f}) — "
                  f"{escape(amb.get('clarifying_question', ''))}; rewrites: "
                  f"{escape(' | '.join(amb.get('rewritten_queries', [])) or 'none')}")
    if amb.get("original_question") and amb["original_question"] != trace.query:
        out.print(f"asked as: {escape(trace.query)} (the user wrote: {escape(amb['original_question'])})")
    gen = next((s for s in trace.spans if s.layer == "generate"), None)
    answer = gen.output.answer if gen is not None and gen.output is not None else None
    for p in answer.plan if answer else ():
        steps = "; ".join(f"{x['step']}. {x['tool']}({x['input']})" for x in p.get("steps", [])) or escape(
            p.get("text", "")[:80])
        out.print(f"[bold]plan {p.get('attempt')}[/]: {escape(steps)}" + (f"  [red]{escape(p['error'])}[/]"
                                                                          if p.get("error") else ""))
    if answer and answer.tools:
        tt = Table("step", "tool", "input", "output", "s", "error", box=None, title="tool calls")
        for c in answer.tools:
            tt.add_row(str(c.get("step", "")), c["name"], escape(c["input"][:60]),
                       escape(c["output"].replace("\n", " / ")[:60]), f"{c['seconds']:.3f}", escape(c["error"] or ""))
        out.print(tt)


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
    o = span.output  # typed (trace/views.py)
    if span.layer == "retrieve":
        return (f"{len(o.hits)} hits via {o.retriever}" + (" + rerank" if o.rerank else "")
                + (f", scope allows {o.allowed_chunks} chunks" if o.allowed_chunks is not None else ""))
    if span.layer == "scope":
        return (f"{len(o.passages)} passages, {len(o.excluded)} docs excluded, {len(o.conflicts)} conflicts, "
                f"{o.reordered_by_authority or 0} moved by authority")
    if span.layer == "gate":
        d = o.decision
        return f"{d.route} ({d.question_type}): {d.reason}"
    if span.layer == "generate":
        a = o.answer
        ok = sum(c.verdict == "supported" for c in a.claims)
        return f"{a.generator}: {ok}/{len(a.claims)} claims supported, {len(a.flags)} flags"
    if span.layer == "change":
        return f"the re-run started from a changed state: {', '.join(span.input.changed) or 'nothing'}"
    if span.layer == "active_retrieval":  # generate/active.py
        lowest = min((c["lowest"] for c in o.get("claims", ())), default=None)
        if not o.get("triggered"):
            return f"every claim confident (lowest token p={lowest})"
        return (f"lowest token p={lowest} < {o.get('threshold')}: searched {len(o.get('queries', ()))} masked "
                f"quer{'y' if len(o.get('queries', ())) == 1 else 'ies'}, kept the {o.get('kept')} answer")
    return ""
