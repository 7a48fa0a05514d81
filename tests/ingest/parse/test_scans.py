"""Scans and pictures beyond plain text (issue 39): a ruled table in a scan becomes a table the SQL tool reads; page
numbers and running headers repeated on scanned pages are dropped; a picture on a PDF page with text is read, its
caption with it, while a photograph adds nothing; a picture's caption in a Word file goes with its text; pages read
by a pool of two give what one reader gives."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from ragclinic.config import Settings
from ragclinic.ingest.parse import parse_source

from .helpers import assert_spans_valid, source_of
from .test_image import _bytes, _tesseract, page

TABLE = [["Code", "Meaning", "What to do"], ["E1", "No ignition", "Check the gas valve"],
         ["E4", "Water too hot", "Press reset"], ["E7", "Sensor fault", "Call the service line"]]


def _scanner(img: Image.Image, seed: int = 1) -> Image.Image:
    """Noise and a 0.6° skew, as a scanner gives them."""
    a = np.asarray(img.rotate(0.6, resample=Image.BICUBIC, fillcolor=255), dtype=np.float32)
    rng = np.random.default_rng(seed)
    a = np.clip(a + rng.normal(0, 18, a.shape), 0, 255)
    return Image.fromarray(a.astype(np.uint8), "L")


def _table_scan() -> Image.Image:
    img = Image.new("L", (1700, 1100), 255)
    d, font = ImageDraw.Draw(img), ImageFont.load_default(size=34)
    d.text((100, 80), "Error codes", font=font, fill=0)
    d.text((100, 150), "Look the code up below before you call the service line.", font=font, fill=0)
    xs, y0, step = [100, 400, 850, 1600], 260, 90
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            d.text((xs[c] + 20, y0 + r * step + 24), cell, font=font, fill=0)
    for r in range(len(TABLE) + 1):
        d.line((xs[0], y0 + r * step, xs[-1], y0 + r * step), fill=0, width=3)
    for x in xs:
        d.line((x, y0, x, y0 + len(TABLE) * step), fill=0, width=3)
    d.text((100, y0 + len(TABLE) * step + 60), "If the code comes back, write it in the service log.", font=font, fill=0)
    return _scanner(img)


def _parse(tmp_path, name: str, data: bytes, **settings):
    path = tmp_path / name
    path.write_bytes(data)
    return list(parse_source(source_of(path), Settings.load(tmp_path / "kb", **settings)))


def test_a_ruled_table_in_a_scan_becomes_a_table_in_its_place(tmp_path):
    _tesseract()
    (result,) = _parse(tmp_path, "codes.png", _bytes(_table_scan(), "PNG"))
    doc = result.document
    assert_spans_valid(doc)
    (table,) = doc.tables
    assert [r[0] for r in table.rows] == ["Code", "E1", "E4", "E7"]
    assert table.rows[2] == ("E4", "Water too hot", "Press reset") and table.rows[3][1] == "Sensor fault"
    assert doc.text.index("before you call") < table.start < table.end < doc.text.index("service log")
    assert "E4 Water too hot" not in doc.text  # its words are in the table, not also in a paragraph
    assert result.report.ocr_pages[0]["tables"] == 1


def test_the_sql_tool_reads_a_table_from_a_scan(tmp_path):
    _tesseract()
    from ragclinic import Clinic
    from ragclinic.store.tables import list_tables
    from ragclinic.tools.sql import run_sql

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.png").write_bytes(_bytes(_table_scan(), "PNG"))
    with Clinic.open(tmp_path / "kb", model=None, llm="none", embedder="fake", judge="llm",
                     cache_dir=tmp_path / "cache") as c:
        assert not c.ingest(docs).failed
        (t,) = list_tables(c.kb.db.conn)
        assert [n for n, _, _ in t["columns"]] == ["code", "meaning", "what_to_do"]
        got = run_sql(c.kb.db.path, f'SELECT meaning FROM {t["name"]} WHERE code = \'E7\'', {t["name"]})
        assert got.rows == (("Sensor fault",),)


def test_a_table_without_its_column_rules_stays_text(tmp_path):
    _tesseract()
    img = Image.new("L", (1700, 700), 255)
    d, font = ImageDraw.Draw(img), ImageFont.load_default(size=34)
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            d.text((120 + c * 450, 124 + r * 90), cell, font=font, fill=0)
        d.line((100, 100 + r * 90, 1600, 100 + r * 90), fill=0, width=3)
    (result,) = _parse(tmp_path, "rules.png", _bytes(_scanner(img), "PNG"))
    assert not result.document.tables and "Sensor fault" in result.document.text


def _manual_pages(n: int) -> list[Image.Image]:
    pages = []
    for i in range(1, n + 1):
        img = Image.new("L", (1240, 1754), 255)
        d, font = ImageDraw.Draw(img), ImageFont.load_default(size=30)
        d.text((100, 40), "Harbor Line Service Manual", font=font, fill=0)
        body = [f"Step {i}: open valve number {i * 3} slowly.", "Wait until the gauge settles before going on.",
                f"Section {i} ends here."]
        for j, line in enumerate(body):
            d.text((100, 400 + j * 70), line, font=font, fill=0)
        d.text((560, 1680), f"Page {i}", font=font, fill=0)
        pages.append(img)
    return pages


def test_page_numbers_and_a_running_header_of_a_scanned_manual_are_dropped(tmp_path):
    _tesseract()
    frames = _manual_pages(3)
    (result,) = _parse(tmp_path, "manual.tiff", _bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:]))
    text = result.document.text
    assert "open valve number 6" in text and "Section 3 ends here" in text
    assert "Harbor Line Service Manual" not in text and "Page 2" not in text
    data = _bytes(frames[0], "PDF", save_all=True, append_images=frames[1:], resolution=150)
    (pdf,) = _parse(tmp_path, "manual.pdf", data)
    assert "Harbor Line Service Manual" not in pdf.document.text and "Page 3" not in pdf.document.text
    assert "open valve number 9" in pdf.document.text


def test_pages_read_by_a_pool_of_two_equal_one_reader(tmp_path):
    _tesseract()
    frames = _manual_pages(4)
    data = _bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    (one,) = _parse(tmp_path, "one.tiff", data, ocr_workers=1)
    (two,) = _parse(tmp_path, "two.tiff", data, ocr_workers=2)
    assert one.document.text == two.document.text and one.report.ocr_pages == two.report.ocr_pages
    assert [p.number for p in two.document.pages] == [1, 2, 3, 4]


def _photo() -> Image.Image:
    rng = random.Random(3)
    img = Image.new("L", (900, 600), 200)
    d = ImageDraw.Draw(img)
    for _ in range(120):  # blobs of grey: a photograph's shapes, no letters
        x, y, r = rng.randrange(900), rng.randrange(600), rng.randrange(10, 80)
        d.ellipse((x - r, y - r, x + r, y + r), fill=rng.randrange(40, 230))
    return img


def _figure_pdf(picture: Image.Image, caption: str) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setFont("Helvetica", 11)
    c.drawString(72, 780, "Connect the heater to the supply as the figure below shows.")
    c.drawImage(ImageReader(picture), 72, 430, width=450, height=300)
    c.setFont("Helvetica", 10)
    c.drawString(72, 412, caption)
    c.setFont("Helvetica", 11)
    c.drawString(72, 360, "Switch the breaker on only after the cover is closed.")
    c.showPage()
    c.save()
    return buf.getvalue()


def test_a_picture_on_a_text_page_is_read_and_its_caption_travels_with_it(tmp_path):
    _tesseract()
    wiring = page(["Brown wire to terminal L", "Blue wire to terminal N", "Green-yellow wire to PE"], size=(1500, 1000))
    (result,) = _parse(tmp_path, "wiring.pdf", _figure_pdf(wiring, "Figure 2: Wiring the supply"))
    doc, report = result.document, result.report
    assert_spans_valid(doc)
    at = doc.text.index("Figure 2: Wiring the supply")
    block = doc.text[at:doc.text.find("\n\n", at) if "\n\n" in doc.text[at:] else len(doc.text)]
    assert "terminal N" in block and "PE" in block  # the caption and the picture's words: one paragraph
    assert doc.text.index("as the figure below shows") < at < doc.text.index("cover is closed")
    (pic,) = report.ocr_pages
    assert pic["page"] == 1 and pic["picture"] == 1 and pic["confidence"] >= 60
    assert not report.empty_pages


def test_a_photograph_on_a_text_page_adds_no_words_and_its_caption_stays(tmp_path):
    _tesseract()
    (result,) = _parse(tmp_path, "pump.pdf", _figure_pdf(_photo(), "Figure 3: The circulation pump"))
    doc = result.document
    at = doc.text.index("Figure 3: The circulation pump")
    assert doc.text[at:].split("\n\n")[0].strip() == "Figure 3: The circulation pump"
    assert not result.report.ocr_pages


def test_a_table_pictured_on_a_text_page_becomes_a_table_after_its_caption(tmp_path):
    _tesseract()
    (result,) = _parse(tmp_path, "codes.pdf", _figure_pdf(_table_scan(), "Figure 4: Error codes"))
    doc = result.document
    assert_spans_valid(doc)
    (table,) = doc.tables
    assert [r[0] for r in table.rows] == ["Code", "E1", "E4", "E7"] and table.rows[3][1] == "Sensor fault"
    assert doc.text.index("Figure 4: Error codes") < table.start < doc.text.index("cover is closed")
    at = doc.text.index("Figure 4: Error codes")
    assert "E7" not in doc.text[at:doc.text.index("\n\n", at)]  # a table, not lines of cells in the caption's paragraph
    (pic,) = result.report.ocr_pages
    assert pic["picture"] == 1 and pic["tables"] == 1


def test_a_word_file_picture_and_its_caption_are_one_block(tmp_path):
    _tesseract()
    from docx import Document
    from docx.shared import Inches

    d = Document()
    d.add_paragraph("The display after a reset:")
    shot = tmp_path / "display.png"
    page(["Relief valve opens at 7.5 bar"]).save(shot)
    d.add_paragraph().add_run().add_picture(str(shot), width=Inches(6))
    d.add_paragraph("Figure 1: The boiler display", style="Caption")
    d.add_paragraph("Then close the cover.")
    buf = io.BytesIO()
    d.save(buf)
    (result,) = _parse(tmp_path, "display.docx", buf.getvalue())
    text = result.document.text
    para = next(p for p in text.split("\n\n") if "Figure 1" in p)
    assert para.startswith("Figure 1: The boiler display\n") and "7.5 bar" in para
    assert text.index("after a reset") < text.index("Figure 1") < text.index("close the cover")


@pytest.mark.parametrize("angle", [0.0, 1.2])
def test_a_skewed_scan_reads_as_well_as_a_level_one(tmp_path, angle):
    _tesseract()
    img = page(["The relief valve opens at 7.5 bar.", "Call the service line on 0800 555 0142."] * 3,
               size=(1500, 900))
    (result,) = _parse(tmp_path, f"skew{angle}.png", _bytes(img.rotate(angle, resample=Image.BICUBIC,
                                                                       fillcolor=255), "PNG"))
    assert result.document.text.count("0800 555 0142") == 3
