"""`ragclinic cases list | show | expect | diagnose | export` — the failed-answer library (docs/cases.md) — and
`ragclinic feedback`, the rating that fills it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.ask import LlmOption
from ragclinic.cli.base import app, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption
from ragclinic.cli.progress import progress_bar

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic

cases_app = typer.Typer(help="The failed-answer library: answers rated unhelpful (and, with cases_from_doctor, "
                             "answers the doctor could not repair), localised by the debugger.", no_args_is_help=True)
app.add_typer(cases_app, name="cases")


def _open(kb: Optional[Path], llm: Optional[str] = None) -> Clinic:
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    return Clinic.open(kb, sync_indexes=False, llm=llm)


@app.command("feedback")
@handle_errors
def feedback_cmd(trace_id: str = typer.Argument(..., help="The answer's trace id (ask --json: trace_id)."),
                 rating: int = typer.Option(..., "--rating", help="1 helpful, -1 not helpful (filed as a case)."),
                 note: str = typer.Option("", "--note", help="What was wrong, in your words."),
                 expected: list[str] = typer.Option([], "--expected", help="The answer that would have been right "
                                                    "(repeat for alternatives)."),
                 expect_refusal: bool = typer.Option(False, "--expect-refusal", help="It should have been a refusal: "
                                                     "the documents do not answer it."),
                 kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Rate an answer; an unhelpful one becomes a case of the failed-answer library."""
    with _open(kb) as clinic:
        done = clinic.feedback(trace_id, rating, note, expected, key="cli", expect_refusal=expect_refusal)
    if json_out:
        print_json(done)
        return
    out.print(f"rated {done['trace_id']}" + (f"; filed as case {done['case']}" if done["case"] else ""))


@cases_app.command("list")
@handle_errors
def list_cmd(source: Optional[str] = typer.Option(None, "--source", help="Only rating or doctor cases."),
             limit: int = typer.Option(100, "--limit", min=1), kb: Optional[Path] = KbOption,
             json_out: bool = JsonOption) -> None:
    """The cases, newest first, with the layer the last diagnosis found."""
    with _open(kb) as clinic:
        rows = clinic.cases.listed(source=source, limit=limit)
    if json_out:
        print_json({"cases": rows})
        return
    t = Table("id", "source", "layer", "expected", "question", "comment")
    for c in rows:
        t.add_row(str(c["id"]), c["source"], (c["diagnosis"] or {}).get("layer", "—"),
                  "yes" if c["expected"] else "", escape(c["question"][:60]), escape(c["comment"][:40]))
    out.print(t)


@cases_app.command("show")
@handle_errors
def show_cmd(case_id: int = typer.Argument(...), kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """One case: the question, the answer given, the comment, the expected answer, the last diagnosis."""
    with _open(kb) as clinic:
        c = clinic.cases.show(case_id)
    if json_out:
        print_json(c)
        return
    out.print(f"[bold]case {c['id']}[/] ({c['source']}, trace {c['trace_id']}{', arm ' + c['arm'] if c['arm'] else ''})")
    out.print(f"question: {escape(c['question'])}\nanswer:   {escape(c['answer'])}")
    for label, value in (("comment", c["comment"]), ("expected", " | ".join(c["expected"]))):
        if value:
            out.print(f"{label}: {escape(value)}")
    if c["diagnosis"]:
        d = c["diagnosis"]
        out.print(f"diagnosis: layer {d['layer']} ({d['by'] or 'nothing'}): {escape(d['why'])}")


@cases_app.command("expect")
@handle_errors
def expect_cmd(case_id: int = typer.Argument(...),
               expected: list[str] = typer.Argument(None, help="The right answer (several: alternatives)."),
               refusal: bool = typer.Option(False, "--refusal", help="It should have been a refusal: the documents do "
                                            "not answer it."),
               kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Give a case the answer that would have been right (or --refusal): the debugger can then localise it, and eval
    score it."""
    with _open(kb) as clinic:
        c = clinic.cases.expect(case_id, expected or (), refusal=refusal)
    if json_out:
        print_json(c)
        return
    out.print(f"case {c['id']}: expected " + ("a refusal" if c["expect_refusal"] else " | ".join(c["expected"])))


@cases_app.command("diagnose")
@handle_errors
def diagnose_cmd(case_ids: list[int] = typer.Argument(None, help="Cases [default: every one]."),
                 apply: bool = typer.Option(False, "--apply", help="Carry each proposed fix out on a copy and re-ask "
                                            "every other case with an expected answer: what it fixes, what it "
                                            "breaks. Nothing is kept."),
                 limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many cases."),
                 llm: Optional[str] = LlmOption, kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Run the debugger over the cases: which layer broke how often, and the fixes it proposes."""
    with _open(kb, llm) as clinic, progress_bar(json_out, "diagnosing") as tick:
        done = clinic.cases.diagnose(case_ids or None, apply=apply, limit=limit, on_progress=tick)
    if json_out:
        print_json(done)
        return
    t = Table("layer", "cases", title=f"{len(done['cases'])} cases")
    for layer, n in done["layers"].items():
        t.add_row(layer, str(n))
    out.print(t)
    for f in done["fixes"]:
        line = f"fix ({f['layer']}): {escape(f['fix'].get('what', ''))} — cases {', '.join(map(str, f['cases']))}"
        for a in f["applied"]:
            line += f"\n  applied for case {a['case']}: {escape(json.dumps(a, ensure_ascii=False)[:200])}"
        out.print(line)


@cases_app.command("export")
@handle_errors
def export_cmd(output: Optional[Path] = typer.Option(None, "--out", help="Write JSON Lines here [default: stdout]."),
               all_: bool = typer.Option(False, "--all", help="Also the cases without an expected answer."),
               kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """The cases as an evaluation set (the jsonl dataset's fields): `eval rag --dataset jsonl:FILE`, or read them
    in place with `--dataset cases:KB`."""
    with _open(kb) as clinic:
        rows = clinic.cases.export(with_unexpected=all_)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if output is not None:
        output.write_text(text, encoding="utf-8")
        if json_out:
            print_json({"out": str(output), "cases": len(rows)})
        else:
            out.print(f"{len(rows)} cases → {output}")
    elif json_out:
        print_json({"cases": rows})
    else:
        typer.echo(text, nl=False)
