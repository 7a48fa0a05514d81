"""`ragclinic demo`: write a small English + Chinese corpus, ingest it, show what each layer made of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.ingest import print_summary, ingest_with_progress
from ragclinic.cli.ask import print_repairs, print_sources
from ragclinic.cli.base import app, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.clinic import Clinic
    from ragclinic.store.kb import KnowledgeBase

QUERIES = ("risk-free rate", "为什么检索质量决定答案质量")


@app.command("demo")
@handle_errors
def demo(
    folder: Path = typer.Option(Path("demo-corpus"), "--dir", help="Where to write the demo corpus."),
    kb: Optional[Path] = typer.Option(None, "--kb", help="Knowledge base \\[default: DIR/.ragclinic].",
                                      show_default=False),
    llm: Optional[str] = typer.Option(None, "--llm", show_default=False,
                                      help="Model for the sample questions: local (default) | local-small | none."),
    json_out: bool = JsonOption,
) -> None:
    """Write the demo corpus (PDF, DOCX, HTML, Markdown, GBK text; English and Chinese), ingest it, and ask
    four sample questions (one the corpus cannot answer, one compound question the doctor repairs)."""
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)
    from ragclinic.demo.corpus import write_demo_corpus  # on use: when the command runs (fast --help)

    paths = write_demo_corpus(folder)
    warn = None if json_out else (lambda m: out.print(f"[yellow]warning:[/] {escape(m)}"))
    with Clinic.open(kb or folder / ".ragclinic", llm=llm, on_warning=warn, sync_indexes=False) as clinic:
        result = clinic.ingest([folder]) if json_out else ingest_with_progress(clinic, [folder], False, False)
        base = clinic.kb
        docs = [d for p in paths for d in base.db.find_documents(str(p.resolve()))]
        previews = {q: _preview(base, q) for q in QUERIES}
        stats = base.stats()
        if not json_out:
            _show_ingest(result, docs, previews)
        answers = _ask(clinic, json_out)
        settings = clinic.settings
    if json_out:
        print_json({"ingest": result.to_json(), "stats": stats,
                    "documents": [{"path": d["path"], **_brief(d)} for d in docs], "search": previews,
                    "answers": answers})
        return
    out.print(f"\nknowledge base: {settings.kb}  ({stats['documents']} documents, {stats['chunks']} chunks). "
              f"Try: ragclinic ask \"What is duration?\" --kb {settings.kb}   or   "
              f"ragclinic kb report {paths[0]} --kb {settings.kb}")


def _ask(clinic: Clinic, quiet: bool) -> list[dict]:
    from ragclinic.demo.corpus import QUESTIONS  # on use: when the command runs (fast --help)

    answers = []
    for q in QUESTIONS:
        if not quiet:
            out.print(f"\n[bold]ask[/] {escape(q)}")
        stream = None if quiet else (lambda piece: out.file.write(piece) or out.file.flush())
        result = clinic.consult(q, doctor=True, on_token=stream, cache=False).result
        if not quiet:
            out.print()
            if result.answer.text != result.initial.text:
                out.print(f"[bold]repaired answer:[/] {escape(result.answer.text)}", highlight=False)
            print_sources(result.answer)
            print_repairs(result)
        answers.append({"question": q, **result.to_json()})
    return answers


def _show_ingest(result, docs: list[dict], previews: dict) -> None:
    print_summary(result)
    t = Table("document", "parser", "chars", "pages", "tables", "hyphen joins/kept", "keyword retention", "chunks")
    for d in docs:
        b = _brief(d)
        t.add_row(escape(Path(d["path"]).name), b["parser"], str(b["characters"]), str(b["pages"]), str(b["tables"]),
                  f"{b['hyphen_joins']}/{b['hyphens_kept']}",
                  "n/a" if b["keyword_retention"] is None else f"{b['keyword_retention']:.0%}", str(b["chunks"]))
    out.print(t)
    for q, hits in previews.items():
        out.print(f"\n[bold]search preview[/] {q!r}")
        for h in hits:
            text = " ".join(h["text"].split())[:90]
            out.print(f"  {h['retriever']:<8} {h['score']:7.3f}  {h['source']}: {text}", highlight=False, markup=False)


def _brief(d: dict) -> dict:
    p, c = d["parse_report"], d["chunk_report"]
    keys = ("parser", "characters", "pages", "tables", "hyphen_joins", "hyphens_kept", "keyword_retention")
    return {**{k: p[k] for k in keys}, "chunks": c["chunks"], "warnings": p["warnings"] + c["warnings"]}


def _preview(base: KnowledgeBase, query: str, k: int = 2) -> list[dict]:
    """Top chunks from each index: shows both indexes answer."""
    from ragclinic.text.analyzer import analyze  # on use: when the command runs (fast --help)

    tokens = analyze(query, base.settings.lexical_stem)
    found = [("lexical", rid, s) for rid, s in base.lexical().search(tokens, k)]
    if base.embedder is not None:
        qv = base.embedder.embed_queries([query])[0]
        found += [("dense", rid, s) for rid, s in base.dense().search(qv, k)]
    rows = base.db.chunk_rows([rid for _, rid, _ in found])
    return [{"retriever": r, "score": round(s, 4), "source": Path(rows[rid]["path"]).name, "text": rows[rid]["text"]}
            for r, rid, s in found if rid in rows]
