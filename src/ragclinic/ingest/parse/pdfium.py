"""PDFium, which draws a PDF's pages (through pdfplumber's ``to_image``), is not thread-safe: no two of its calls
may run at once in one process, not even on different documents — it crashes or corrupts the process (pypdfium2's
documentation; three page pictures drawn at once by the server ended in "double free or corruption", issue 51).
Every picture of a PDF page is drawn through ``page_picture``, under one lock for the whole process."""

from __future__ import annotations

import threading

PDFIUM = threading.Lock()


def page_picture(page, resolution: float):
    """The pdfplumber ``page`` (or a crop of it) drawn at ``resolution`` dpi, as a Pillow image. PDFium opens,
    draws and closes the document inside the lock; the image returned is Python's own."""
    with PDFIUM:
        return page.to_image(resolution=resolution).original
