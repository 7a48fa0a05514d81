"""The doctor's ``ocr_low_confidence`` (issue 39): an answer resting on a page OCR read with low confidence says so
(parse layer); one resting on a well-read page or on a text document does not."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from PIL import Image, ImageDraw, ImageFont

from ragclinic import Clinic

Q = "At what pressure does the relief valve open?"


def _picture() -> bytes:
    img = Image.new("L", (1500, 400), 255)
    draw, font = ImageDraw.Draw(img), ImageFont.load_default(size=36)
    for i, line in enumerate(["Boiler Manual", "The relief valve opens at 7.5 bar.", "Call the service line."]):
        draw.text((60, 60 + i * 80), line, font=font, fill=0)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def clinic(tmp_path):
    if not shutil.which("tesseract"):
        pytest.fail("the OCR tests need Tesseract: apt-get install tesseract-ocr tesseract-ocr-eng (make install)")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scan.png").write_bytes(_picture())
    (docs / "notes.md").write_text("# Notes\n\nThe boiler room door stays locked.\n", encoding="utf-8")
    c = Clinic.open(tmp_path / "kb", model=None, llm="none", embedder="fake", judge="llm", cache_dir=tmp_path / "cache")
    c.ingest(docs)
    yield c
    c.close()


def _set_confidence(c, value: float) -> None:
    (doc_id, report), = c.kb.db.conn.execute(
        "SELECT doc_id, parse_report FROM documents WHERE path LIKE '%scan.png'").fetchall()
    r = json.loads(report)
    r["ocr_pages"][0]["confidence"] = value  # as a poor scan would have it
    with c.kb.db.transaction():
        c.kb.db.conn.execute("UPDATE documents SET parse_report = ? WHERE doc_id = ?", [json.dumps(r), doc_id])


def _symptoms(c) -> dict:
    a = c.ask(Q, doctor=True, cache=False)
    assert "7.5 bar" in a.text
    return {s["name"]: s for s in a.symptoms}


def test_an_answer_from_a_poorly_read_page_carries_the_symptom(clinic):
    _set_confidence(clinic, 41.0)
    found = _symptoms(clinic)["ocr_low_confidence"]
    assert found["layer"] == "parse" and found["score"] >= 0.5
    assert "confidence 41" in found["evidence"] and "300 dpi" in found["evidence"]


def test_a_well_read_page_raises_nothing(clinic):
    assert clinic.kb.db.conn.execute("SELECT parse_report FROM documents WHERE path LIKE '%scan.png'").fetchone()
    symptoms = _symptoms(clinic)
    assert "ocr_low_confidence" not in symptoms or symptoms["ocr_low_confidence"]["score"] < 0.5
