"""What the UI's pages show, computed from the clinic and the trace (kept out of ui.py's routes)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from ragclinic.errors import StoreError
from ragclinic.server.auth import Principal
from ragclinic.server.errors import ApiError, no_trace
from ragclinic.trace.owner import enforced_of, trace_outside
from ragclinic.trace.store import list_traces


def scope_of(params: dict[str, str], caller: Principal) -> dict[str, str]:
    """The scope chips: tenant (not for a tenant's key: its own is enforced), ``k=v, k=v`` tags, from / to."""
    scope: dict[str, str] = {}
    if params.get("tenant", "").strip() and not caller.tenant:
        scope["tenant"] = params["tenant"].strip()
    for pair in params.get("tags", "").split(","):
        key, eq, value = pair.partition("=")
        if eq and key.strip():
            scope[key.strip()] = value.strip()
    for k in ("from", "to"):
        if params.get(k, "").strip():
            scope[k] = params[k].strip()
    return scope


def own_trace(clinic, trace_id: str, caller: Principal):
    """The trace, if the caller may see it (a tenant's key: its tenant's only, naming no document outside its
    tenant — a re-run made before that rule held another tenant's chunk —, its settings without the server's
    folders and addresses); else 404 as if it did not exist."""
    if not caller.tenant:
        return clinic.trace(trace_id)
    try:
        # by id only (a prefix would tell a tenant about others' ids), and another tenant's chosen out inside the
        # query: never decoded, so its 404 takes the time a missing id's does
        t = clinic.trace(trace_id, enforced=caller.enforced)
    except StoreError:
        raise no_trace(trace_id) from None
    if enforced_of(t) != caller.enforced or trace_outside(clinic.kb.db, t, caller.enforced):
        raise no_trace(trace_id)
    return type(t).from_dict(local_paths({**t.to_dict(), "settings": redacted_settings(t.settings)},
                                         clinic.settings))


def local_paths(obj: Any, settings) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings) with the knowledge-base folder cut from every path: an
    uploaded document's source (``KB/uploads/…``) reads ``uploads/…`` to a tenant's key."""
    root = str(settings.kb.resolve())

    def cut(x: Any) -> Any:
        if isinstance(x, str):
            return x.replace(root + os.sep, "").replace(root, ".") if root in x else x
        if isinstance(x, dict):
            return {k: cut(v) for k, v in x.items()}
        if type(x) in (list, tuple):
            return type(x)(cut(v) for v in x)
        return x

    return cut(obj)


def seen_by(seen, caller: Principal, settings):
    """A consultation as a tenant's key gets it: the `ask --json` object and the answer's citations with the
    knowledge-base folder cut from their paths."""
    if not caller.tenant:
        return seen
    a = seen.answer
    cites = tuple(replace(c, path=local_paths(c.path, settings)) for c in a.citations)
    return replace(seen, view=lambda out: local_paths(out, settings), answer=replace(a, citations=cites))


# settings a tenant's key never reads in a trace: where the server keeps things and whom it talks to
_SERVER_SETTINGS = {"kb", "cache_dir", "allowed_hosts"}
_SERVER_SUFFIXES = ("_url", "_dir", "_path", "_endpoint", "_host", "_hosts", "_file")


def redacted_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """A trace's settings without the server's folders, files, hosts and URLs (by name, and any value that reads
    like an absolute path or an address, whatever its name)."""
    def private(key: str, value: Any) -> bool:
        if key in _SERVER_SETTINGS or (key.endswith(_SERVER_SUFFIXES) and not isinstance(value, (bool, int, float))):
            return True
        return isinstance(value, str) and (value.startswith(("/", "~", "\\")) or "://" in value
                                           or (len(value) > 2 and value[1:3] in (":\\", ":/")))

    return {k: v for k, v in settings.items() if not private(k, v)}


_KEPT_PARAMS = ("q", "doctor", "tenant", "tags", "from", "to")


def answer_context(seen, answer_html, params: dict[str, str] | None = None, db=None) -> dict[str, Any]:
    """What _answer.html shows; a clarifying question gets a reply form that asks the same question again (with
    its scope) in the same debug round, the reply merged in. ``notes``: shown under the answer, muted (Answer.notes:
    what the user must know beside the answer, never part of its text). ``db``: the knowledge base's, to mark the
    sources read by OCR (``scanned``)."""
    a = seen.answer
    clarify = None
    if a.route == "clarify" and params is not None and seen.trace is not None:
        kept = {k: params[k] for k in _KEPT_PARAMS if params.get(k)}
        clarify = {"params": {**kept, "round": seen.trace.debug_round_id}}
    return {"a": a, "answer_html": answer_html(a.text, a.citations, a.trace_id), "cached": seen.cached,
            "notes": a.notes, "symptoms": a.symptoms, "repairs": a.repairs, "clarify": clarify,
            "clarified": seen.clarification.to_json() if seen.clarification is not None else None,
            "scanned": scanned(db, a.citations) if db is not None else {}}


def scanned(db, citations) -> dict[str, dict[str, Any]]:
    """The cited passages whose page was read by OCR, by chunk id: ``ocr_read``'s page, confidence and ``low``."""
    ids = sorted({c.chunk_id for c in citations})
    if not ids:
        return {}
    rows = db.conn.execute(f"SELECT c.chunk_id, c.page, d.parse_report FROM chunks c JOIN documents d ON d.doc_id = "
                           f"c.doc_id WHERE c.chunk_id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return {chunk: read for chunk, page, report in rows if (read := ocr_read(report, page, chunk)) is not None}


def owner_of(caller: Principal) -> str:
    """Whose clarifications are remembered (store/clarifications.py): the API key (its digest's prefix)."""
    return f"key:{caller.key_id or 'open'}"


def passage(clinic, chunk_id: str, trace_id: str, caller: Principal) -> dict[str, Any]:
    """The cited passage inside its document's text (highlighted), or the trace's copy if the document changed.
    Every way of not finding it — no such chunk, another tenant's, a trace the key may not read — is the same 404.
    A passage from a page read by OCR says so, with the engine's confidence and the page's picture beside it."""
    row = clinic.kb.db.conn.execute('SELECT c.doc_id, c.start, c."end", c.section, c.page, c.text, d.text, d.title, '
                                    'd.path, d.tags, d.parse_report FROM chunks c JOIN documents d '
                                    'ON d.doc_id = c.doc_id WHERE c.chunk_id = ?', [chunk_id]).fetchone()
    if row is not None and not (caller.tenant and json.loads(row[9]).get("tenant") != caller.tenant):
        doc_id, start, end, section, page_no, text, doc_text, title, path, tags, report = row
        path = local_paths(path, clinic.settings) if caller.tenant else path
        return {"title": title or path, "path": path, "section": " › ".join(json.loads(section)), "page": page_no,
                "before": doc_text[max(0, start - 4000):start], "cited": doc_text[start:end],
                "after": doc_text[end:end + 4000], "ocr": ocr_read(report, page_no, chunk_id)}
    if row is None and trace_id:  # re-ingested since: the trace holds the chunk whole
        try:
            t = own_trace(clinic, trace_id, caller)
        except (ApiError, StoreError):
            t = None
        for p in t.state_after("scope").passages if t is not None and t.span("scope") else ():
            if p.chunk.id == chunk_id:
                return {"title": p.doc.title or p.doc.path, "path": p.doc.path + " (changed since this answer)",
                        "section": " › ".join(p.chunk.section), "page": p.chunk.page, "before": "",
                        "cited": p.chunk.text, "after": ""}
    raise ApiError(404, "not_found", "no such passage (its document was changed or removed)")


def ocr_read(report: str | None, page: int | None, chunk_id: str) -> dict[str, Any] | None:
    """How the passage's page was read by OCR (its confidence, a picture on it or the whole page, the URL of the
    page's image), None when it was read from a text layer."""
    if page is None or not report:
        return None
    reads = [r for r in json.loads(report).get("ocr_pages") or () if r.get("page") == page]
    if not reads:
        return None
    known = [r["confidence"] for r in reads if r.get("confidence") is not None]
    confidence = min(known) if known else None
    return {"page": page, "confidence": confidence, "pictures": sum(1 for r in reads if r.get("picture")),
            "whole": any(not r.get("picture") for r in reads), "low": confidence is not None and confidence < 60,
            "image": f"/passage/{chunk_id}/page.png"}


def trace_context(t, answer_html, db=None) -> dict[str, Any]:
    a = t.answer
    return {"t": t, "answer_html": answer_html(a.text, a.citations, t.id), "waterfall": waterfall(t),
            "hits": _hits(t, db), "provenance": _provenance(t, db), "excluded": t.state_after("scope").excluded if t.span("scope") else (),
            "decision": t.state_after("gate").decision if t.span("gate") else None, "graph": graph_view(t)}


def graph_view(t) -> dict[str, Any] | None:
    """The knowledge graph's part of a trace (issue 20): the question's scope, the communities mapped and their
    points, the entities and paths of expansion; None when the trace has neither."""
    gate = (t.span("gate").output.graph if t.span("gate") and t.span("gate").output else None) or {}
    scope = (t.span("scope").output.graph if t.span("scope") and t.span("scope").output else None) or {}
    if not gate and not scope:
        return None
    return {"kind": gate.get("kind", ""), "score": gate.get("score", 0.0), "cues": gate.get("cues", []),
            "enabled": gate.get("graph", False), "path": gate.get("path", ""),
            "communities": gate.get("communities", []), "seeds": scope.get("seeds", []),
            "missing": scope.get("missing", []), "paths": scope.get("paths", []), "added": scope.get("added", [])}


def waterfall(t) -> list[dict[str, Any]]:
    total = t.total_ms or 1.0
    rows = []
    for s in t.spans:
        calls = [c for c in t.model_calls if c.layer == s.layer] if s.status != "replayed" else []
        rows.append({"layer": s.layer, "status": s.status, "ms": s.duration_ms, "pct": max(0.5, 100 * s.duration_ms / total),
                     "start_pct": min(99.0, 100 * s.started_ms / total), "calls": len(calls),
                     "prompt": sum(c.prompt_tokens for c in calls), "completion": sum(c.completion_tokens for c in calls),
                     "reused": sum(c.prompt_reused for c in calls)})
    return rows


def _provenance(t, db=None) -> list[dict[str, Any]]:
    """Where each passage of the context came from: the parse (document, parser) and the chunk (its place in
    the document, section path, page, size)."""
    layer = "gate" if t.span("gate") else "scope" if t.span("scope") else None
    if layer is None:
        return []
    passages = t.state_after(layer).passages
    parsers = {}
    if db is not None and passages:
        ids = sorted({p.chunk.doc_id for p in passages})
        marks = ",".join("?" * len(ids))
        parsers = dict(db.conn.execute(f"SELECT doc_id, parser FROM documents WHERE doc_id IN ({marks})", ids))
    return [{"n": p.n, "title": p.doc.title or p.doc.path, "path": p.doc.path, "parser": parsers.get(p.chunk.doc_id, "(gone)"),
             "ordinal": p.chunk.ordinal, "chars": f"{p.chunk.start}–{p.chunk.end}", "section": " › ".join(p.chunk.section),
             "page": p.chunk.page, "tokens": p.chunk.tokens, "language": p.chunk.language, "marks": ", ".join(p.marks),
             "chunk_id": p.chunk.id} for p in passages]


def _hits(t, db=None) -> list[dict[str, Any]]:
    if not t.span("retrieve"):
        return []
    after = t.state_after("gate") if t.span("gate") else t.state_after("scope") if t.span("scope") else None
    in_context = {p.chunk.id: p for p in (after.passages if after else ())}
    hits = t.state_after("retrieve").hits
    docs = dict(db.doc_infos([h.chunk.doc_id for h in hits])) if db is not None else {}
    docs.update({p.chunk.doc_id: p.doc for p in in_context.values()})
    out = []
    for h in hits:
        p = in_context.get(h.chunk.id)
        doc = docs.get(h.chunk.doc_id)
        out.append({"text": h.chunk.text, "score": h.score, "sources": h.sources,
                    "title": (doc.title or os.path.basename(doc.path)) if doc else h.chunk.doc_id, "n": p.n if p else 0,
                    "support": p.support if p else 0.0})
    return out


def kb_context(clinic, caller: Principal) -> dict[str, Any]:
    db = clinic.kb.db
    rows = db.conn.execute("SELECT d.doc_id, d.title, d.path, d.parser, d.tags, d.parse_report, d.chunk_report, "
                           "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id) FROM documents d "
                           "ORDER BY d.path, d.record_key").fetchall()
    docs = []
    for doc_id, title, path, parser, tags, preport, creport, chunks in rows:
        tags, p, c = json.loads(tags), json.loads(preport), json.loads(creport)
        if caller.tenant and tags.get("tenant") != caller.tenant:
            continue
        docs.append({"doc_id": doc_id, "title": title, "path": path, "parser": parser, "characters": p.get("characters", ""),
                     "chunks": chunks, "tags": ", ".join(f"{k}={v}" for k, v in tags.items()),
                     "warnings": list(p.get("warnings", [])) + list(c.get("warnings", []))})
    stats = {"documents": len(docs), "chunks": sum(x["chunks"] for x in docs)}
    out = {"docs": docs, "stats": stats, "version": db.version}
    return local_paths(out, clinic.settings) if caller.tenant else out


def doc_context(clinic, doc_id: str, caller: Principal) -> dict[str, Any]:
    """One document's parse and chunk reports and its chunks (a tenant's key: its tenant's documents only)."""
    row = clinic.kb.db.conn.execute("SELECT title, path, language, tags, parse_report, chunk_report FROM documents "
                                    "WHERE doc_id = ?", [doc_id]).fetchone()
    if row is None or (caller.tenant and json.loads(row[3]).get("tenant") != caller.tenant):
        raise ApiError(404, "not_found", f"no document {doc_id!r}")
    title, path, language, tags, preport, creport = row
    chunks = [{"id": cid, "ordinal": o, "section": " › ".join(json.loads(sec)), "page": pg, "tokens": tok, "text": txt}
              for cid, o, sec, pg, tok, txt in clinic.kb.db.conn.execute(
                  "SELECT chunk_id, ordinal, section, page, tokens, text FROM chunks WHERE doc_id = ? ORDER BY ordinal",
                  [doc_id])]

    def rows(report: dict) -> list[tuple[str, str]]:
        return [(k, json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else str(v)) for k, v in report.items()]

    out = {"title": title or path, "path": path, "doc_id": doc_id, "language": language,
           "tags": ", ".join(f"{k}={v}" for k, v in json.loads(tags).items()),
           "reports": [("parse report", rows(json.loads(preport))), ("chunk report", rows(json.loads(creport)))],
           "chunks": chunks}
    return local_paths(out, clinic.settings) if caller.tenant else out


def round_path(clinic, t) -> list[dict[str, Any]]:
    """Every trace of ``t``'s debug round in the order they ran: the question, the doctor's re-runs (what each
    changed), the debugger's probes. Of a tenant's round, only the traces of the tenant that hold nothing from
    outside it (a probe's re-run with another tenant's chunk is the admin's: issue 32)."""
    enforced = {k: v for k, v in t.request.get("enforced", ())}
    rows = sorted(list_traces(clinic.kb.db, 500, t.debug_round_id, enforced=enforced or None),
                  key=lambda r: r["created"])
    out = []
    for r in rows:
        x = clinic.trace(r["id"], exact=True)
        if enforced and trace_outside(clinic.kb.db, x, enforced):
            continue
        change = x.span("change")
        out.append({"id": x.id, "current": x.id == t.id, "from": x.rerun_from, "route": r["route"],
                    "changed": ", ".join(change.input.changed) if change else "",
                    "answer": x.final.get("answer", "")[:140], "ms": x.total_ms})
    return out if len(out) > 1 else []
