"""The parse settings `diagnose --apply` tries (issue 51): `keep_boilerplate` keeps an HTML page's navigation,
header and footer; `ocr_dpi` renders scans and pictures at a chosen resolution for OCR."""

from __future__ import annotations

from PIL import Image

from ragclinic.config import Settings
from ragclinic.ingest.parse.html import boilerplate_blocks, keeps_boilerplate
from ragclinic.ingest.parse.image import _at_dpi
from ragclinic.ingest.parse.pdf_ocr import _render_dpi

from .helpers import assert_spans_valid, parse_one

PAGE = """<html><head><title>Contact us</title></head><body>
<nav><a href="/">Home</a> <a href="tel:0800123456">Support hotline 0800 123 456</a></nav>
<article><h1>Contact us</h1><p>Our support team answers questions about orders, deliveries and returns. Write to us
with your order number and we reply within two working days.</p></article>
<div class="sidebar"><p>Opening hours 9 to 5</p></div>
<footer><p>Copyright 2024 Shop Inc.</p></footer></body></html>"""


def test_keep_boilerplate_keeps_the_navigation_of_the_pages_it_names(tmp_path):
    path = tmp_path / "contact.html"
    path.write_text(PAGE, encoding="utf-8")
    plain = parse_one(path).document.text
    assert "two working days" in plain and "0800 123 456" not in plain and "Copyright" not in plain
    for pattern in (str(path.resolve()), "contact.html", "*.html"):
        kept = parse_one(path, Settings(keep_boilerplate=[pattern]))
        text = kept.document.text
        assert "0800 123 456" in text and "Opening hours 9 to 5" in text and "two working days" in text, pattern
        assert kept.document.metadata["boilerplate_kept"] is True
        assert_spans_valid(kept.document)
    assert "0800 123 456" not in parse_one(path, Settings(keep_boilerplate=["other.html"])).document.text


def test_the_boilerplate_blocks_are_named_as_their_start_tags():
    blocks = dict(boilerplate_blocks(PAGE.encode()))
    assert "0800 123 456" in blocks["<nav>"] and blocks['<div class="sidebar">'] == "Opening hours 9 to 5"
    assert "Copyright 2024" in blocks["<footer>"] and not any("two working days" in t for t in blocks.values())
    assert keeps_boilerplate("/a/b/page.htm", ["/a/*"]) and not keeps_boilerplate("/a/b/page.htm", [])


def test_ocr_dpi_renders_at_the_chosen_resolution():
    assert _render_dpi(150.0, 612 * 792) == 150 and _render_dpi(None, 612 * 792) == 300  # their own: unchanged
    assert _render_dpi(150.0, 612 * 792, 400) == 400 and _render_dpi(None, 612 * 792, 300) == 300
    assert _render_dpi(150.0, 6120 * 7920, 400) < 400  # a huge page still within MAX_PIXELS
    declared = Image.new("L", (300, 100), 255)
    declared.info["dpi"] = (100, 100)
    assert _at_dpi(declared, 0).size == (300, 100) and _at_dpi(declared, 300).size == (900, 300)
    assert _at_dpi(Image.new("L", (72, 36), 255), 288).size == (288, 144)  # none declared: 72 dpi
