"""The ingest-side probes. parse: is the expected answer in the parsed text of its source document, and if
not, is it in a raw extraction of the file (then the parser lost or garbled it)? chunk: does one chunk hold
it, or does a boundary cut through it? The answer is looked for as eval matches answers (text/answers.py
``locate``): "September 23 2013" is in "September 23, 2013"."""

from __future__ import annotations

import json
import re
from typing import Any

from ragclinic.debugger.base import Fix, Case, LayerReport, around, fault, not_reached, ok
from ragclinic.debugger.parse_fixes import ParseEvidence, boilerplate_block, parse_fixes
from ragclinic.debugger.raw import raw_text
from ragclinic.debugger.said import Said, said_where
from ragclinic.ingest.parse.ocr import LOW_CONFIDENCE, stored_pages
from ragclinic.text.answers import locate_any
from ragclinic.text.support import content_terms
from ragclinic.types import Chunk, Hit
from pathlib import Path
from ragclinic.types import Scope
from ragclinic.types import AskRequest, AskState

_DOC_COLS = ("doc_id", "path", "record_key", "title", "mtime", "tags", "text")
_PICTURES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
_WORD_HYPHEN = re.compile(r"[^\W\d_]-[^\W\d_]")  # "cash-flow": a hyphen inside a compound word


def documents(db, where: str = "", args: tuple = ()) -> list[dict[str, Any]]:
    rows = db.conn.execute(f"SELECT {', '.join(_DOC_COLS)} FROM documents {where}", args)
    return [{**dict(zip(_DOC_COLS, r)), "tags": json.loads(r[5])} for r in rows]


def gold_documents(db, ref: str) -> list[dict[str, Any]]:
    """Documents a --gold-doc reference names (doc id, source path — relative paths resolved —, record key)."""

    resolved = str(Path(ref).resolve()) if Path(ref).exists() else ref
    ids = {d["doc_id"] for d in db.find_documents(resolved) or db.find_documents(ref)}
    return documents(db, f"WHERE doc_id IN ({','.join('?' * len(ids))})", tuple(ids)) if ids else []


def probe_parse(case: Case) -> LayerReport:
    exp, db = case.expect, case.kb.db
    answers = exp.texts
    if exp.expect_refusal:
        return ok("nothing should be found: the question should be refused")
    if exp.gold_doc:
        docs = gold_documents(db, exp.gold_doc)  # Debugger.diagnose checked that it names a document
    elif answers:
        docs = [d for d in documents(db) if locate_any(answers, d["text"])]
        if not docs:  # perhaps the parser garbled it: look in the raw text of the likeliest documents
            docs = _likely_sources(case, answers)
        if not docs:  # a summary, a paraphrase or a computed figure is said in other words, not lost
            found, missing = _said(case)
            said = bool(found) and len(found) >= len(missing)
            if said and not any(s.computed for s in found):
                return _said_ok(case, found, missing)
        if not docs and (read := _read_by_ocr(case, documents(case.kb.db))):
            return read  # the answer may be on a page OCR misread (likelier than a figure computed from it)
        if not docs and said:
            return _said_ok(case, found, missing)
        if not docs:
            part = f"; only {len(found)} of {len(found) + len(missing)} of its parts are" if found else ""
            return fault(f"no document in the knowledge base states the expected answer, in these or other words{part}",
                         "ingest the document that states it, or pass --gold-doc if it says it in words the "
                         "debugger does not match", expected=answers, said=_said_json(case, found), unsaid=missing)
    else:
        return ok("nothing to look for")
    case.gold_docs = docs
    if not answers:
        return ok(f"gold document {docs[0]['doc_id']} is in the knowledge base", documents=[d["doc_id"] for d in docs])
    found, joined = [], None
    for d in docs:
        if (hit := locate_any(answers, d["text"])) is not None:
            case.located[d["doc_id"]] = hit[1]
            found.append({"doc_id": d["doc_id"], "context": around(d["text"], hit[1])})
            joined = joined or _hyphen_joined(case, d, *hit)
    if found:
        return joined or ok("the expected answer is in the parsed text", found=found)
    return _lost_in_parsing(case, docs, answers)


def _said(case: Case) -> tuple[list[Said], list[str]]:
    """Where each part of the expected answer is said in other words (debugger/said.py), and the parts said nowhere."""
    found: list[Said] = []
    missing: list[str] = []
    for alternatives in case.expect.answers:
        f, m = said_where(case, list(alternatives))
        found, missing = found + f, missing + m
    return found, missing


