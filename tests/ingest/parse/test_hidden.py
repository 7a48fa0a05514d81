"""Text a reader cannot see (parse/hidden.py): left out of the index and named in the report, kept with
``keep_hidden_text``; visible text that merely looks unusual (grey, white on a dark box) stays."""

from __future__ import annotations

from ragclinic.config import Settings
from ragclinic.ingest.parse.hidden import style_hides

from .helpers import parse_one

PAGE = """<html><head><title>T</title><style>.gone {{ display: none }}</style></head><body><article>
<h1>Opening hours</h1><p>The library opens at nine every weekday.</p>{hidden}
<p>It closes at six on Saturdays.</p></article></body></html>"""


def _html(tmp_path, hidden, **settings):
    path = tmp_path / "p.html"
    path.write_text(PAGE.format(hidden=hidden), encoding="utf-8")
    return parse_one(path, Settings(**settings))


def test_each_way_of_hiding_html_is_left_out_and_reported(tmp_path):
    for hidden, how in (("<p style='display:none'>SECRETWORD here</p>", "display:none"),
                        ("<p hidden>SECRETWORD here</p>", "hidden attribute"),
                        ("<div aria-hidden='true'>SECRETWORD here</div>", "aria-hidden"),
                        ("<p class='gone'>SECRETWORD here</p>", "display:none"),
                        ("<p style='color:white'>SECRETWORD here</p>", "white text"),
                        ("<p style='font-size:0px'>SECRETWORD here</p>", "font-size:0px"),
                        ("<p style='position:absolute;left:-9999px'>SECRETWORD here</p>", "left:-9999px")):
        parsed = _html(tmp_path, hidden)
        assert "SECRETWORD" not in parsed.document.text, hidden
        assert "nine every weekday" in parsed.document.text and "six on Saturdays" in parsed.document.text
        assert parsed.report.hidden_chars > 0
        note = next(w for w in parsed.report.warnings if "a reader cannot see" in w)
        assert how in note and "SECRETWORD" not in note, (hidden, note)


def test_keep_hidden_text_indexes_it(tmp_path):
    parsed = _html(tmp_path, "<p style='display:none'>SECRETWORD here</p>", keep_hidden_text=True)
    assert "SECRETWORD" in parsed.document.text
    assert any("indexed (keep_hidden_text=true)" in w for w in parsed.report.warnings)


def test_visible_styles_are_not_hidden(tmp_path):
    for shown in ("<p style='color:#333'>SHOWNWORD here</p>", "<p style='color:white;background:#000'>SHOWNWORD here</p>",
                  "<div style='background-color:#123456'><p style='color:#fff'>SHOWNWORD here</p></div>",
                  "<p style='font-size:14px'>SHOWNWORD here</p>"):
        parsed = _html(tmp_path, shown)
        assert "SHOWNWORD" in parsed.document.text, shown
        assert parsed.report.hidden_chars == 0
    assert style_hides("color: #ffffff; background-color: #FFFFFF") == "text coloured like its background"
    assert style_hides("opacity: 0.5") == ""


def test_an_ordinary_html_comment_is_not_reported(tmp_path):
    parsed = _html(tmp_path, "<!-- layout: two columns, updated by the web team -->")
    assert parsed.report.hidden_chars == 0 and parsed.report.instructions == 0


def test_pdf_white_text_on_a_dark_box_is_visible(tmp_path):
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    path = tmp_path / "banner.pdf"
    c = canvas.Canvas(str(path), pagesize=A4)
    c.setFillColorRGB(0.1, 0.2, 0.5)
    c.rect(50, 700, 400, 40, fill=1, stroke=0)
    c.setFillColorRGB(1, 1, 1)
    c.setFont("Helvetica", 14)
    c.drawString(60, 715, "Annual report banner")
    c.drawString(60, 500, "Invisible white words")  # white on the white page
    c.setFillColorRGB(0, 0, 0)
    c.drawString(60, 600, "Revenue grew by four percent.")
    c.save()
    parsed = parse_one(path)
    assert "Annual report banner" in parsed.document.text and "four percent" in parsed.document.text
    assert "Invisible" not in parsed.document.text
    assert any("white text" in w for w in parsed.report.warnings)


def test_docx_hidden_and_white_runs_are_left_out(tmp_path):
    import docx
    from docx.shared import RGBColor

    d = docx.Document()
    p = d.add_paragraph("The depot opens at seven. ")
    hidden = p.add_run("HIDDENWORD one. ")
    hidden.font.hidden = True
    white = p.add_run("WHITEWORD two. ")
    white.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    p.add_run("It closes at five.")
    path = tmp_path / "d.docx"
    d.save(str(path))
    parsed = parse_one(path)
    assert "opens at seven" in parsed.document.text and "closes at five" in parsed.document.text
    assert "HIDDENWORD" not in parsed.document.text and "WHITEWORD" not in parsed.document.text
    note = next(w for w in parsed.report.warnings if "a reader cannot see" in w)
    assert "hidden run" in note and "white text" in note
