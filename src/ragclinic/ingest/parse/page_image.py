"""A page of a source file as a picture, for the passage view of text read by OCR: the reader checks the text
against the page it was read from. Rendered on request from the file the document was parsed from, and only while
that file is unchanged (its sha256 is the one stored at ingest): a changed file's page is not the evidence."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from ragclinic.ingest.parse.pdfium import page_picture

MAX_SIDE = 1400  # pixels: enough to read a scanned page on a screen, small enough to send at once
MAX_PIXELS = 40_000_000  # a picture decoded to show it has at most this many pixels (a JPEG is decoded scaled down)
PAGED = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff")


class PageTooLarge(ValueError):
    """A picture too large to decode for showing (its pixels over ``MAX_PIXELS`` even decoded scaled down)."""


def page_png(path: str | Path, page: int, sha256: str = "") -> bytes | None:
    """Page ``page`` (1-based) of the PDF or picture at ``path`` as a PNG no larger than ``MAX_SIDE``; None when
    the file is gone, changed since (``sha256`` given and not its digest), not paged, or has no such page.
    Memory stays bounded whatever the file says of its size: a PDF page is rendered at the resolution that makes
    its longer side ``MAX_SIDE`` pixels (a 30000 pt page at 3.4 dpi, not at a floor of 30 dpi: 1.4 GB), and a
    picture is decoded scaled down where its format allows (JPEG), else refused over ``MAX_PIXELS``
    (``PageTooLarge``)."""
    path = Path(path)
    if path.suffix.lower() not in PAGED or page < 1 or not path.is_file():
        return None
    data = path.read_bytes()
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        return None
    try:
        image = _pdf_page(data, page) if path.suffix.lower() == ".pdf" else _picture_page(data, page)
    except PageTooLarge:
        raise
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
        longest = max(float(p.width), float(p.height), 1.0) / 72.0
        return page_picture(p, min(150.0, MAX_SIDE / longest)).copy()


def _picture_page(data: bytes, page: int):
    from PIL import Image  # on use: Pillow, for pictures

    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as e:  # Pillow's own bound (twice its MAX_IMAGE_PIXELS), above ours
        raise PageTooLarge(f"the picture is over the {MAX_PIXELS:,} pixels that are decoded to show a page "
                           f"({e})") from None
    if page > getattr(image, "n_frames", 1):
        return None
    image.seek(page - 1)
    if image.format == "JPEG":
        image.draft("RGB" if image.mode != "L" else "L", (MAX_SIDE, MAX_SIDE))  # decoded at 1/2 … 1/8 scale
    if image.width * image.height > MAX_PIXELS:
        raise PageTooLarge(f"the picture is {image.width} × {image.height} pixels, over the {MAX_PIXELS:,} "
                           "that are decoded to show a page")
    return image.copy()