def _said_json(case: Case, found: list[Said]) -> list[dict[str, Any]]:
    paths = {d["doc_id"]: d["path"] for d in _docs(case, [s.chunk.doc_id for s in found])}
    return [s.to_json(paths.get(s.chunk.doc_id, "")) for s in found]


def _docs(case: Case, ids: list[str]) -> list[dict[str, Any]]:
    ids = list(dict.fromkeys(ids))
    return documents(case.kb.db, f"WHERE doc_id IN ({','.join('?' * len(ids))})", tuple(ids)) if ids else []


def _said_ok(case: Case, found: list[Said], missing: list[str]) -> LayerReport:
    """The parts said in other words become the gold chunks the later probes judge."""
    by_id = {d["doc_id"]: d for d in _docs(case, [s.chunk.doc_id for s in found])}
    case.gold_docs = [by_id[i] for i in dict.fromkeys(s.chunk.doc_id for s in found) if i in by_id]
    case.said = found
    computed = sorted({f for s in found for f in s.computed})
    how = "computed from what the documents state" if computed and len(computed) == len(found) else \
        "said in other words"
    rest = f"; {len(missing)} part(s) said nowhere" if missing else ""
    return ok(f"no document writes the expected answer verbatim; {len(found)} of {len(found) + len(missing)} part(s) "
              f"are {how}{rest}: later probes judge the chunks that say them", said=_said_json(case, found),
              unsaid=missing, computed=computed)


def _likely_sources(case: Case, answers: list[str]) -> list[dict[str, Any]]:
    """Documents whose raw source states the answer, among those a search for the question and the answer
    ranks first (reading every raw file of a large knowledge base would take too long)."""

    search = AskRequest(case.trace.query + " " + " ".join(answers), Scope(), top_k=30, retriever="lexical")
    found, _ = case.pipeline.run_layer("retrieve", AskState(search), scope_newest_version=False)
    ids = list(dict.fromkeys(h.chunk.doc_id for h in found.hits))[:10]
    docs = documents(case.kb.db, f"WHERE doc_id IN ({','.join('?' * len(ids))})", tuple(ids)) if ids else []
    out = []
    for d in docs:
        try:
            if locate_any(answers, raw_text(d["path"], d["record_key"], case.kb.settings)):
                out.append(d)
        except Exception:  # noqa: BLE001 - an unreadable source cannot be a candidate
            continue
    return out


def _read_by_ocr(case: Case, docs: list[dict[str, Any]]) -> LayerReport | None:
    """A fault at the pages OCR read (the least confident first), when the answer is in no text and some of these
    documents were scans or pictures: OCR may have misread it. None when none was read by OCR."""
    pages = stored_pages(case.kb.db, [d["doc_id"] for d in docs])
    read = sorted(((o.get("confidence") if o.get("confidence") is not None else -1.0, d, o)
                   for d in docs for o in pages.get(d["doc_id"], ())), key=lambda x: x[0])
    if not read:
        return None
    conf, d, o = read[0]
    how = f"mean confidence {conf:.0f}" if conf >= 0 else "no words found"
    low = " — under 60, misread" if 0 <= conf < LOW_CONFIDENCE else ""
    fixes = parse_fixes(ParseEvidence(d["path"], ocr=True), case.kb.settings)  # read again at a higher dpi
    return fault(f"the expected answer is in no parsed text; {d['path']} page {o['page']} was read by OCR ({how}{low})",
                 f"the answer may be on a page OCR read: look at page {o['page']} of {d['path']}; rescan it at 300 dpi or "
                 "more, or ingest a copy with a text layer", *fixes, doc_id=d["doc_id"], path=d["path"],
                 ocr_pages=[{"doc_id": x["doc_id"], **p} for _, x, p in read[:5]])


