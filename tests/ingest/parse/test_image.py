"""Pictures read by OCR (issue 39, first part): PNG, JPEG and multi-page TIFF through Tesseract, a page fed in turned
found and read upright, each page's confidence in the parse report, and every failure a failed file with its reason
(never a crash): not a picture, OCR off, a page over its time."""

from __future__ import annotations

import io
import shutil

import pytest
from PIL import Image, ImageDraw, ImageFont

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse import parse_source
from ragclinic.ingest.parse.ocr import LOW_CONFIDENCE
from ragclinic.types import Parsed

from .helpers import assert_spans_valid, source_of

LINES = ["Boiler Manual", "The relief valve opens at 7.5 bar.", "Call the service line on 0800 555 0142.",
         "Descale the element every six months in hard water areas."]


def _tesseract() -> str:
    path = shutil.which("tesseract")
    if not path:
        pytest.fail("the OCR tests need Tesseract: apt-get install -y --no-install-recommends tesseract-ocr "
                    "tesseract-ocr-eng tesseract-ocr-chi-sim (make install does it when run as root)")
    return path


def page(lines=LINES, size=(1500, 700), turn=0) -> Image.Image:
    img = Image.new("L", size, 255)
    draw, font = ImageDraw.Draw(img), ImageFont.load_default(size=36)
    for i, line in enumerate(lines):
        draw.text((60, 60 + i * 80), line, font=font, fill=0)
    return img.rotate(turn, expand=True, fillcolor=255) if turn else img


def _parse(tmp_path, name: str, data: bytes, **settings):
    path = tmp_path / name
    path.write_bytes(data)
    s = Settings.load(tmp_path / "kb", **settings)
    return list(parse_source(source_of(path), s))


