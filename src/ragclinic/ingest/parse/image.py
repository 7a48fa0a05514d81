"""Pictures — PNG, JPEG, TIFF (each frame a page) — read by OCR (ocr.py): scans and photographs of documents
become text like any other, page by page, with the engine's confidence per page in the parse report. With
``ocr_dpi`` set, each page is scaled from the resolution the file declares (72 dpi when it declares none) to that one
before it is read (``diagnose --apply`` tries a higher one for a page OCR misread)."""

from __future__ import annotations

import io
from collections.abc import Iterator

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import DocInfo, assemble, make_parsed
from ragclinic.ingest.parse.ocr import MAX_PIXELS, OcrPool, without_running
from ragclinic.types import Parsed, RecordError, SourceFile

DECLARED_DPI = 72.0  # the resolution of a picture that declares none (PIL's and most viewers' assumption)


class ImageParser:
    name = "image"
    suffixes = (".png", ".jpg", ".jpeg", ".tif", ".tiff")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        if not settings.ocr:
            raise ParseError("a picture is read by OCR, and the ocr setting is empty (off): set it to the "
                             "documents' languages, e.g. ocr = \"eng+chi_sim\"")
        from PIL import Image, ImageSequence, UnidentifiedImageError  # on use: Pillow, for pictures only

        try:
            img = Image.open(io.BytesIO(source.data))
            count = getattr(img, "n_frames", 1)
            if count > settings.ocr_max_pages:
                raise ParseError(f"the picture has {count} pages, more than ocr_max_pages={settings.ocr_max_pages}; "
                                 "split it, or raise RAGCLINIC_OCR_MAX_PAGES")
            with OcrPool(settings.ocr, settings.ocr_page_seconds, settings.ocr_workers) as pool:
                for n, frame in enumerate(ImageSequence.Iterator(img), start=1):
                    # a copy: the next frame reuses the decoder's buffer
                    pool.submit(_bounded(_at_dpi(frame.copy(), settings.ocr_dpi)), n)
                pages = without_running(list(pool.results().values()))
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, EOFError) as e:
            raise ParseError(f"not a readable picture: {e}") from e
        blocks = [b for p in pages for b in p.blocks()]
        warnings = tuple(f"ocr_low_confidence: page {p.page} read with mean confidence {p.confidence:.0f}"
                         for p in pages if p.low) + tuple(f"page {p.page}: OCR found no words"
                                                          for p in pages if p.confidence is None)
        info = DocInfo(self.name, raw_text="\n\n".join(p.text for p in pages),
                       metadata={"pages": len(pages), "ocr": [p.to_json() for p in pages]}, warnings=warnings)
        yield make_parsed(source, settings, assemble(blocks, page_count=len(pages)), info)


def _at_dpi(frame, dpi: int):
    """The frame scaled from its declared resolution to ``dpi`` (0: as it is)."""
    declared = frame.info.get("dpi") or (DECLARED_DPI,)
    own = float(declared[0]) if float(declared[0]) >= 10 else DECLARED_DPI  # (1, 1): an aspect ratio, no resolution
    if not dpi or round(own) == dpi:
        return frame
    scale = min(dpi / own, (MAX_PIXELS / max(1, frame.width * frame.height)) ** 0.5)
    return frame.resize((max(1, round(frame.width * scale)), max(1, round(frame.height * scale))))


def _bounded(frame):
    """A frame no larger than ``MAX_PIXELS`` (scaled down when it is: a photograph of a page at 12,000 px)."""
    pixels = frame.width * frame.height
    if pixels <= MAX_PIXELS:
        return frame
    scale = (MAX_PIXELS / pixels) ** 0.5
    return frame.resize((max(1, int(frame.width * scale)), max(1, int(frame.height * scale))))