def _lost_in_parsing(case: Case, docs: list[dict[str, Any]], answers: list[str]) -> LayerReport:
    for d in docs:
        if Path(d["path"]).suffix.lower() in _PICTURES:  # a picture's raw file holds no text to compare
            continue
        try:
            raw = raw_text(d["path"], d["record_key"], case.kb.settings)
        except Exception as e:  # noqa: BLE001 - a source changed or gone since ingest: say so, go on
            return not_reached(f"the raw text of {d['path']} cannot be read ({type(e).__name__}: {e}); the parsed "
                               "text does not state the expected answer")
        if (hit := locate_any(answers, raw)) is None:
            continue
        answer, span = hit
        page = _page(raw, span[0])
        where = f" on page {page}" if page else ""
        block = boilerplate_block(d["path"], answers)  # an HTML page's <nav>, header, footer or sidebar
        fixes = parse_fixes(ParseEvidence(d["path"], block=block), case.kb.settings)
        evidence = {"doc_id": d["doc_id"], "path": d["path"], "raw": around(raw, span), **({"block": block} if block
                                                                                            else {})}
        if block:
            return fault(f"the page states '{answer}' only in its {block} block, which the parser drops as "
                         "boilerplate",
                         f"the page states '{answer}' only in its {block} block: the parser drops navigation, headers, "
                         f"footers and sidebars; keep them for this page — keep_boilerplate = [\"{d['path']}\"] in the "
                         f"knowledge base's settings.toml — and re-ingest with `ragclinic ingest {d['path']} --reparse` "
                         f"(`ragclinic kb report {d['doc_id']}` shows what the parser kept)", *fixes, **evidence)
        return fault(f"the source states '{answer}'{where} but the parsed text does not",
                     f"the parser drops or garbles the text around '{answer}'{where}: check `ragclinic kb report "
                     f"{d['doc_id']}` (garbled characters, lost keywords) and re-ingest a cleaner export",
                     *fixes, **evidence)
    if (read := _read_by_ocr(case, docs)) is not None:  # not in the raw text either: a page OCR read, perhaps
        return read
    return ok("the expected answer is not written in the gold document as given (a paraphrase?): later "
              "probes use its best-matching chunk", documents=[d["doc_id"] for d in docs])


def _hyphen_joined(case: Case, d: dict[str, Any], answer: str, parsed: tuple[int, int]) -> LayerReport | None:
    """A fault when the expected answer is a hyphenated compound ("cash-flow") that the parsed text states without
    its hyphen while the source has it ("cash-⏎flow"): the parser took a line-break hyphen for a typesetting
    break. Matching ignores the hyphen, but the lexical index does not ("cashflow" is one unknown word)."""
    parsed_form = d["text"][parsed[0]:parsed[1]]
    if not _WORD_HYPHEN.search(answer) or "-" in parsed_form or Path(d["path"]).suffix.lower() in _PICTURES:
        return None
    try:
        raw = raw_text(d["path"], d["record_key"], case.kb.settings)
    except Exception:  # noqa: BLE001 - no source to compare: the parsed text states the answer, which is enough
        return None
    if (span := locate_any([answer], raw)) is None or "-" not in (raw_form := raw[span[1][0]:span[1][1]]):
        return None
    page = _page(raw, span[1][0])
    where = f" on page {page}" if page else ""
    left, _, right = raw_form.partition("-")
    compound = f"{left.strip()}-{right.strip()}".lower()
    return fault(f"the parser joins '{left.strip()}-' + '{right.strip()}' into '{parsed_form}'{where}",
                 f"parser joins '{left.strip()}-' + '{right.strip()}'{where}: a line-break hyphen was taken for a "
                 f"typesetting break; enable the hyphen-keep rule for it — keep_hyphens = [\"{compound}\"] in the "
                 f"knowledge base's settings.toml — and re-ingest with `ragclinic ingest {d['path']} --reparse`",
                 *parse_fixes(ParseEvidence(d["path"], compound=compound), case.kb.settings), compound=compound,
                 doc_id=d["doc_id"], path=d["path"], raw=around(raw, span[1]), parsed=around(d["text"], parsed))


def _page(raw: str, offset: int) -> int | None:
    """Page number in a raw PDF extraction (pages end with a form feed)."""
    return raw.count("\f", 0, offset) + 1 if "\f" in raw else None


