"""Write small test/demo documents in every supported format.

The parse tests generate their fixtures with these functions, and the demo corpus reuses them,
so the documents exercise what real files get wrong: two-column PDF pages, words hyphenated
across a line break, ruled tables, blank (scanned-looking) pages, encryption, legacy encodings,
and web pages wrapped in navigation noise.

Content in the DOCX, HTML and Markdown writers is a sequence of items: a ``str`` is a paragraph,
a list of rows (``list[list[str]]``, first row = header) is a table.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

Rows = Sequence[Sequence[str]]
Content = Union[str, Rows]
SectionSpec = tuple[str, int, Sequence[Content]]  # (heading, level, content)

# --------------------------------------------------------------------------- PDF

_PAGE_W, _PAGE_H = 595.0, 842.0  # A4 in points
_MARGIN = 56.0
_GUTTER = 36.0  # wide enough that pdfminer never merges the two columns' lines
_SIZE, _LEADING, _PARA_GAP = 10.0, 13.0, 9.0
# Atoms for line wrapping: one CJK character, a run of other non-space characters, or spaces.
_ATOMS = re.compile(r"[\u3000-\u9fff\uff00-\uffef]|[^\s\u3000-\u9fff\uff00-\uffef]+|[ \t]+")


@dataclass(frozen=True)
class PdfPage:
    """One PDF page: an optional full-width heading, 1 or 2 columns of paragraphs, an optional
    ruled table drawn full width below the columns. A page with nothing in it is left blank
    (except the page number), like a scanned page without a text layer."""

    heading: str | None = None
    columns: Sequence[Sequence[str]] = ()
    table: Rows | None = None
    table_heading: str | None = None


@dataclass
class _Pen:
    canvas: Any
    font: str
    y: float = _PAGE_H - _MARGIN


def write_pdf(path: Path | str, *, title: str, pages: Sequence[PdfPage] | None = None,
              columns: Sequence[Sequence[str]] = (), paragraphs: Sequence[str] = (),
              table: Rows | None = None, hyphenate: Sequence[str] = (), page_numbers: bool = True,
              user_password: str | None = None, chinese: bool = False) -> Path:
    """Write a PDF. Either give ``pages`` or describe one page with ``columns``/``paragraphs``/``table``.

    ``hyphenate`` lists word breaks such as ``"retrie-val"`` or ``"risk-free"``: the first
    occurrence of ``retrieval`` (or of ``risk-free`` itself) is broken across a line after the
    hyphen. A ``"\\n"`` inside a paragraph also forces a line break. ``user_password`` encrypts the
    file so that it cannot be opened without the password. ``chinese`` uses the STSong-Light CID
    font, which can draw Chinese characters.
    """
    from reportlab.lib.pdfencrypt import StandardEncryption  # on use: reportlab, the demo extra
    from reportlab.pdfgen import canvas as rl_canvas  # on use: reportlab, the demo extra

    if pages is None:
        cols = columns or ([list(paragraphs)] if paragraphs else [])
        pages = [PdfPage(heading=title, columns=cols, table=table)]
    pages = _apply_hyphenation(pages, hyphenate)
    font = _register_font(chinese)
    encrypt = StandardEncryption(user_password, ownerPassword=user_password + "-owner",
                                 strength=128) if user_password else None
    path = Path(path)
    c = rl_canvas.Canvas(str(path), pagesize=(_PAGE_W, _PAGE_H), encrypt=encrypt, invariant=1)
    c.setTitle(title)
    for number, page in enumerate(pages, start=1):
        _draw_page(_Pen(c, font), page)
        if page_numbers:
            c.setFont(font, 8)
            c.drawCentredString(_PAGE_W / 2, _MARGIN / 2, f"Page {number}")
        c.showPage()
    c.save()
    return path


def _register_font(chinese: bool) -> str:
    if not chinese:
        return "Helvetica"
    from reportlab.pdfbase import pdfmetrics  # on use: reportlab, the demo extra
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont  # on use: reportlab, the demo extra

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    return "STSong-Light"


def _apply_hyphenation(pages: Sequence[PdfPage], breaks: Sequence[str]) -> list[PdfPage]:
    """Insert a forced line break after the hyphen of each word break, at its first occurrence."""
    pages = [PdfPage(p.heading, [list(col) for col in p.columns], p.table, p.table_heading) for p in pages]
    for brk in breaks:
        left, right = brk.split("-", 1)
        done = False
        for page in pages:
            for col in page.columns:
                for i, para in enumerate(col):
                    for form in (f"{left}-{right}", f"{left}{right}"):
                        m = re.search(rf"\b{re.escape(form)}\b", para)
                        if m and not done:
                            col[i] = para[:m.start()] + f"{left}-\n{right}" + para[m.end():]
                            done = True
                            break
        if not done:
            raise ValueError(f"hyphenate: neither {left}-{right!s} nor {left}{right} occurs in any paragraph; "
                             f"give a word break of a word in the text")
    return pages


def _draw_page(pen: _Pen, page: PdfPage) -> None:
    width = _PAGE_W - 2 * _MARGIN
    if page.heading:
        pen.canvas.setFont(pen.font, 16)
        pen.canvas.drawString(_MARGIN, pen.y - 16, page.heading)
        pen.y -= 16 + 2 * _PARA_GAP
    if page.columns:
        n = len(page.columns)
        col_w = (width - _GUTTER * (n - 1)) / n
        top, bottom = pen.y, pen.y
        for k, col in enumerate(page.columns):
            pen.y = top
            x = _MARGIN + k * (col_w + _GUTTER)
            for para in col:
                _draw_paragraph(pen, para, x, col_w)
            bottom = min(bottom, pen.y)
        pen.y = bottom - _PARA_GAP
    if page.table_heading:
        pen.canvas.setFont(pen.font, 13)
        pen.canvas.drawString(_MARGIN, pen.y - 13, page.table_heading)
        pen.y -= 13 + _PARA_GAP
    if page.table:
        _draw_table(pen, page.table, _MARGIN, width)


def _wrap(text: str, font: str, size: float, width: float) -> list[str]:
    from reportlab.pdfbase.pdfmetrics import stringWidth  # on use: reportlab, the demo extra

    lines: list[str] = []
    for segment in text.split("\n"):
        line = ""
        for atom in _ATOMS.findall(segment):
            if line and not atom.isspace() and stringWidth(line + atom, font, size) > width:
                lines.append(line.rstrip())
                line = ""
            if line or not atom.isspace():
                line += atom
        lines.append(line.rstrip())
    return lines


def _draw_paragraph(pen: _Pen, text: str, x: float, width: float) -> None:
    pen.canvas.setFont(pen.font, _SIZE)
    for line in _wrap(text, pen.font, _SIZE, width):
        pen.canvas.drawString(x, pen.y - _SIZE, line)
        pen.y -= _LEADING
    pen.y -= _PARA_GAP


def _draw_table(pen: _Pen, rows: Rows, x: float, width: float) -> None:
    """A ruled grid (every cell boxed), which is what pdfplumber's line-based table finder needs."""
    ncols = max(len(r) for r in rows)
    row_h = _SIZE + 10
    xs = [x + width * k / ncols for k in range(ncols + 1)]
    ys = [pen.y - row_h * k for k in range(len(rows) + 1)]
    pen.canvas.setLineWidth(0.8)
    pen.canvas.grid(xs, ys)
    pen.canvas.setFont(pen.font, _SIZE)
    for r, row in enumerate(rows):
        for k, cell in enumerate(row):
            pen.canvas.drawString(xs[k] + 4, ys[r] - row_h + 6, cell)
    pen.y = ys[-1] - _PARA_GAP


