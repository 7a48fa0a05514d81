"""The OCR half of the PDF parser (pdf.py): scanned pages, and the pictures on pages that have text.

- A page with no visible text whose pictures cover a fifth of it (a scan) is rendered at its picture's own
  resolution (100-400 dpi) and read whole by OCR (ocr.py: upright, deskewed, ruled tables found); at ``ocr_dpi``
  when that is set (``diagnose --apply`` tries a higher one for a page OCR misread).
- On a page with text, each picture large enough to hold text (a screenshot, a diagram with labels, a pasted scan)
  is rendered alone and read; its words are kept when Tesseract reads them confidently (a photograph gives a few
  unsure "words": nothing is kept). A picture's caption ("Figure 3: …", "图 3 …") travels with it: the caption and
  the picture's text are one block, so no chunk boundary falls between them.
- Pages and pictures go to a bounded pool (ocr.OcrPool, ``ocr_workers`` at once); at most ``ocr_max_pages`` of
  them per document. Running headers and footers repeated on the scanned pages are dropped (ocr.without_running).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragclinic.config import Settings
from ragclinic.ingest.parse.ocr import (LOW_CONFIDENCE, MAX_PIXELS, OcrPage, OcrPool, Rows, available,
                                          figure_block, is_caption, without_running)
from ragclinic.ingest.parse.reading_order import Box
from ragclinic.ingest.parse.pdfium import page_picture

SCAN_SHARE = 0.2  # pictures covering this share of a page with no usable text make it a scan
PICTURE_SHARE = 0.03  # a picture on a text page is read when it covers this share of the page...
MIN_PICTURE_PIXELS = 60_000  # ...and has this many pixels of its own (icons, logos and rules are not read)
MIN_PICTURE_WORDS = 2  # a picture's text is kept with at least this many words read at LOW_CONFIDENCE or better
CAPTION_GAP = 0.06  # a caption starts within this share of the page height below (or ends above) its picture
DPI = 300  # a scanned page whose picture does not give its resolution is rendered at this one for OCR
DPI_RANGE = (100, 400)  # a scan is rendered at its own resolution within these bounds (time and memory)



@dataclass(frozen=True)
class OcrRef:
    """Where a page's OCR text goes: the whole page (``picture`` 0) or one picture on it (1, 2, …)."""

    page: int
    picture: int = 0


