"""PDF via pdfminer.six layout analysis (reading order) and pdfplumber (ruled tables).

pdfplumber runs pdfminer's layout analysis with our LAParams (``page.layout``), so each page is
interpreted once and serves text boxes, characters and table lines alike. Per page:
- ruled tables are found with ``page.find_tables()``; text lines inside a table's bbox are dropped
  and the table is rendered as Markdown in its place (cells kept as ``Table`` rows);
- page-number footers/headers ("3", "Page 3", "3 / 10" in the top/bottom margin) are dropped;
- boxes are put in reading order (``reading_order.py``: column by column, full-width in place);
- single-line boxes set clearly larger than the body text become headings (levels by size).
Page spans cover the whole text. When the ``ocr`` setting names languages, scanned pages and the pictures on text
pages are read by OCR (pdf_ocr.py), their confidence in the parse report.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

from ragclinic.config import Settings
from ragclinic.errors import EncryptedDocument, ParseError
from ragclinic.ingest.parse.hidden import Hidden
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed, table_block
from ragclinic.ingest.parse.pdf_ocr import OcrRef, Scans, figure_block, scanned
from ragclinic.ingest.parse.reading_order import Box, is_page_number, reading_order
from ragclinic.types import Parsed, RecordError, SourceFile

LAPARAMS = {"line_margin": 0.5, "char_margin": 2.0, "word_margin": 0.1, "boxes_flow": 0.5}
HEADING_SIZE_RATIO = 1.2  # 20% above the body size: below that, bold body text would pass
_PLACEHOLDER_TITLES = {"", "untitled", "unknown", "title"}


@dataclass(frozen=True)
class _Item:
    """A text box (or table) of one page, before heading classification."""

    page: int
    text: str = ""
    size: float = 0.0  # mean character size
    lines: int = 0
    block: Block | None = None  # tables arrive as finished blocks
    ocr: OcrRef | None = None  # text read by OCR goes here: a scanned page, or a picture (after its caption, if any)


class PdfParser:
    name = "pdf"
    suffixes = (".pdf",)

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        hidden: list[Hidden] = []
        with Scans(settings) as scans:
            items, raw_pages, meta_title, page_count = _extract(source.data, hidden, settings.keep_hidden_text,
                                                                settings.max_pages, scans)
        blocks = _classify(items)
        info = DocInfo(self.name, raw_text="\n\n".join(raw_pages), title=meta_title,
                       metadata={"pages": page_count, "ocr": scans.report()},
                       hidden=tuple(hidden), warnings=scans.warnings())
        yield make_parsed(source, settings, assemble(blocks, page_count=page_count, keep_hyphens=settings.keep_hyphens), info)


def _open(data: bytes):
    import pdfplumber  # on use: pdfplumber, needed only for PDF tables
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect  # on use: pdfminer

    try:
        return pdfplumber.open(io.BytesIO(data), laparams=LAPARAMS)
    except Exception as e:  # pdfplumber wraps every pdfminer failure in PdfminerException
        cause = e.args[0] if e.args and isinstance(e.args[0], Exception) else e
        if isinstance(cause, PDFPasswordIncorrect):
            raise EncryptedDocument("encrypted PDF: needs a password; decrypt it first "
                                    "(e.g. qpdf --password=PASSWORD --decrypt in.pdf out.pdf)") from None
        if isinstance(cause, PDFEncryptionError):
            raise EncryptedDocument(f"encrypted PDF with an unsupported scheme ({cause}); "
                                    f"decrypt it first (e.g. qpdf --decrypt)") from None
        raise ParseError(f"not a valid PDF: {type(cause).__name__}: {cause or 'unreadable'}") from None


def _extract(data: bytes, hidden: list[Hidden], keep_hidden: bool = False,
             max_pages: int = 5000, scans: Scans | None = None) -> tuple[list[_Item], list[str], str, int]:
    if b"%PDF-" not in data[:1024]:  # readers accept junk before the header, within the first 1 KB
        raise ParseError("not a valid PDF: no %PDF- header in the first 1 KB (wrong extension?)")
    items: list[_Item] = []
    raw_pages: list[str] = []
    number = 0
    pdf = _open(data)
    try:
        try:
            count = len(pdf.pages)  # reads the page tree: inside the try, a damaged one is a ParseError
        except Exception as e:
            raise ParseError(f"not a valid PDF: cannot read the page tree ({type(e).__name__}: {e})") from None
        if count > max_pages:
            raise ParseError(f"the PDF has {count} pages, more than max_pages={max_pages}; split it, or "
                             f"raise max_pages (RAGCLINIC_MAX_PAGES or settings.toml)")
        try:
            title = str(pdf.metadata.get("Title") or "").strip()
            for number, page in enumerate(pdf.pages, start=1):
                page_items, raw = _page_items(page, hidden, keep_hidden, scans)
                if scans is not None and scanned(page, bool(page_items)):
                    if ref := scans.scan(page, number):
                        page_items = [_Item(number, ocr=ref)]
                items += page_items
                raw_pages.append(raw)
                page.close()  # drop pdfplumber's per-page object cache: long PDFs stay small in memory
            if scans is not None:
                scans.finish()
                items = _with_ocr(items, raw_pages, scans)
        except ParseError:
            raise  # an OCR failure says which page and why
        except Exception as e:  # pdfminer raises many types on damaged content streams
            where = f"page {number} is unreadable" if number else "cannot read the page tree"
            raise ParseError(f"not a valid PDF: {where} ({type(e).__name__}: {e})", page=number or None) from None
    finally:
        try:
            pdf.close()  # pdfplumber's close walks the page tree again: on a damaged file it raises too
        except Exception:  # (found by fuzzing) — it must not replace the ParseError with its own
            pass
    title = "" if title.lower() in _PLACEHOLDER_TITLES else title
    return items, raw_pages, title, len(raw_pages)


def _with_ocr(items: list[_Item], raw_pages: list[str], scans: Scans) -> list[_Item]:
    """The items with the OCR text put in: a scanned page's blocks (its raw text too), a picture's text after its
    caption."""
    out: list[_Item] = []
    for it in items:
        if it.ocr is None:
            out.append(it)
        elif not it.ocr.picture:
            done = scans.page(it.ocr)
            raw_pages[it.page - 1] = done.text
            out += [_Item(it.page, block=b) for b in done.blocks()]
        else:  # a picture: its caption and text one block, then the tables found in it
            block = figure_block(it.text, scans.picture_text(it.ocr), it.page)
            out += [_Item(it.page, block=block)] if block is not None else []
            out += [_Item(it.page, block=Block("table", rows=rows, page=it.page))
                    for rows in scans.picture_tables(it.ocr)]
    return out


def _page_items(page, hidden: list[Hidden], keep_hidden: bool = False,
                scans: Scans | None = None) -> tuple[list[_Item], str]:
    """The page's items in reading order, and its raw text (every text box as pdfminer found it); with ``scans``,
    the pictures of a page with text submitted for OCR (their place kept by an item with their reference)."""
    from pdfminer.layout import LTTextBox, LTTextLine  # on use: pdfminer, needed only for PDF documents

    layout = page.layout
    # The keyword-retention baseline: no table, footer, order or hyphen work. Not pdfplumber's
    # extract_text(): it merges two columns line by line, cutting "retrie-\nval" into unrelated lines.
    raw = "\n\n".join(obj.get_text() for obj in layout if isinstance(obj, LTTextBox))
    height = layout.height
    # A ruled box around a note is "found" as a 1-row or 1-column table: keep that as text.
    tables = [t for t in page.find_tables() if len(t.rows) >= 2 and len(t.columns) >= 2]
    dark = _dark_fills(page)
    boxes: list[Box] = []
    for t in tables:
        block = table_block(t.extract(), page=page.page_number)
        if block is not None:
            x0, top, x1, bottom = t.bbox
            boxes.append(Box(x0, top, x1, bottom, _Item(page.page_number, block=block)))
    for obj in layout:
        if not isinstance(obj, LTTextBox):
            continue
        seen = [(ln, visible_line(ln, hidden, keep_hidden, dark)) for ln in obj if isinstance(ln, LTTextLine)
                and not _inside_any(ln, tables, height)]
        lines = [ln for ln, t in seen if t.strip()]
        if not lines:
            continue
        text = "\n".join(t.rstrip() for _, t in seen if t.strip())
        x0, x1 = min(ln.x0 for ln in lines), max(ln.x1 for ln in lines)
        top, bottom = height - max(ln.y1 for ln in lines), height - min(ln.y0 for ln in lines)
        if is_page_number(text, top, bottom, height):
            continue
        boxes.append(Box(x0, top, x1, bottom, _Item(page.page_number, text, _mean_size(lines), len(lines)),
                         one_line=len(lines) == 1))
    if scans is not None and boxes:
        boxes = scans.figures(page, boxes, lambda caption, ref: _Item(page.page_number, ocr=ref) if caption is None
                              else _Item(caption.page, caption.text, caption.size, caption.lines, ocr=ref))
    return [b.payload for b in reading_order(boxes)], raw


def _dark_fills(page) -> list[tuple[float, float, float, float]]:
    """Filled rectangles that are not white, in pdfminer coordinates: white text on them is visible."""
    out = []
    for r in page.rects:
        color = r.get("non_stroking_color")
        if r.get("fill") and color is not None and not _white(color):
            out.append((r["x0"], r["y0"], r["x1"], r["y1"]))
    return out


def _white(color) -> bool:
    """A fill colour (gray, RGB or CMYK, as pdfminer gives it) that is white."""
    values = tuple(color) if isinstance(color, (list, tuple)) else (color,) if color is not None else ()
    if not values or not all(isinstance(v, (int, float)) for v in values):
        return False
    return (len(values) in (1, 3) and all(v >= 0.98 for v in values)) or (len(values) == 4 and all(v <= 0.02 for v in values))


def visible_line(line, hidden: list[Hidden], keep_hidden: bool, dark: list | None = None) -> str:
    """A text line without the characters a reader cannot see: white (not on a dark fill), or under 2 pt."""
    from pdfminer.layout import LTChar  # on use: pdfminer, needed only for PDF documents

    out: list[str] = []
    unseen: dict[str, list[str]] = {}
    for c in line:
        how = _char_hides(c, dark or ()) if isinstance(c, LTChar) else ""
        if how:
            unseen.setdefault(how, []).append(c.get_text())
        if not how or keep_hidden:
            out.append(c.get_text())
    for how, chars in unseen.items():
        if "".join(chars).strip():
            hidden.append(Hidden(how, "".join(chars), indexed=keep_hidden))
    return "".join(out)


def _char_hides(c, dark) -> str:
    if c.size < 2:
        return "1-pt text"
    if _white(getattr(getattr(c, "graphicstate", None), "ncolor", None)):
        cx, cy = (c.x0 + c.x1) / 2, (c.y0 + c.y1) / 2
        if not any(x0 <= cx <= x1 and y0 <= cy <= y1 for x0, y0, x1, y1 in dark):
            return "white text"
    return ""


def _inside_any(line, tables, height: float) -> bool:
    cx, cy = (line.x0 + line.x1) / 2, height - (line.y0 + line.y1) / 2
    return any(t.bbox[0] - 1 <= cx <= t.bbox[2] + 1 and t.bbox[1] - 1 <= cy <= t.bbox[3] + 1 for t in tables)


def _mean_size(lines) -> float:
    from pdfminer.layout import LTChar  # on use: pdfminer, needed only for PDF documents

    sizes = [ch.size for ln in lines for ch in ln if isinstance(ch, LTChar)]
    return sum(sizes) / len(sizes) if sizes else 0.0


def _classify(items: list[_Item]) -> list[Block]:
    """Blocks from items: one-line boxes set clearly larger than the body become headings."""
    text_items = [it for it in items if it.block is None and it.size]
    body = _weighted_median([(it.size, len(it.text)) for it in text_items])
    heading_sizes = sorted({round(it.size * 2) / 2 for it in text_items if _is_heading(it, body)}, reverse=True)
    blocks = []
    for it in items:
        if it.block is not None:
            blocks.append(it.block)
        elif _is_heading(it, body):
            level = min(heading_sizes.index(round(it.size * 2) / 2) + 1, 3)
            blocks.append(Block("heading", it.text, level=level, page=it.page, reflow=True))
        else:
            blocks.append(Block("text", it.text, page=it.page, reflow=True))
    return blocks


def _weighted_median(pairs: list[tuple[float, int]]) -> float:
    """The body font size: the size carrying the median character, not the median box."""
    total, seen = sum(w for _, w in pairs), 0
    for size, weight in sorted(pairs):
        seen += weight
        if seen * 2 >= total:
            return size
    return 0.0


def _is_heading(it: _Item, body: float) -> bool:
    return bool(body) and it.lines == 1 and it.size >= HEADING_SIZE_RATIO * body and len(it.text) <= 150
