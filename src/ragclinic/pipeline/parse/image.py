"""Pictures — PNG, JPEG, TIFF (each frame a page) — read by OCR (ocr.py): scans and photographs of documents
become text like any other, page by page, with the engine's confidence per page in the parse report."""

from __future__ import annotations

import io
from collections.abc import Iterator

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.pipeline.parse.base import Block, DocInfo, assemble, make_parsed
from ragclinic.pipeline.parse.ocr import LOW_CONFIDENCE, read_page
from ragclinic.types import Parsed, RecordError, SourceFile


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
            frames = [f.copy() for f in ImageSequence.Iterator(img)]
        except (UnidentifiedImageError, OSError, ValueError) as e:
            raise ParseError(f"not a readable picture: {e}") from e
        if len(frames) > settings.ocr_max_pages:
            raise ParseError(f"the picture has {len(frames)} pages, more than ocr_max_pages={settings.ocr_max_pages}; "
                             "split it, or raise RAGCLINIC_OCR_MAX_PAGES")
        pages = [read_page(f, n, settings.ocr, settings.ocr_page_seconds) for n, f in enumerate(frames, start=1)]
        blocks = [Block("text", t, page=p.page, reflow=True) for p in pages for t in p.paragraphs]
        warnings = tuple(f"ocr_low_confidence: page {p.page} read with mean confidence {p.confidence:.0f}"
                         for p in pages if p.confidence < LOW_CONFIDENCE)
        info = DocInfo(self.name, raw_text="\n\n".join(p.text for p in pages),
                       metadata={"pages": len(pages), "ocr": [p.to_json() for p in pages]}, warnings=warnings)
        yield make_parsed(source, settings, assemble(blocks, page_count=len(pages)), info)
