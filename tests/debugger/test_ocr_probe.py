"""The debugger's parse probe on scans (issue 39): when no parsed text states the expected answer and pages were read
by OCR, it names the page (the least confident first) and what fixes it."""

from __future__ import annotations

import pytest

from ragclinic import Clinic

def test_the_parse_probe_points_at_a_page_ocr_read_when_no_text_states_the_answer(tmp_path):
    """A scan whose page OCR misread: the expected answer is in no parsed text, and the debugger names the page."""
    import io
    import shutil

    from PIL import Image, ImageDraw, ImageFont

    if not shutil.which("tesseract"):
        pytest.fail("the OCR tests need Tesseract: apt-get install tesseract-ocr tesseract-ocr-eng (make install)")
    img = Image.new("L", (1500, 300), 255)
    ImageDraw.Draw(img).text((60, 60), "The relief valve opens at 7.5 bar.", font=ImageFont.load_default(size=36),
                             fill=0)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scan.png").write_bytes(buf.getvalue())
    (docs / "notes.md").write_text("# Notes\n\nThe boiler room door stays locked.\n", encoding="utf-8")
    with Clinic.open(tmp_path / "kb", model=None, llm="none", embedder="fake", judge="llm",
                     cache_dir=tmp_path / "cache") as c:
        c.ingest(docs)
        d = c.diagnose("At what pressure does the relief valve open?", ["9.5 bar"])  # what the paper says, misread
        parse = d.layers["parse"]
        assert d.verdict == "parse" and parse.status == "fault" and "read by OCR" in parse.evidence["summary"]
        assert "scan.png page 1" in parse.evidence["summary"] and "300 dpi" in parse.suggestion
        assert parse.evidence["ocr_pages"][0]["page"] == 1
