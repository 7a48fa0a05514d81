"""A page of a source file as a picture, for the passage view of text read by OCR: the reader checks the text
against the page it was read from. Rendered on request from the file the document was parsed from, and only while
that file is unchanged (its sha256 is the one stored at ingest): a changed file's page is not the evidence."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

MAX_SIDE = 1400  # pixels: enough to read a scanned page on a screen, small enough to send at once
PAGED = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff")


def page_png(path: str | Path, page: int, sha256: str = "") -> bytes | None:
    """Page ``page`` (1-based) of the PDF or picture at ``path`` as a PNG no larger than ``MAX_SIDE``; None when
    the file is gone, changed since (``sha256`` given and not its digest), not paged, or has no such page."""
    path = Path(path)
    if path.suffix.lower() not in PAGED or page < 1 or not path.is_file():
        return None
    data = path.read_bytes()
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        return None
    try:
        image = _pdf_page(data, page) if path.suffix.lower() == ".pdf" else _picture_page(data, page)
    except Exception:  # a file that no longer renders has no page to show; the passage's text still shows
        return None
    if image is None:
        return None
    image.thumbnail((MAX_SIDE, MAX_SIDE))
    out = io.BytesIO()
    image.convert("L" if image.mode in ("1", "L", "I;16") else "RGB").save(out, "PNG", optimize=True)
    return out.getvalue()


def _pdf_page(data: bytes, page: int):
    import pdfplumber  # on use: pdfplumber, for a PDF's page

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        if page > len(pdf.pages):
            return None
        p = pdf.pages[page - 1]
        longest = max(float(p.width), float(p.height)) / 72.0 or 1.0
        return p.to_image(resolution=max(30, min(150, int(MAX_SIDE / longest)))).original.copy()


def _picture_page(data: bytes, page: int):
    from PIL import Image  # on use: Pillow, for pictures

    image = Image.open(io.BytesIO(data))
    if page > getattr(image, "n_frames", 1):
        return None
    image.seek(page - 1)
    return image.copy()
