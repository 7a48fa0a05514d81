"""DOCX via python-docx, in body order: paragraphs and tables interleaved as in the file; pictures in paragraphs
(screenshots, pasted scans) read by OCR after the paragraph that holds them — or, when the next paragraph is the
picture's caption ("Caption" style, or "Figure 2: …" / "图 2 …"), with that caption, in one block.

Heading styles ("Title", "Heading 1".."Heading 9") give the section path; "Title" counts as level 1
so that the document title does not become a prefix of every heading path. Tables become Table
cells plus a Markdown rendering. Before python-docx opens the archive, the zip directory is
checked against ``zip_max_uncompressed`` and ``zip_max_ratio``: a zip bomb would otherwise be
inflated into memory by the XML parser.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import replace

from ragclinic.config import Settings
from ragclinic.errors import EncryptedDocument, ParseError
from ragclinic.ingest.parse.hidden import Hidden
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed, table_block
from ragclinic.ingest.parse.ocr import available, figure_block, is_caption, read_page
from ragclinic.types import Parsed, RecordError, SourceFile

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
MIN_PICTURE_PIXELS = 60_000  # smaller pictures (icons, logos, bullets) are not read by OCR
_HEADING = re.compile(r"heading\s*([1-9])$", re.I)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc, and password-protected .docx


class DocxParser:
    name = "docx"
    suffixes = (".docx",)

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        try:
            archive = open_checked_zip(source.data, settings)
            raw = raw_text(archive)
            document = _open_document(source.data)
        except ZIP_ERRORS as e:  # found by fuzzing: a damaged archive fails inside zipfile/zlib
            raise ParseError(f"corrupt DOCX archive ({type(e).__name__}: {e}); re-save it from Word") from None
        # The visible Title paragraph beats core properties, which are often template leftovers.
        title = _first_title(document) or (document.core_properties.title or "").strip()
        hidden: list[Hidden] = []
        pictures = _Pictures(document, settings)
        blocks = list(_body_blocks(document, hidden, settings.keep_hidden_text, pictures))
        info = DocInfo(self.name, raw_text=raw + pictures.text(), title=title, hidden=tuple(hidden),
                       metadata={"ocr": pictures.read} if pictures.read else {}, warnings=pictures.warnings())
        yield make_parsed(source, settings, assemble(blocks, keep_hyphens=settings.keep_hyphens), info)


def _mb(n: float) -> str:
    # Binary units, like the setting's default (500 * 1024 * 1024 shows as "500 MB").
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


# What zipfile and zlib raise on a damaged archive, besides BadZipFile (found by fuzzing).
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, ValueError, KeyError, EOFError, OSError)


def open_checked_zip(data: bytes, settings: Settings, *, kind: str = "DOCX", app: str = "Word",
                     required: str = "word/document.xml") -> zipfile.ZipFile:
    """Open an Office zip (DOCX; XLSX with ``kind``/``app``/``required``) after checking its declared sizes;
    ParseError for bombs and corrupt files."""
    if data.startswith(_OLE_MAGIC):
        legacy = {"DOCX": ".doc", "XLSX": ".xls"}.get(kind, "binary file")
        raise EncryptedDocument(f"{kind} is password-protected or a legacy {legacy} in disguise (OLE container); "
                                f"remove the password / re-save as .{kind.lower()} in {app} or LibreOffice")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise ParseError(f"corrupt {kind}: not a valid zip archive ({e}); re-save it from {app} or LibreOffice")
    # zipfile never inflates a member past its declared file_size, so the declared sizes bound
    # what the reader can read, even when an attacker lies about them.
    uncompressed = sum(i.file_size for i in infos)
    compressed = sum(i.compress_size for i in infos) or 1
    if uncompressed > settings.zip_max_uncompressed:
        raise ParseError(f"{kind} looks like a zip bomb: {_mb(uncompressed)} uncompressed "
                         f"(limit {_mb(settings.zip_max_uncompressed)}, settings zip_max_uncompressed)")
    if uncompressed / compressed > settings.zip_max_ratio:
        raise ParseError(f"{kind} looks like a zip bomb: compression ratio {uncompressed / compressed:.0f}:1 "
                         f"(limit {settings.zip_max_ratio:.0f}:1, settings zip_max_ratio)")
    if required not in archive.namelist():
        raise ParseError(f"corrupt {kind}: no {required} in the archive (is it really an {app} file?)")
    return archive


def raw_text(archive: zipfile.ZipFile) -> str:
    """All ``w:t`` text of word/document.xml, one line per paragraph: the keyword-retention baseline."""
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    try:
        root = etree.fromstring(archive.read("word/document.xml"), etree.XMLParser(resolve_entities=False))
    except (etree.XMLSyntaxError, zipfile.BadZipFile, OSError, EOFError) as e:
        raise ParseError(f"corrupt DOCX: word/document.xml is unreadable ({e})") from None
    return "\n".join(_xml_paragraph_text(p) for p in root.iter(f"{_W}p"))


def _xml_paragraph_text(p) -> str:
    """A paragraph's text from its XML: tabs and line breaks become spaces, as Word shows them."""
    return "".join(t.text or "" if t.tag == f"{_W}t" else " " for t in p.iter(f"{_W}t", f"{_W}tab", f"{_W}br"))


