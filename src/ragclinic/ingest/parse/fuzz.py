"""The parsers' fuzzing contract, shared by the property tests (tests/fuzz/) and the longer soak
(bench/fuzz_bench.py): whatever the bytes, a parser yields documents and record errors or raises the project's
own ``ParseError`` with a reason — nothing else, within a time limit.

``seeds()`` gives one small valid file per format (the mutations start from real structure, which is where
parsers break: a PDF with a damaged xref, a DOCX whose XML is cut off); ``mutate`` flips, cuts, repeats and
splices bytes; ``check`` runs one input and returns the crash (an exception that is not a ParseError, or a
ParseError without a reason), or None.
"""

from __future__ import annotations

import hashlib
import io
import random
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse import parse_source
from ragclinic.types import Parsed, RecordError, SourceFile


@dataclass(frozen=True)
class Crash:
    suffix: str
    error: str
    data: bytes


def _pdf() -> bytes:
    from reportlab.pdfgen import canvas  # on use: reportlab, the demo extra

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.setTitle("Seed")
    c.drawString(72, 720, "Bond prices fall when rates rise.")
    c.setFillColorRGB(1, 1, 1)
    c.drawString(72, 700, "hidden white words")
    c.save()
    return buf.getvalue()


def _docx() -> bytes:
    import docx  # on use: python-docx, needed only for DOCX documents

    d = docx.Document()
    d.add_heading("Seed", level=1)
    p = d.add_paragraph("Bond prices fall when rates rise. ")
    p.add_run("hidden").font.hidden = True
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 0).text, t.cell(1, 1).text = "Year", "2024"
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _xlsx() -> bytes:
    import openpyxl  # on use: openpyxl, needed only for XLSX documents

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["year", "revenue"])
    ws.append([2024, 10.5])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def seeds() -> dict[str, bytes]:
    """One small valid file per parser suffix."""
    return {
        ".txt": "Plain text.\n\n第二段：中文。\n".encode("utf-8"),
        ".md": b"# Title\n\nText with **bold** and <span style='display:none'>hidden</span>.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        ".html": b"<html><head><title>T</title></head><body><article><h1>H</h1><p>Text <b>bold</b>.</p>"
                 b"<!-- note --><table><tr><td>a</td><td>b</td></tr></table></article></body></html>",
        ".jsonl": b'{"id": "a", "title": "A", "text": "First record."}\n{"id": "b", "text": "Second."}\n',
        ".csv": b"year,revenue\n2024,10.5\n2025,11\n",
        ".pdf": _pdf(), ".docx": _docx(), ".xlsx": _xlsx(),
    }


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to four random edits: flip bytes, cut, repeat a slice, insert junk, or (zip formats) rewrite an entry."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if not out:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif op < 0.35:
            for _ in range(rng.randint(1, 16)):
                out[rng.randrange(len(out))] = rng.randrange(256)
        elif op < 0.5:
            out = out[:rng.randrange(len(out))]
        elif op < 0.65:
            a = rng.randrange(len(out))
            b = min(len(out), a + rng.randint(1, 200))
            out[a:a] = out[a:b] * rng.randint(2, 50)
        elif op < 0.8:
            a = rng.randrange(len(out) + 1)
            out[a:a] = rng.choice([b"\x00" * 64, b"\xff\xfe", "中文\u200b".encode(), b"<" * 50, b"{" * 200,
                                   b"\r\n" * 30, b"%PDF-1.4", b"PK\x03\x04", b'"', b"\n\n\n"])
        elif data[:2] == b"PK":
            out = bytearray(_rezip(bytes(out), rng))
        else:
            a = rng.randrange(len(out))
            out = out[a:] + out[:a]
    return bytes(out)


def _rezip(data: bytes, rng: random.Random) -> bytes:
    """A zip whose one entry is cut or garbled (the XML a DOCX/XLSX parser reads)."""
    try:
        src = zipfile.ZipFile(io.BytesIO(data))
        names = src.namelist()
        entries = {n: src.read(n) for n in names}
    except Exception:
        return data
    if not names:
        return data
    victim = rng.choice(names)
    body = entries[victim]
    entries[victim] = body[:rng.randrange(len(body) + 1)] if rng.random() < 0.5 else body.replace(b">", b"", 1)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in entries.items():
            z.writestr(n, b)
    return buf.getvalue()


def check(suffix: str, data: bytes, settings: Settings | None = None, time_limit: float = 30.0) -> Crash | None:
    """Parse ``data`` as a file ending in ``suffix``; the crash if the contract is broken."""
    source = SourceFile(Path(f"/fuzz/input{suffix}"), data, hashlib.sha256(data).hexdigest(), 0.0, len(data))
    t0 = time.perf_counter()
    try:
        for item in parse_source(source, settings or Settings()):
            if not isinstance(item, (Parsed, RecordError)):
                return Crash(suffix, f"yielded {type(item).__name__}", data)
            if isinstance(item, RecordError) and not item.reason:
                return Crash(suffix, "a RecordError without a reason", data)
    except ParseError as e:
        if not e.reason:
            return Crash(suffix, "ParseError without a reason", data)
    except Exception as e:  # the contract: nothing but ParseError
        return Crash(suffix, f"{type(e).__name__}: {e}"[:300], data)
    if (secs := time.perf_counter() - t0) > time_limit:
        return Crash(suffix, f"took {secs:.1f} s (limit {time_limit:g} s)", data)
    return None
