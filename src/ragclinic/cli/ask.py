"""`ragclinic ask "QUESTION"` and `ragclinic chat`: answers with validated [n] citations and a saved trace."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.ingest import parse_pairs
from ragclinic.cli.base import app, err, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic
    from ragclinic.doctor import DoctorResult
    from ragclinic.types import Answer

ScopeOption = typer.Option([], "--scope", metavar="KEY=VALUE", show_default=False,
                           help="Restrict the search (repeatable): doc=ID, path=GLOB, from=/to=YYYY-MM-DD, or any "
                                "tag (tenant=acme, version=2). Applied before the search, never after.")
TopKOption = typer.Option(None, "--top-k", min=1, show_default=False, help="Hits retrieved \\[default: 10].")
LlmOption = typer.Option(None, "--llm", show_default=False,
                         help="local (default, Qwen2.5-Coder-1.5B) | local-small (0.5B, fast, weaker) | "
                              "openai (RAGCLINIC_OPENAI_*) | none (extractive, no model).")
DoctorOption = typer.Option(None, "--doctor/--no-doctor", show_default=False,
                            help="Examine the answer and repair what can be repaired (default: on; "
                                 "--no-doctor gives the plain pipeline, the baseline).")
InteractiveOption = typer.Option(False, "--interactive", "-i",
                                 help="An ambiguous question is answered with a clarifying question; your reply is "
                                      "asked together with the question.")
NoCacheOption = typer.Option(False, "--no-cache", help="Neither answer from the answer cache nor add to it (a "
                             "repeated or near-identical question is otherwise answered from it, marked cached).")
RerankOption = typer.Option(None, "--rerank/--no-rerank", show_default=False,
                            help="Judge-rerank the top hits (slower, more precise).")


def open_clinic(kb: Optional[Path], llm: Optional[str], quiet: bool, **settings) -> Clinic:
    """The CLI's Clinic: the knowledge base at ``kb`` (which must exist), warnings on stderr unless ``quiet``."""
    from ragclinic.clinic import Clinic  # on use: the clinic (the pipeline, numpy) after --help
    from ragclinic.models import warm  # on use: the model layer after --help

    warm.opt_in()  # a one-shot command: its local model may be the user's warm worker (llm_warm_seconds)
    c = Clinic.open(kb, llm=llm, on_warning=None if quiet else _warn, **settings)
    c.kb  # noqa: B018 - fail now, before any model loads, when there is no knowledge base
    return c


@app.command("ask")
@handle_errors
def ask_cmd(
    question: str = typer.Argument(..., help="The question (English or Chinese).", show_default=False),
    kb: Optional[Path] = KbOption,
    scope: List[str] = ScopeOption,
    top_k: Optional[int] = TopKOption,
    llm: Optional[str] = LlmOption,
    rerank: Optional[bool] = RerankOption,
    doctor: Optional[bool] = DoctorOption,
    interactive: bool = InteractiveOption,
    no_cache: bool = NoCacheOption,
    session: Optional[str] = typer.Option(None, "--session", show_default=False,
                                          help="While an experiment runs: the id its arm is assigned by (one user "
                                               "stays in one arm) \\[default: your login name]."),
    json_out: bool = JsonOption,
) -> None:
    """Answer a question from the knowledge base, citing passages as \\[n].

    Refuses (route "refuse") when no passage holds the answer, asks back (route "clarify") when the
    question has nothing to search for. Every run is saved as a trace: `ragclinic trace show ID`.
    The doctor (on by default) then checks the answer for symptoms — poor retrieval, noisy or conflicting
    context, unsupported claims, injected instructions — re-runs the pipeline from the layer a repair
    touches, and keeps the repaired answer only if it is verifiably better; `--no-doctor` skips it.
    Exit code 0 for any answer, refusal or clarification; 2 for bad usage or an unusable knowledge base.
    """
    from ragclinic.clinic import Question  # on use: the clinic (the pipeline, numpy) after --help

    q = Question(question, parse_pairs(scope, "--scope"), doctor, top_k, rerank,
                 cache=False if (no_cache or interactive) else None, interactive=interactive and not json_out,
                 owner=local_user(), session=session or "")
    with open_clinic(kb, llm, quiet=json_out) as clinic:
        stream = None if json_out or not sys.stdout.isatty() else _printer()
        seen = clinic.answer(q, on_token=stream, reply=_reply)
    if seen.cached:
        return _print_cached(seen.to_json(), json_out)
    result, answer = seen.result, seen.answer
    _print_reused(seen)
    if json_out:
        print_json(seen.to_json())  # the `ask --json` object, made here: the one place the CLI renders it
        return
    if stream is None:
        out.print(escape(answer.text), highlight=False)
    else:
        out.print()
        if result is not None and answer.text != result.initial.text:
            out.print(f"[bold]repaired answer:[/] {escape(answer.text)}", highlight=False)
    print_sources(answer)
    if result is not None:
        print_repairs(result)