def _open_document(data: bytes):
    import docx  # on use: python-docx, needed only for DOCX documents

    try:
        return docx.Document(io.BytesIO(data))
    except Exception as e:  # python-docx raises KeyError/ValueError/lxml errors for broken packages
        raise ParseError(f"corrupt DOCX: {type(e).__name__}: {e}; re-save it from Word or LibreOffice") from None


def _first_title(document) -> str:
    for p in document.paragraphs:
        if _style_name(p) == "title":
            return p.text.strip()
    return ""


def _style_name(paragraph) -> str:
    try:
        return (paragraph.style.name or "").strip().lower() if paragraph.style is not None else ""
    except (KeyError, ValueError):  # a style id missing from styles.xml
        return ""


class _Pictures:
    """Pictures in the document's paragraphs (screenshots, scanned pages pasted in) read by OCR when the ``ocr``
    setting names languages: their text follows the paragraph that holds them. Small ones (icons, logos: under
    ``MIN_PICTURE_PIXELS``) and pictures past ``ocr_max_pages`` are not read."""

    def __init__(self, document, settings: Settings) -> None:
        self.document, self.settings = document, settings
        self.read: list[dict] = []
        self.pages: list = []
        self.skipped = 0

    def blocks(self, element) -> list[Block]:
        if not self.settings.ocr or not available():
            return []
        out = []
        for blip in element.iter(f"{_A}blip"):
            part = self.document.part.related_parts.get(blip.get(f"{_R}embed") or "")
            image = _picture(part)
            if image is None:
                continue
            if len(self.read) >= self.settings.ocr_max_pages:
                self.skipped += 1
                continue
            done = read_page(image, len(self.read) + 1, self.settings.ocr, self.settings.ocr_page_seconds)
            self.read.append({**done.to_json(), "picture": len(self.read) + 1})
            self.pages.append(done)
            out += [replace(b, page=None) for b in done.blocks()]  # a picture number is not a page of the file
        return out

    def text(self) -> str:
        return "".join("\n\n" + p.text for p in self.pages)

    def warnings(self) -> tuple[str, ...]:
        low = [f"ocr_low_confidence: picture {n} read with mean confidence {p.confidence:.0f}"
               for n, p in enumerate(self.pages, start=1) if p.low]
        return tuple(low + ([f"{self.skipped} picture(s) not read: over ocr_max_pages="
                             f"{self.settings.ocr_max_pages}"] if self.skipped else []))


def _picture(part):
    """The picture of an image part, None for anything else or a picture too small to hold text."""
    if part is None or not str(getattr(part, "content_type", "")).startswith("image/"):
        return None
    from PIL import Image, UnidentifiedImageError  # on use: Pillow, for pictures only

    try:
        image = Image.open(io.BytesIO(part.blob))
        if image.width * image.height < MIN_PICTURE_PIXELS:
            return None
        image.load()
        return image
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
        return None  # a picture it cannot open holds no text it could read