def _bytes(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("name, fmt", [("scan.png", "PNG"), ("photo.jpg", "JPEG")])
def test_a_picture_is_read_with_its_confidence_in_the_report(tmp_path, name, fmt):
    _tesseract()
    (result,) = _parse(tmp_path, name, _bytes(page(), fmt))
    assert isinstance(result, Parsed)
    doc, report = result.document, result.report
    assert doc.parser == report.parser == "image" and doc.language == "en"
    assert "7.5 bar" in doc.text and "0800 555 0142" in doc.text
    assert_spans_valid(doc)
    (ocr,) = report.ocr_pages
    assert ocr["page"] == 1 and ocr["confidence"] > LOW_CONFIDENCE and ocr["characters"] > 80
    assert report.pages == 1 and not report.empty_pages


def test_each_frame_of_a_tiff_is_a_page(tmp_path):
    _tesseract()
    first, second = page(LINES[:2]), page(LINES[2:])
    data = _bytes(first, "TIFF", save_all=True, append_images=[second])
    (result,) = _parse(tmp_path, "fax.tiff", data)
    doc = result.document
    assert [p.number for p in doc.pages] == [1, 2] and [o["page"] for o in result.report.ocr_pages] == [1, 2]
    assert "7.5 bar" in doc.text[doc.pages[0].start:doc.pages[0].end]
    assert "0800 555 0142" in doc.text[doc.pages[1].start:doc.pages[1].end]


def test_a_page_fed_in_turned_is_read_upright(tmp_path):
    _tesseract()
    (result,) = _parse(tmp_path, "turned.png", _bytes(page(LINES * 3, size=(1500, 1100), turn=90), "PNG"))
    assert result.report.ocr_pages[0]["turned"] in (90, 270)
    assert "7.5 bar" in result.document.text


def test_failures_are_parse_errors_that_say_why(tmp_path):
    _tesseract()
    with pytest.raises(ParseError, match="not a readable picture"):
        _parse(tmp_path, "broken.png", b"\x89PNG\r\n\x1a\n not really")
    with pytest.raises(ParseError, match="ocr setting is empty"):
        _parse(tmp_path, "scan.png", _bytes(page(), "PNG"), ocr="")
    with pytest.raises(ParseError, match="ocr_page_seconds"):
        _parse(tmp_path, "slow.png", _bytes(page(LINES * 6, size=(3000, 4000)), "PNG"), ocr_page_seconds=0.01)
    many = _bytes(page(), "TIFF", save_all=True, append_images=[page(), page()])
    with pytest.raises(ParseError, match="ocr_max_pages=2"):
        _parse(tmp_path, "long.tiff", many, ocr_max_pages=2)


def test_a_blank_picture_says_no_words_and_a_poorly_read_one_is_flagged_low(tmp_path, monkeypatch):
    _tesseract()
    blank = Image.new("L", (900, 600), 255)
    (result,) = _parse(tmp_path, "blank.png", _bytes(blank, "PNG"))
    (ocr,) = result.report.ocr_pages
    assert ocr["confidence"] is None and "page 1: OCR found no words" in result.report.warnings
    assert not any(w.startswith("ocr_low_confidence") for w in result.report.warnings)  # blank, not misread
    from ragclinic.ingest.parse import image, ocr as engine

    monkeypatch.setattr(engine, "read_page", lambda img, n, langs, secs: engine.OcrPage(n, ("Bo1ler rnanual",), 41.0))
    (poor,) = _parse(tmp_path, "poor.png", _bytes(page(), "PNG"))
    assert poor.report.ocr_pages[0]["confidence"] == 41.0
    assert "ocr_low_confidence: page 1 read with mean confidence 41" in poor.report.warnings
    assert LOW_CONFIDENCE == 60.0


def test_an_ingest_of_a_bad_picture_fails_that_file_and_keeps_the_others(tmp_path):
    _tesseract()
    from ragclinic import Clinic

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scan.png").write_bytes(_bytes(page(), "PNG"))
    (docs / "broken.jpg").write_bytes(b"not a jpeg")
    with Clinic.open(tmp_path / "kb", model=None, llm="none", embedder="fake", judge="llm",
                     cache_dir=tmp_path / "cache") as c:
        r = c.ingest(docs)
        assert r.added == 1 and len(r.failed) == 1 and "not a readable picture" in str(r.failed[0])
        a = c.ask("At what pressure does the relief valve open?", doctor=False)
        assert "7.5 bar" in a.text and a.citations[0].path.endswith("scan.png")


def _mixed_pdf(tmp_path) -> bytes:
    """Page 1 with a text layer, page 2 a scan (a picture of text only)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setFont("Helvetica", 11)
    c.drawString(72, 760, "Page one has a text layer: the boiler is installed by a certified fitter.")
    c.showPage()
    c.drawImage(ImageReader(page()), 36, 400, width=520, height=243)
    c.showPage()
    c.save()
    return buf.getvalue()


def test_a_scanned_pdf_page_is_read_by_ocr_and_a_text_page_is_not(tmp_path):
    _tesseract()
    (result,) = _parse(tmp_path, "mixed.pdf", _mixed_pdf(tmp_path))
    doc, report = result.document, result.report
    assert doc.parser == "pdf" and [o["page"] for o in report.ocr_pages] == [2]
    one, two = doc.pages
    assert "certified fitter" in doc.text[one.start:one.end]
    assert "7.5 bar" in doc.text[two.start:two.end] and not report.empty_pages


def test_with_ocr_off_a_scanned_page_stays_empty_and_the_report_says_so(tmp_path):
    (result,) = _parse(tmp_path, "mixed.pdf", _mixed_pdf(tmp_path), ocr="")
    assert result.report.empty_pages == (2,) and not result.report.ocr_pages
    assert any("page 2: page has no text (a scan? set ocr to read it)" in w for w in result.report.warnings)


def test_pages_over_ocr_max_pages_are_named_not_read(tmp_path):
    _tesseract()
    scans = [page(), page(LINES[1:]), page(LINES[2:])]
    data = _bytes(scans[0], "PDF", save_all=True, append_images=scans[1:], resolution=150)
    (result,) = _parse(tmp_path, "scans.pdf", data, ocr_max_pages=1)
    assert [o["page"] for o in result.report.ocr_pages] == [1] and result.report.empty_pages == (2, 3)
    assert any("pages 2-3 have no text layer and were not read: over ocr_max_pages=1" in w
               for w in result.report.warnings)


def test_a_page_with_a_photo_and_its_caption_keeps_its_text_layer(tmp_path):
    """Not a scan: the caption is the page's own text, and the words in the picture come with it."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.drawImage(ImageReader(page(["SOME WORDS IN THE PHOTO"])), 36, 300, width=520, height=400)
    c.setFont("Helvetica", 10)
    c.drawString(72, 280, "Figure 3: Pump")
    c.showPage()
    c.save()
    (result,) = _parse(tmp_path, "photo.pdf", buf.getvalue())
    assert [o.get("picture") for o in result.report.ocr_pages] == [1]  # the picture, not the page
    assert "Figure 3: Pump\nSOME WORDS IN THE PHOTO" in result.document.text


def test_without_tesseract_a_scanned_pdf_page_stays_empty_and_the_report_says_how_to_read_it(tmp_path, monkeypatch):
    from ragclinic.ingest.parse import pdf_ocr

    monkeypatch.setattr(pdf_ocr, "available", lambda: False)
    (result,) = _parse(tmp_path, "mixed.pdf", _mixed_pdf(tmp_path))
    assert result.report.empty_pages == (2,) and not result.report.ocr_pages
    assert any("Tesseract is not installed" in w and "--reparse" in w for w in result.report.warnings)
    assert "certified fitter" in result.document.text  # the text page is indexed all the same


def test_a_long_scan_keeps_its_ingest_alive_page_by_page(tmp_path):
    """parse_timeout_s bounds the time between two pages read by OCR (the parse worker's heartbeat), not the
    whole scan: twelve pages in a run limited to a fraction of their total time still ingest."""
    _tesseract()
    from ragclinic import Clinic

    frames = [page([f"Page {i} of the fax.", LINES[1]], size=(1400, 400)) for i in range(12)]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "fax.tiff").write_bytes(_bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:]))
    with Clinic.open(tmp_path / "kb", model=None, llm="none", embedder="fake", judge="llm",
                     cache_dir=tmp_path / "cache", parse_timeout_s=2.0) as c:
        r = c.ingest(docs)
        assert not r.failed and r.added == 1, r.failed