class Scans:
    """The OCR reads of one PDF: submitted while its pages are walked, collected by ``finish``."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.languages = settings.ocr if settings is not None else ""
        self.seconds = settings.ocr_page_seconds if settings is not None else 60.0
        self.limit = settings.ocr_max_pages if settings is not None else 0
        self.dpi = settings.ocr_dpi if settings is not None else 0  # 0: each picture's own resolution
        self.pool = OcrPool(self.languages, self.seconds, settings.ocr_workers if settings is not None else 1)
        self.submitted: list[OcrRef] = []
        self.pages: list[OcrPage] = []  # the scanned pages read, in order
        self.pictures: dict[OcrRef, OcrPage] = {}
        self.skipped: list[int] = []  # scanned pages not read: over the limit
        self.unread_pictures: list[int] = []  # pages whose pictures were not read: over the limit
        self.missing: list[int] = []

    def __enter__(self) -> "Scans":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.__exit__(*exc)

    def _room(self, number: int) -> bool:
        if not self.languages:
            return False
        if not available():
            self.missing.append(number)
            return False
        if len(self.submitted) >= self.limit:
            self.skipped.append(number)
            return False
        return True

    def scan(self, page, number: int) -> OcrRef | None:
        """The scanned page submitted for OCR (rendered at its picture's resolution); None when OCR is off, spent,
        or Tesseract is not installed (the page stays empty, and the report says why)."""
        if not self._room(number):
            return None
        ref = OcrRef(number)
        self.pool.submit(page_picture(page, _scan_dpi(page, self.dpi)), number, ref)
        self.submitted.append(ref)
        return ref

    def figures(self, page, boxes: list[Box], make) -> list[Box]:
        """``boxes`` with the page's readable pictures submitted: a picture's caption box gets its reference
        (``make(caption_item, ref)``), a picture without a caption a box of its own (``make(None, ref)``)."""
        if not boxes or not self.languages or not available():
            return boxes
        area = float(page.width * page.height) or 1.0
        out = list(boxes)
        for n, pic in enumerate(_readable(page.images, area), start=1):
            if len(self.submitted) >= self.limit:
                self.unread_pictures.append(page.page_number)
                break
            ref = OcrRef(page.page_number, n)
            box = (max(0.0, float(pic["x0"])), max(0.0, float(pic["top"])),
                   min(float(page.width), float(pic["x1"])), min(float(page.height), float(pic["bottom"])))
            if box[2] - box[0] < 2 or box[3] - box[1] < 2:
                continue
            image = page_picture(page.crop(box, strict=False), _picture_dpi(pic, self.dpi))
            self.pool.submit(image, page.page_number, ref)
            self.submitted.append(ref)
            at = _caption_of(box, out, float(page.height))
            if at is not None:
                b = out[at]
                out[at] = Box(b.x0, b.top, b.x1, b.bottom, make(b.payload, ref), one_line=b.one_line)
            else:
                out.append(Box(*box, make(None, ref)))
        return out

    def finish(self) -> None:
        """Wait for every read; the running headers and footers of the scanned pages dropped."""
        done = self.pool.results()
        pages = [done[r] for r in self.submitted if not r.picture]
        self.pages = without_running(pages)
        self.pictures = {r: done[r] for r in self.submitted if r.picture}

    def page(self, ref: OcrRef) -> OcrPage:
        return next(p for p in self.pages if p.page == ref.page)

    def _kept(self, ref: OcrRef) -> OcrPage | None:
        """A picture's read when it holds text Tesseract read confidently, None for a photograph."""
        p = self.pictures.get(ref)
        if p is None or p.confidence is None or p.confidence < LOW_CONFIDENCE:
            return None
        if sum(len(w) >= 2 for par in p.paragraphs for w in par.split()) < MIN_PICTURE_WORDS and not p.tables:
            return None
        return p

    def picture_text(self, ref: OcrRef) -> str:
        """A picture's text (its paragraphs as lines: one block with its caption), "" when it holds none Tesseract
        read confidently (a photograph)."""
        p = self._kept(ref)
        return "\n".join(p.paragraphs) if p is not None else ""

    def picture_tables(self, ref: OcrRef) -> tuple[Rows, ...]:
        """The ruled tables found in a picture (a screenshot of a table): tables like any other, after its text."""
        p = self._kept(ref)
        return tuple(rows for _, rows in p.tables) if p is not None else ()

    def report(self) -> list[dict]:
        """The parse report's ``ocr_pages``: each scanned page, and each picture whose text was kept."""
        kept = [{**p.to_json(), "page": r.page, "picture": r.picture} for r, p in self.pictures.items()
                if self._kept(r) is not None]
        return sorted([p.to_json() for p in self.pages] + kept, key=lambda d: (d["page"], d.get("picture", 0)))

    def warnings(self) -> tuple[str, ...]:
        low = [f"ocr_low_confidence: page {p.page} read with mean confidence {p.confidence:.0f}"
               for p in self.pages if p.low]
        more = [f"pages {self.skipped[0]}-{self.skipped[-1]} have no text layer and were not read: over "
                f"ocr_max_pages={self.limit}"] if self.skipped else []
        more += [f"the pictures on page(s) {', '.join(map(str, self.unread_pictures))} were not read by OCR: over "
                 f"ocr_max_pages={self.limit}"] if self.unread_pictures else []
        none = [f"page(s) {', '.join(map(str, self.missing))} are scans and Tesseract is not installed: apt-get "
                "install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim (`make install`), then ingest again "
                "with --reparse"] if self.missing else []
        return tuple(low + more + none)


def scanned(page, has_text: bool) -> bool:
    """A page with no visible text (a page number aside) whose pictures cover a fifth of it or more: a scan. A page
    with any text of its own keeps it, and its pictures are read one by one (``Scans.figures``)."""
    if has_text:
        return False
    area = float(page.width * page.height) or 1.0
    return sum(_area(i) for i in page.images) / area >= SCAN_SHARE


def _area(pic) -> float:
    return max(0.0, float(pic["x1"] - pic["x0"])) * max(0.0, float(pic["bottom"] - pic["top"]))


def _readable(images, area: float) -> list:
    """The pictures big enough to hold text, top to bottom."""
    out = []
    for pic in images:
        size = pic.get("srcsize") or (0, 0)
        if _area(pic) / area >= PICTURE_SHARE and float(size[0]) * float(size[1]) >= MIN_PICTURE_PIXELS:
            out.append(pic)
    return sorted(out, key=lambda p: (float(p["top"]), float(p["x0"])))


def _caption_of(box: tuple[float, float, float, float], boxes: list[Box], height: float) -> int | None:
    """The index of the text box that captions the picture at ``box``: a caption-like box just below it (or just
    above), overlapping it horizontally."""
    best, best_gap = None, CAPTION_GAP * height
    for i, b in enumerate(boxes):
        text = getattr(b.payload, "text", "")
        if not text or getattr(b.payload, "block", None) is not None or not is_caption(text):
            continue
        if min(b.x1, box[2]) - max(b.x0, box[0]) <= 0:
            continue
        gap = b.top - box[3] if b.top >= box[3] - 2 else box[1] - b.bottom if b.bottom <= box[1] + 2 else None
        if gap is not None and gap <= best_gap:
            best, best_gap = i, gap
    return best


def _native_dpi(pic) -> float | None:
    """A picture's own resolution on the page (its pixels over its width in inches), None when it does not say."""
    width_pt = float(pic["x1"] - pic["x0"])
    size = pic.get("srcsize") or ()
    return float(size[0]) / (width_pt / 72.0) if width_pt > 0 and len(size) == 2 and size[0] else None


def _render_dpi(native: float | None, area_pt: float, fixed: int = 0) -> int:
    """``fixed`` (the ``ocr_dpi`` setting) when set, else ``native`` within ``DPI_RANGE`` (``DPI`` when unknown);
    coarser when an area this large would pass ``MAX_PIXELS`` (a huge page is rendered coarser, not out of memory)."""
    lo, hi = DPI_RANGE
    dpi = fixed or (min(hi, max(lo, native)) if native else DPI)
    inches = area_pt / (72.0 * 72.0) or 1.0
    return round(min(dpi, (MAX_PIXELS / inches) ** 0.5))


def _picture_dpi(pic, fixed: int = 0) -> int:
    """A picture's own resolution on the page, within ``DPI_RANGE`` (``fixed`` when set)."""
    return _render_dpi(_native_dpi(pic), _area(pic), fixed)


def _scan_dpi(page, fixed: int = 0) -> int:
    """The resolution to render a scanned page at: its picture's own (upsampling a 150 dpi scan to 300 dpi makes
    its noise into letters: CER 0.14 against 0.017 at its own resolution, bench/RESULTS.md issue 39), within
    ``DPI_RANGE``; ``DPI`` when the picture does not say; ``fixed`` (``ocr_dpi``) when set."""
    native = [n for i in page.images if (n := _native_dpi(i))]
    return _render_dpi(max(native) if native else None, float(page.width * page.height), fixed)