def _body_blocks(document, hidden: list[Hidden], keep_hidden: bool, pictures: _Pictures | None = None
                 ) -> Iterator[Block]:
    from docx.table import Table as DocxTable  # on use: python-docx, needed only for DOCX documents
    from docx.text.paragraph import Paragraph  # on use: python-docx, needed only for DOCX documents

    figure: list[Block] = []  # the last paragraph's pictures' text: its caption, if next, goes with it
    for child in _body_elements(document.element.body):
        if child.tag == f"{_W}p":
            paragraph = Paragraph(child, document)
            style = _style_name(paragraph)
            text = _visible_text(paragraph, hidden, keep_hidden)
            heading = _HEADING.match(style)
            if figure and text.strip() and (style == "caption" or is_caption(text)):
                yield from _captioned(text, figure)
                figure = []
                continue
            yield from figure
            figure = []
            if style == "title":
                yield Block("heading", text, level=1, reflow=True)
            elif heading:
                yield Block("heading", text, level=int(heading.group(1)), reflow=True)
            elif style.startswith("list"):
                yield Block("text", f"- {text}" if text.strip() else "")
            else:
                yield Block("text", text)
            if pictures is not None:
                figure = pictures.blocks(child)
        elif child.tag == f"{_W}tbl":
            yield from figure
            figure = []
            rows = [_row_texts(row) for row in DocxTable(child, document).rows]
            block = table_block(rows) if rows else None
            if block is not None:
                yield block
    yield from figure


def _captioned(caption: str, figure: list[Block]) -> list[Block]:
    """A picture's caption with the text read in it, one block (no chunk boundary between them); its tables after."""
    text = "\n".join(b.text for b in figure if b.kind == "text")
    first = figure_block(caption, text, None)
    return ([first] if first is not None else []) + [b for b in figure if b.kind == "table"]


def _visible_text(paragraph, hidden: list[Hidden], keep_hidden: bool) -> str:
    """The paragraph's text without the runs a reader cannot see (hidden, white, under 2 pt)."""
    runs = [(r, _run_hides(r)) for r in paragraph._p.iter(f"{_W}r")]
    if not any(how for _, how in runs):
        return paragraph.text
    out: list[str] = []
    for run, how in runs:
        text = "".join(t.text or "" if t.tag == f"{_W}t" else "\t" if t.tag == f"{_W}tab" else "\n"
                       for t in run.iter(f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr"))
        if how and text.strip():
            hidden.append(Hidden(how, text, indexed=keep_hidden))
        if not how or keep_hidden:
            out.append(text)
    return "".join(out)


def _run_hides(run) -> str:
    rpr = run.find(f"{_W}rPr")
    if rpr is None:
        return ""
    vanish = rpr.find(f"{_W}vanish")
    if vanish is not None and vanish.get(f"{_W}val", "true").lower() not in ("0", "false", "off"):
        return "hidden run"
    color, size = rpr.find(f"{_W}color"), rpr.find(f"{_W}sz")
    shading = rpr.find(f"{_W}shd")
    fill = (shading.get(f"{_W}fill") or "").upper() if shading is not None else ""
    if color is not None and (color.get(f"{_W}val") or "").upper() == "FFFFFF" and fill in ("", "AUTO", "FFFFFF"):
        return "white text"
    if size is not None and (size.get(f"{_W}val") or "").isdigit() and int(size.get(f"{_W}val")) < 4:
        return "1-pt text"  # w:sz is in half-points
    return ""


def _body_elements(container) -> Iterator:
    """Paragraphs and tables in body order, looking inside content controls (``w:sdt``), which
    templates and tables of contents wrap around ordinary paragraphs."""
    for child in container.iterchildren():
        if child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _body_elements(content)
        else:
            yield child


def _row_texts(row) -> list[str]:
    """Cell texts of a row; a merged cell's text once (python-docx repeats the cell per grid column),
    nested tables' text inside their cell."""
    out: list[str] = []
    previous = None
    for cell in row.cells:
        if previous is not None and cell._tc is previous:
            out.append("")
            continue
        previous = cell._tc
        out.append(" ".join(t for t in (_xml_paragraph_text(p).strip() for p in cell._tc.iter(f"{_W}p")) if t))
    return out