# --------------------------------------------------------------------------- DOCX

def write_docx(path: Path | str, title: str, sections: Sequence[SectionSpec], *,
               core_title: str | None = None) -> Path:
    """Write a DOCX: ``title`` in the Title style, then each (heading, level, content) with a
    "Heading <level>" style; tables get the "Table Grid" style, in body order."""
    import docx  # on use: python-docx, needed only for DOCX documents

    document = docx.Document()
    if core_title is not None:
        document.core_properties.title = core_title
    if title:
        document.add_paragraph(title, style="Title")
    for heading, level, content in sections:
        document.add_heading(heading, level=level)
        for item in content:
            if isinstance(item, str):
                document.add_paragraph(item)
            else:
                _docx_table(document, item)
    path = Path(path)
    document.save(str(path))
    return path


def _docx_table(document: Any, rows: Rows) -> None:
    ncols = max(len(r) for r in rows)
    table = document.add_table(rows=len(rows), cols=ncols)
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for k, cell in enumerate(row):
            table.cell(r, k).text = cell


# --------------------------------------------------------------------------- HTML

_NAV_NOISE_TOP = """
<header class="site-header"><a href="/">Acme Knowledge Portal</a>
<nav class="main-nav"><ul><li><a href="/products">Products menu</a></li><li><a href="/pricing">Pricing plans</a></li>
<li><a href="/careers">Careers openings</a></li><li><a href="/login">Customer login</a></li></ul></nav></header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your browsing experience.
<button>Accept all cookies</button> <a href="/privacy">Privacy settings</a></div>
"""
_NAV_NOISE_SIDEBAR = """
<aside class="sidebar"><h3>Related links</h3><ul><li><a href="/a">Trending gadgets</a></li>
<li><a href="/b">Subscribe newsletter</a></li><li><a href="/c">Webinar replay</a></li></ul></aside>
"""
_NAV_NOISE_BOTTOM = """
<footer class="site-footer"><p>Copyright 2024 Acme Corporation. All rights reserved.</p>
<nav><a href="/terms">Terms of service</a> | <a href="/imprint">Imprint</a> | <a href="/sitemap">Sitemap</a></nav></footer>
"""