def local_user() -> str:
    """Whose clarifications the CLI remembers (store/clarifications.py): the login user."""
    try:
        return "user:" + getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): one owner for the machine
        return "user:?"


def _print_reused(seen) -> None:
    c = seen.clarification
    if c is not None and c.reused:
        err.print(f"[dim]asked before: {escape(c.clarifying_question)} — using your reply {escape(repr(c.reply))}[/]")


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}")


def _print_cached(hit: dict, json_out: bool) -> None:
    from ragclinic.types import Answer  # on use: the core types (pydantic settings) after --help

    if json_out:
        print_json(hit)
        return
    answer = Answer.from_json(hit)
    out.print(escape(answer.text), highlight=False)
    print_sources(answer)
    c = hit["cache"]
    err.print(f"[dim]cached: the answer to {escape(repr(c['question']))} (similarity {c['similarity']:.2f}, "
              f"{c['ms']:.0f} ms; --no-cache to ask again)[/]")


def _reply(clarifying_question: str) -> str:
    """The user's answer to the doctor's clarifying question (empty at end of input)."""
    out.print()
    try:
        return input(f"{clarifying_question}\n> ")
    except EOFError:
        return ""


def print_repairs(result: DoctorResult) -> None:
    for x in result.symptoms:
        err.print(f"[cyan]symptom:[/] {x['name']} {x['score']:.2f} ({x['layer']}): {escape(x['evidence'][:90])}")
    for r in result.repairs:
        mark = "[green]accepted[/]" if r["accepted"] else "rejected"
        err.print(f"[cyan]repair {r['round']}:[/] {r['treatment']} — {escape(r['change'][:70])} — {mark} "
                  f"({escape(r['reason'])})")


def _printer():
    def write(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    return write


def print_notes(answer: Answer) -> None:
    """The notes beside the answer (Answer.notes, in the question's language), under its text on stdout."""
    for note in answer.notes:
        out.print(f"[dim]note: {escape(note)}[/]", highlight=False)


def print_sources(answer: Answer) -> None:
    print_notes(answer)
    if answer.citations:
        t = Table("n", "source", "passage", show_header=True, box=None, padding=(0, 1))
        for c in answer.citations:
            src = c.title or Path(c.path).name or c.doc_id
            text = " ".join(c.text.split())
            t.add_row(f"[{c.n}]", escape(src[:40]), escape(text[:110] + ("…" if len(text) > 110 else "")))
        out.print(t)
    bad = [c for c in answer.claims if c.verdict in ("unsupported", "contradicted", "invalid_citation")]
    for c in bad:
        err.print(f"[yellow]{c.verdict}:[/] {escape(c.text[:100])}")
    for f in answer.flags:
        err.print(f"[yellow]flag:[/] {escape(f)}")
    err.print(f"[dim]route {answer.route} · {answer.question_type} · confidence {answer.confidence:.2f} · "
              f"{answer.generator} · trace {answer.trace_id}[/]")


@app.command("chat")
@handle_errors
def chat_cmd(
    kb: Optional[Path] = KbOption,
    scope: List[str] = ScopeOption,
    llm: Optional[str] = LlmOption,
    doctor: Optional[bool] = DoctorOption,
) -> None:
    """Ask questions interactively (empty line or Ctrl-D to stop). A short follow-up ("and in 2023?") is
    asked together with the previous question so it has something to refer to."""
    from ragclinic.clinic import Question  # on use: the clinic (the pipeline, numpy) after --help
    from ragclinic.pipeline.reason import refers_back  # on use: the pipeline after --help

    pairs = parse_pairs(scope, "--scope")

    previous, history = "", []
    with open_clinic(kb, llm, quiet=False) as clinic:
        clinic.lm  # noqa: B018 - load the model (start its worker) while the user types the first question
        while True:
            try:
                q = input("? ").strip()
            except EOFError:
                break
            if not q:
                break
            # a pronoun is resolved from the earlier questions (the ambiguity step); an ellipsis ("and in
            # 2023?") is asked together with the previous question
            asked = f"{previous} {q}" if previous and len(q.split()) <= 4 and not refers_back(q) else q
            turn = Question(asked, pairs, doctor, cache=False, interactive=True, conversation=tuple(history[-4:]),
                            owner=local_user())
            seen = clinic.answer(turn, on_token=_printer(), reply=_reply)
            _print_reused(seen)
            history.append(asked)
            out.print()
            result = seen.result
            if result is not None and result.answer.text != result.initial.text:
                out.print(f"[bold]repaired answer:[/] {escape(result.answer.text)}", highlight=False)
            print_sources(seen.answer)
            if result is not None:
                print_repairs(result)
            previous = q if len(q.split()) > 4 else asked