def test_a_screenshot_pasted_into_a_word_file_is_read_after_its_paragraph(tmp_path):
    _tesseract()
    from docx import Document
    from docx.shared import Inches

    doc = Document()
    doc.add_heading("Boiler notes", level=1)
    doc.add_paragraph("The service desk pasted the display below.")
    shot = tmp_path / "shot.png"
    page(LINES[1:3]).save(shot)
    doc.add_paragraph().add_run().add_picture(str(shot), width=Inches(6))
    doc.add_paragraph("End of the notes.")
    icon = tmp_path / "icon.png"
    Image.new("L", (40, 40), 0).save(icon)
    doc.add_paragraph().add_run().add_picture(str(icon))  # an icon: too small to hold text, not read
    buf = io.BytesIO()
    doc.save(buf)
    (result,) = _parse(tmp_path, "notes.docx", buf.getvalue())
    text, report = result.document.text, result.report
    assert "7.5 bar" in text and "0800 555 0142" in text
    assert text.index("pasted the display") < text.index("7.5 bar") < text.index("End of the notes")
    assert [o["picture"] for o in report.ocr_pages] == [1] and report.ocr_pages[0]["confidence"] > LOW_CONFIDENCE
    (off,) = _parse(tmp_path, "notes.docx", buf.getvalue(), ocr="")
    assert "7.5 bar" not in off.document.text and not off.report.ocr_pages
