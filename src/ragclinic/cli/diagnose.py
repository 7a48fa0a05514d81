"""`ragclinic diagnose`: name the layer that broke a bad answer (parse, chunk, retrieve, scope, gate,
generate) with each layer's evidence and a fix; `--latency` profiles a trace; `--from-eval` runs the
debugger over an evaluation run's failed items."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.ask import LlmOption, ScopeOption, open_clinic
from ragclinic.cli.ingest import parse_pairs
from ragclinic.cli.base import app, err, fail, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption
from ragclinic.cli.progress import progress_bar

_STYLE = {"ok": "green", "fault": "bold red", "not_reached": "dim"}


@app.command("diagnose")
@handle_errors
def diagnose_cmd(
    kb: Optional[Path] = KbOption,
    question: Optional[str] = typer.Option(None, "--question", "-q", show_default=False,
                                           help="Ask this now (plain pipeline, no doctor) and explain the answer."),
    scope: List[str] = ScopeOption,
    trace: Optional[str] = typer.Option(None, "--trace", show_default=False,
                                        help="Explain the answer of this saved trace (id or unique prefix)."),
    expected: List[str] = typer.Option([], "--expected", metavar="TEXT", show_default=False,
                                       help="The right answer (repeatable: accepted alternatives)."),
    gold_doc: Optional[str] = typer.Option(None, "--gold-doc", metavar="DOC", show_default=False,
                                           help="The document that should have been used (doc id, path or record key)."),
    expect_refusal: bool = typer.Option(False, "--expect-refusal", help="The right outcome is a refusal."),
    latency: Optional[str] = typer.Option(None, "--latency", metavar="TRACE_ID", show_default=False,
                                          help="Print the per-layer latency profile of a trace instead."),
    from_eval: Optional[Path] = typer.Option(None, "--from-eval", metavar="DIR", show_default=False,
                                             help="Diagnose the failed items of an `eval rag|doctor --out DIR` run."),
    limit: int = typer.Option(0, "--limit", min=0, help="--from-eval: at most N failed items (0 = all)."),
    apply: bool = typer.Option(False, "--apply", help="Carry the fix out on a copy (a settings overlay, or a "
                               "snapshot of the knowledge base changed), re-ask, and say whether it is fixed, not "
                               "fixed, or fixed with side effects on other questions."),
    keep: bool = typer.Option(False, "--keep", help="With --apply: promote a fix that worked (settings written to "
                              "the knowledge base's settings.toml, or the changed copy put in its place; the "
                              "original kept beside it)."),
    others: int = typer.Option(20, "--others", min=0, help="With --apply: recent questions re-asked for side "
                               "effects."),
    side_effects: Optional[str] = typer.Option(None, "--side-effects", metavar="FORMAT:PATH", show_default=False,
                                               help="With --apply: an evaluation set (jsonl:FILE with query and "
                                                    "answer) re-asked for side effects instead of recent questions."),
    llm: Optional[str] = LlmOption,
    json_out: bool = JsonOption,
) -> None:
    """Find the layer that broke an answer: parse → chunk → retrieve → scope → gate → generate.

    Give the question (--question, with --scope as in ask) or a saved trace (--trace), and what a right
    outcome is: --expected TEXT, --gold-doc DOC, or --expect-refusal. Each layer is probed by a
    counterfactual re-run of the trace (is the answer in the parsed text? in one chunk? where does each
    retriever rank it? would the scope admit it? does the gate answer, and the generator answer right, with
    the gold passage in the context?); the first layer whose probe fails is the verdict, with a fix.
    Exit code 0 whatever the verdict; 2 for bad usage or an unusable knowledge base.
    """
    modes = sum(x is not None for x in (latency, from_eval)) + bool(question or trace)
    if modes != 1:
        raise fail("give one of --question/--trace (with an expectation), --latency TRACE_ID or --from-eval DIR")
    if latency:
        return _latency(kb, latency, json_out)
    if from_eval:
        return _from_eval(from_eval, llm, limit, json_out)
    if question and trace:
        raise fail("--question and --trace exclude each other: a trace already has its question")
    if (keep or side_effects) and not apply:
        raise fail("--keep and --side-effects go with --apply")
    eval_set = _eval_set(side_effects) if side_effects else ()
    if trace and llm is None:
        llm = _trace_model(kb, trace)  # re-run with the model that answered
    with open_clinic(kb, llm, quiet=json_out) as clinic:
        d = clinic.diagnose(question, tuple(expected), trace, gold_doc, expect_refusal=expect_refusal,
                            scope=parse_pairs(scope, "--scope"), apply=apply, keep=keep, others=others,
                            eval_set=eval_set)
    if json_out:
        print_json(d.to_json())
    else:
        _print_diagnosis(d)


def _print_diagnosis(d) -> None:
    out.print(f"[bold]question:[/] {escape(d.question)}")
    out.print(f"[bold]answer:[/] {escape(d.answer[:300])}" + ("" if d.answer_right is None else
                                                             " [green](right)[/]" if d.answer_right else " [red](wrong)[/]"))
    t = Table("layer", "status", "evidence", box=None, padding=(0, 1))
    for name, r in d.layers.items():
        t.add_row(name, f"[{_STYLE[r.status]}]{r.status}[/]", escape(str(r.evidence.get("summary", ""))[:160]))
    out.print(t)
    out.print(f"[bold]verdict:[/] {d.verdict}")
    out.print(f"[bold]fix:[/] {escape(d.suggestion)}")
    if d.applied is not None:
        _print_applied(d.applied)
    out.print(f"trace: {d.trace_id}")


_VERDICT = {"fixed": "[bold green]fixed[/]", "fixed_with_side_effects": "[bold yellow]fixed, with side effects[/]",
            "not_fixed": "[bold red]not fixed[/]", "no_fix": "[dim]no fix to apply[/]"}


def _print_applied(a) -> None:
    out.print(f"[bold]applied:[/] {_VERDICT[a.verdict]}" + (f" — {escape(a.why)}" if a.why else ""))
    for x in a.attempts:
        mark = "[green]right[/]" if x.right else "[red]wrong[/]" if x.right is False else "?"
        out.print(f"  tried {escape(x.fix.what)}: {mark} {escape(x.error or x.answer[:120])} "
                  f"({x.seconds:.1f} s, trace {x.trace_id or '—'})")
    fx = a.side_effects
    if fx.get("asked"):
        refused = f", {fx['to_refusal']} answered before and refused now" if fx.get("to_refusal") else ""
        out.print(f"  side effects on {fx['asked']} {fx.get('source', '')}: {fx['changed']} changed, "
                  f"{fx['better']} better, {fx['worse']} worse{refused}")
    if a.kept:
        out.print(f"  kept: {escape(a.kept)}")


def _eval_set(spec: str):
    """(question, Expectation) pairs from an evaluation set (its answerable items and its refusals)."""
    from ragclinic.debugger.base import Expectation  # on use: when the command runs (fast --help)
    from ragclinic.eval.datasets import load  # on use: the evaluation harness

    return [(it.question, Expectation(tuple(it.answers), "", it.expect_refusal or not it.answers))
            for it in load(spec).data if isinstance(getattr(it, "question", None), str)]


def _trace_model(kb: Optional[Path], trace_id: str) -> Optional[str]:
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    with Clinic.open(kb, sync_indexes=False) as c:
        return c.trace(trace_id).settings.get("llm")


def _latency(kb: Optional[Path], trace_id: str, json_out: bool) -> None:
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)
    from ragclinic.debugger.latency import latency_profile  # on use: when the command runs (fast --help)
    from ragclinic.trace.store import list_traces  # on use: when the command runs (fast --help)

    with Clinic.open(kb, sync_indexes=False) as c:
        trace = c.trace(trace_id)
        others = [c.trace(r["id"]) for r in list_traces(c.kb.db, 200, trace.debug_round_id)
                  if r["id"] != trace.id and r["parent_id"]]
    prof = latency_profile(trace, others)
    if json_out:
        print_json(prof)
        return
    t = Table("layer", "ms", "share", "model calls", "model ms", "prompt tok", "reused", "completion tok",
              title=f"{prof['question'][:60]} · {prof['total_ms']:.0f} ms", box=None, padding=(0, 1))
    for r in prof["layers"]:
        bold = "[bold]" if r["layer"] == prof["dominant"] else ""
        t.add_row(f"{bold}{r['layer']}", f"{r['ms']:.0f}", f"{r['share']:.0%}", str(r["model_calls"]),
                  f"{r['model_ms']:.0f}", str(r["prompt_tokens"]), str(r.get("prompt_reused", 0)),
                  str(r["completion_tokens"]))
    out.print(t)
    out.print(f"dominant layer: {prof['dominant']}")
    if "reruns" in prof:
        x = prof["reruns"]
        out.print(f"re-runs in this round: {x['traces']} traces, {x['ms']:.0f} ms, {x['model_calls']} model calls")


def _from_eval(folder: Path, llm: Optional[str], limit: int, json_out: bool) -> None:
    from ragclinic.eval.diagnose import diagnose_eval, refresh_report  # on use: the evaluation harness

    with progress_bar(json_out) as tick:
        res = diagnose_eval(folder, llm, limit=limit, progress=tick,
                            warn=None if json_out else (lambda m: err.print(f"[yellow]warning:[/] {escape(m)}")))
    refresh_report(folder, res)
    if json_out:
        print_json(res)
        return
    out.print(f"{res['failed']} failed items ({res['arm']} arm) in {folder}")
    t = Table("layer", "faults", "example", box=None, padding=(0, 1))
    for layer, n in res["faults"].items():
        ex = res["examples"][layer][0]
        t.add_row(layer, str(n), escape(f"{ex['question'][:40]} — {ex['summary'][:90]}"))
    out.print(t)
