"""`ragclinic kb stats | docs | report | graph | health` (and `kb learn`, cli/learn.py): what a knowledge base holds, how
well it was parsed, its graph, how it has been answering."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragclinic.cli.base import app, fail, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption, KbOption

if TYPE_CHECKING:  # imported where used: `ragclinic --help` imports this module (issue 33)
    from ragclinic.store.kb import KnowledgeBase

kb_app = typer.Typer(help="Inspect a knowledge base.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")


def _open(kb: Optional[Path]) -> KnowledgeBase:
    """The knowledge base of a (model-less) Clinic: these commands read and tag the store only."""
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    return Clinic.open(kb).kb


@kb_app.command("stats")
@handle_errors
def stats(kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Documents, chunks and the KB version (bumped by every committed change)."""
    base = _open(kb)
    try:
        s = base.stats()
        if json_out:
            print_json(s)
            return
        t = Table(show_header=False, title=f"knowledge base {base.folder}")
        for k, v in {**s, "embedder": base.settings.embedder, "lexical index entries": len(base.lexical()),
                     "chunk max tokens": base.settings.chunk_max_tokens}.items():
            t.add_row(k, str(v))
        out.print(t)
    finally:
        base.close()


@kb_app.command("docs")
@handle_errors
def docs(kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """List the documents: id, source, title, language, chunks."""
    base = _open(kb)
    try:
        rows = base.db.documents()
    finally:
        base.close()
    if json_out:
        print_json({"documents": rows})
        return
    t = Table("doc_id", "source", "title", "lang", "chunks")
    for r in rows:
        src = r["path"] + (f"#{r['record_key']}" if r["record_key"] else "")
        t.add_row(r["doc_id"], escape(src), escape(r["title"][:60]), r["language"], str(r["chunks"]))
    out.print(t)


@kb_app.command("report")
@handle_errors
def report(doc: str = typer.Argument(..., help="Document id, source path, or JSONL record id."),
           kb: Optional[Path] = KbOption, json_out: bool = JsonOption) -> None:
    """Parse and chunk quality of one document: garbling, hyphen joins, keyword retention, chunk sizes."""
    base = _open(kb)
    try:
        ref = str(Path(doc).resolve()) if Path(doc).exists() else doc
        found = base.db.find_documents(ref) or base.db.find_documents(doc)
    finally:
        base.close()
    if not found:
        raise fail(f"no document matches {doc!r}; `ragclinic kb docs` lists ids and paths")
    if json_out:
        print_json({"documents": found})
        return
    for d in found:
        _print_report(d)


def _print_report(d: dict[str, Any]) -> None:
    p, c = d["parse_report"], d["chunk_report"]
    src = d["path"] + (f"#{d['record_key']}" if d["record_key"] else "")
    t = Table(show_header=False, title=escape(f"{d['title'] or src} ({d['doc_id']})"))
    retention = p["keyword_retention"]
    garbled = p["garbled_ratio"]
    rows = [
        ("source", src), ("parser", p["parser"]), ("characters", p["characters"]), ("pages", p["pages"]),
        ("empty pages", ", ".join(map(str, p["empty_pages"])) or "none"),
        ("garbled ratio", "n/a" if garbled is None else f"{garbled:.4f}"),
        ("replacement chars / mojibake", f"{p['replacement_chars']} / {p['mojibake_hits']}"),
        ("hyphen joins made / kept", f"{p['hyphen_joins']} / {p['hyphens_kept']}"),
        ("tables", p["tables"]),
        ("keyword retention", "n/a" if retention is None else f"{retention:.0%}"),
        ("lost keywords", ", ".join(p["lost_keywords"][:10]) or "none"),
        ("chunks", c["chunks"]),
        ("tokens min / p50 / p90 / max", f"{c['tokens_min']} / {c['tokens_p50']:.0f} / {c['tokens_p90']:.0f} / {c['tokens_max']}"),
        ("mid-sentence ends", c["mid_sentence_ends"]), ("over-long sentences", c["overlong_sentences"]),
        ("tiny chunks", c["tiny_chunks"]), ("duplicate chunks", c["duplicate_chunks"]),
    ]
    for k, v in rows:
        t.add_row(k, escape(str(v)))
    out.print(t)
    for w in list(p["warnings"]) + list(c["warnings"]):
        out.print(f"[yellow]warning[/] {escape(w)}", highlight=False)


@kb_app.command("graph")
@handle_errors
def graph(kb: Optional[Path] = KbOption, json_out: bool = JsonOption,
          entity: Optional[str] = typer.Option(None, "--entity", metavar="NAME", show_default=False,
                                               help="Show this entity's neighbourhood (exact name, else the most "
                                                    "mentioned entity whose name contains it)."),
          graphml: Optional[Path] = typer.Option(None, "--graphml", metavar="FILE", show_default=False,
                                                 help="Also write the entity graph as GraphML (Gephi, Cytoscape, "
                                                      "networkx, igraph)."),
          top: int = typer.Option(15, "--top", min=1, help="Top entities listed.")) -> None:
    """The knowledge graph (`ingest --graph`): size, top entities, communities, one entity's neighbourhood."""
    from ragclinic.graph.inspect import export_graphml, report as graph_report  # on use: the graph

    base = _open(kb)
    try:
        data = graph_report(base.db.conn, entity, top)
        if graphml is not None:
            data["graphml"] = export_graphml(base.db.conn, graphml)
    finally:
        base.close()
    if json_out:
        print_json(data)
        return
    _print_graph(data)


def _print_graph(data: dict[str, Any]) -> None:
    s = data["size"]
    levels = ", ".join(f"{k}: {v}" for k, v in s["communities"].items()) or "none"
    out.print(f"graph ({data['mode']}): {s['entities']} entities, {s['relations']} relations, {s['mentions']} "
              f"mentions; {s['chunks_extracted']} chunks extracted, {s['chunks_pending']} pending; "
              f"communities {levels}", highlight=False)
    t = Table("entity", "type", "chunks", "docs", "degree", "community", title="top entities")
    for e in data["top_entities"]:
        t.add_row(escape(e["name"]) + (" (hub)" if e["hub"] else ""), e["type"], str(e["chunks"]),
                  str(e["documents"]), str(e["degree"]), e["community"])
    out.print(t)
    t = Table("community", "level", "size", "summary", title="communities")
    for c in data["communities"][:20]:
        t.add_row(c["id"], str(c["level"]), str(c["size"]), escape(c["summary"][:160]))
    out.print(t)
    if (e := data.get("entity")) is not None:
        t = Table("neighbour", "weight", "relations", "description",
                  title=escape(f"{e['names'][0]} ({', '.join(e['types'])}; {len(e['chunks'])} chunks, community "
                               f"{e['community'] or 'none'})"))
        for n in e["neighbours"]:
            t.add_row(escape(n["name"]), str(n["weight"]), escape(", ".join(n["relations"])),
                      escape(n["description"][:120]))
        out.print(t)
    if (g := data.get("graphml")) is not None:
        out.print(f"GraphML: {escape(g['path'])} ({g['nodes']} nodes, {g['edges']} edges)", highlight=False)


_BARS = "▁▂▃▄▅▆▇█"
_SHOWN = (("answer_rate", "answer rate"), ("refusal_rate", "refusal rate"), ("hit_rate", "hit rate"),
          ("top1_relevance", "top-1 relevance"), ("helpful_ratio", "helpful"), ("p50_ms", "p50 ms"),
          ("p95_ms", "p95 ms"))


def sparkline(values: list[float | None]) -> str:
    """One bar per value on the values' own scale; a gap where there is none."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    span = (hi - lo) or 1.0
    return "".join(" " if v is None else _BARS[min(7, int((v - lo) / span * 7.999))] for v in values)


@kb_app.command("health")
@handle_errors
def health(kb: Optional[Path] = KbOption,
           days: float = typer.Option(30.0, "--days", min=1, help="How far back the daily history goes."),
           window_hours: float = typer.Option(24.0, "--window-hours", min=0.01,
                                              help="The current window (the last this many hours)."),
           baseline_days: float = typer.Option(7.0, "--baseline-days", min=0.01,
                                               help="The baseline: this many days before the current window."),
           json_out: bool = JsonOption) -> None:
    """How the knowledge base has been answering, from its traces and ratings: answer, refusal and hit rates, top-1
    relevance, symptoms, latency and the helpful ratio, per day (sparklines) and per KB version; the current
    window against the baseline, with an alert where a watched rate moved more than 15% (docs/monitoring.md)."""
    from ragclinic.clinic import Clinic  # on use: when the command runs (fast --help)

    with Clinic.open(kb, model=None) as c:
        h = c.health(window_hours=window_hours, baseline_days=baseline_days, days=days)
    if json_out:
        print_json(h)
        return
    cur, base = h["current"], h["baseline"]
    t = Table("metric", f"last {window_hours:g} h", f"baseline ({baseline_days:g} d)", f"per day ({len(h['by_day'])})",
              box=None, title=f"health: {cur['questions']} questions now, {base['questions']} in the baseline")
    for key, label in _SHOWN:
        t.add_row(label, _fmt(cur.get(key)), _fmt(base.get(key)), sparkline([d.get(key) for d in h["by_day"]]))
    for name in sorted(set(cur["symptoms"]) | set(base["symptoms"])):
        t.add_row(f"symptom {escape(name)}", _fmt(cur["symptoms"].get(name)), _fmt(base["symptoms"].get(name)),
                  sparkline([d["symptoms"].get(name, 0.0) for d in h["by_day"]]))
    out.print(t)
    if h["by_version"]:
        v = Table("kb version", "questions", "answer rate", "refusal rate", "hit rate", "top-1 relevance", box=None)
        for r in h["by_version"]:
            v.add_row(str(r["kb_version"]), str(r["questions"]), _fmt(r["answer_rate"]), _fmt(r["refusal_rate"]),
                      _fmt(r["hit_rate"]), _fmt(r["top1_relevance"]))
        out.print(v)
    if (can := h.get("canary")) is not None:
        was = f" (was {can['previous_recall@5']:.2f})" if can["previous_recall@5"] is not None else ""
        out.print(f"canary: {can['recall@5']:.2f} of {can['questions']} learned questions find their chunk in the top "
                  f"5{was}", highlight=False)
    for a in h["alerts"]:
        change = f"{a['change']:+.0%}" if a["change"] is not None else "new"
        out.print(f"[red]ALERT[/] {escape(a['metric'])}: {_fmt(a['current'])} now, {_fmt(a['baseline'])} in the "
                  f"baseline ({change})")
    if not h["alerts"] and cur["questions"] and base["questions"]:
        out.print("[green]no drift[/] beyond 15% from the baseline")
    elif not (cur["questions"] and base["questions"]):
        out.print("no comparison: the current window or the baseline has no questions")


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) and v <= 1.0 else f"{v:g}"