def probe_chunk(case: Case) -> LayerReport:
    if not case.gold_docs:
        return not_reached("no gold document to look for")
    if case.said:  # the parse probe found the chunks that say the answer in other words
        case.gold_chunks = list({c.id: (r, c) for r, c in ((s.rowid, s.chunk) for s in case.said)}.values())
        _hits(case)
        first = case.gold_chunks[0][1]
        return ok(f"{len(case.gold_chunks)} chunk(s) say the expected answer's parts (chunk {first.ordinal} of "
                  f"{first.doc_id} first)", chunks=[c.id for _, c in case.gold_chunks], text=first.text[:200])
    db = case.kb.db
    reports, held = [], False
    want = case.trace.query + " " + " ".join(case.expect.texts)
    for d in case.gold_docs:
        chunks = _chunks(db, d["doc_id"])
        span = case.located.get(d["doc_id"])
        if span is None:
            if not case.expect.texts:  # only the document is known: any of its chunks will do, best first
                case.gold_chunks.extend(_by_overlap(chunks, want))
            elif (best := _by_overlap(chunks, want)[:1]):
                case.gold_chunks.extend(best)
            continue
        whole = [(r, c) for r, c in chunks if c.start <= span[0] and span[1] <= c.end]
        if not whole and case.expect.texts:  # offsets aside, does a chunk's own text hold it?
            whole = [(r, c) for r, c in chunks if locate_any(case.expect.texts, c.text)]
        if whole:
            case.gold_chunks = whole + case.gold_chunks  # chunks that hold the answer come first
            held = True
            continue
        cut = [(r, c) for r, c in chunks if c.start < span[1] and span[0] < c.end]
        if len(cut) >= 2:
            a, b = cut[0][1], cut[1][1]
            reports.append(fault(
                f"the answer is split between chunks {a.ordinal}/{b.ordinal} of {d['doc_id']}",
                f"answer sentence split between chunks {a.ordinal}/{b.ordinal}: raise chunk_max_tokens (now "
                f"{case.kb.settings.chunk_max_tokens}) or overlap_max_tokens (now "
                f"{case.kb.settings.overlap_max_tokens}) and re-ingest", *_rechunk(case.kb.settings),
                doc_id=d["doc_id"], boundary=f"…{a.text[-60:]}⟦|⟧{b.text[:60]}…".replace("\n", "⏎"),
                chunks=[a.id, b.id]))
            case.gold_chunks.extend(cut[:2])
        elif (best := _by_overlap(chunks, want)[:1]):  # no chunk covers the answer's offsets
            case.gold_chunks.extend(best)
    case.gold_chunks = _by_overlap(case.gold_chunks, case.trace.query) if not held else case.gold_chunks
    _hits(case)
    if held or (case.gold_chunks and not reports):
        first = case.gold_chunks[0][1]
        how = "holds" if held else "best matches (by words)"
        return ok(f"chunk {first.ordinal} of {first.doc_id} {how} the answer", chunks=[c.id for _, c in case.gold_chunks],
                  text=first.text[:200])
    return reports[0] if reports else not_reached("the gold document has no chunks")


def _rechunk(s) -> tuple[Fix, ...]:
    """Larger chunks with more overlap; then, for chunks smaller than the defaults, the default sizes: each a
    knowledge base rebuilt from the sources."""
    size = min(500, max(s.chunk_max_tokens * 2, 2 * s.chunk_min_tokens + 1))
    overlap = min(size // 2 - 1, max(s.overlap_max_tokens * 2, 32))  # below half a chunk, as the settings need
    fixes = [Fix(f"re-chunk with chunk_max_tokens {size} and overlap_max_tokens {overlap}",
                 kb_settings={"chunk_max_tokens": size, "overlap_max_tokens": overlap})]
    defaults = {k: type(s).model_fields[k].default for k in ("chunk_max_tokens", "chunk_min_tokens",
                                                             "overlap_min_tokens", "overlap_max_tokens")}
    if s.chunk_max_tokens < defaults["chunk_max_tokens"] and size != defaults["chunk_max_tokens"]:
        fixes.append(Fix(f"re-chunk with the default sizes (chunk_max_tokens {defaults['chunk_max_tokens']}, "
                         f"overlap_max_tokens {defaults['overlap_max_tokens']})", kb_settings=defaults))
    return tuple(fixes)


def _chunks(db, doc_id: str) -> list[tuple[int, Chunk]]:
    rowids = [r for (r,) in db.conn.execute("SELECT rowid FROM chunks WHERE doc_id = ? ORDER BY ordinal", [doc_id])]
    by = db.chunks_by_rowid(rowids)
    return [(r, by[r]) for r in rowids if r in by]


def _by_overlap(chunks: list[tuple[int, Chunk]], text: str) -> list[tuple[int, Chunk]]:
    """Chunks by the number of ``text``'s content terms they share, most first (document order on ties)."""
    want = content_terms(text)
    return sorted(chunks, key=lambda rc: (-len(want & content_terms(rc[1].text)), rc[1].ordinal))


def _hits(case: Case) -> None:
    case.gold_hits = [Hit(c, 0.0, (), r) for r, c in case.gold_chunks]