def write_html(path: Path | str, title: str, body_sections: Sequence[tuple[str, Sequence[Content]]], *,
               with_nav_noise: bool = True, encoding: str = "utf-8") -> Path:
    """Write a web page: an <article> with an <h1>, <h2> sections and any tables, wrapped (when
    ``with_nav_noise``) in a header, <nav>, cookie banner, sidebar links and footer."""
    e = html_lib.escape
    parts = [f"<article><h1>{e(title)}</h1>"]
    for heading, content in body_sections:
        parts.append(f"<h2>{e(heading)}</h2>")
        for item in content:
            if isinstance(item, str):
                parts.append(f"<p>{e(item)}</p>")
            else:
                head = "".join(f"<th>{e(c)}</th>" for c in item[0])
                body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                               for row in item[1:])
                parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</article>")
    article = "\n".join(parts)
    body = (_NAV_NOISE_TOP + "<main>" + article + _NAV_NOISE_SIDEBAR + "</main>" + _NAV_NOISE_BOTTOM
            if with_nav_noise else article)
    doc = (f'<!DOCTYPE html>\n<html><head><meta charset="{encoding}"><title>{e(title)}</title></head>\n'
           f"<body>{body}</body></html>\n")
    path = Path(path)
    path.write_bytes(doc.encode(encoding))
    return path


# --------------------------------------------------------------------------- Markdown, text, JSONL

def markdown_table(rows: Rows) -> str:
    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(rows[0]), line("---" for _ in rows[0]), *(line(r) for r in rows[1:])])


def write_markdown(path: Path | str, title: str, sections: Sequence[SectionSpec]) -> Path:
    """Write Markdown: ``# title`` then each (heading, level, content) as ``#``*(level+1) headings."""
    out = [f"# {title}", ""] if title else []
    for heading, level, content in sections:
        out += ["#" * (level + 1) + " " + heading, ""]
        for item in content:
            out += [item if isinstance(item, str) else markdown_table(item), ""]
    path = Path(path)
    path.write_text("\n".join(out), encoding="utf-8")
    return path


def write_text(path: Path | str, text: str, encoding: str = "utf-8") -> Path:
    """Write plain text in ``encoding`` (e.g. "gbk", "utf-16" (writes a BOM), "utf-8-sig")."""
    path = Path(path)
    path.write_bytes(text.encode(encoding))
    return path


def write_jsonl(path: Path | str, records: Iterable[Mapping[str, Any] | str]) -> Path:
    """One JSON object per line; a ``str`` record is written verbatim (for malformed lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
