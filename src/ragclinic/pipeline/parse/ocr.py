"""Reading a page image with Tesseract (Debian's tesseract-ocr with eng, chi_sim and osd; `make install` installs
them), through pytesseract: one ``tesseract`` process per call, so a page that crashes or hangs the engine costs
that page, never the ingest (``ocr_page_seconds`` bounds it).

Per page: the orientation is detected first (Tesseract's OSD) and the page turned upright; then it is read with
automatic page segmentation (``--psm 3``: columns found, read column by column); Tesseract's blocks and
paragraphs become the page's text blocks in that order, each with the mean confidence of its words. A page whose
mean word confidence is under ``LOW_CONFIDENCE`` is flagged (the parse report's ``ocr_low_confidence``).
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass

from ragclinic.errors import ParseError

LOW_CONFIDENCE = 60.0  # mean word confidence (0-100) under which a page's OCR text is suspect


MAX_PIXELS = 40_000_000  # a page rendered for OCR has at most this many pixels (an A4 page at 400 dpi: 15.5 M)
_on_page: list = []  # the parse worker's heartbeat (isolate.py): each page read resets its parse_timeout_s


def on_page(callback) -> None:
    """Call ``callback()`` after each page read (the parse worker tells its parent it is still working)."""
    _on_page[:] = [callback]


@dataclass(frozen=True)
class OcrPage:
    """One page read by OCR: its paragraphs in reading order, the mean word confidence (0-100; None when it found no
    words: a blank page), the turn applied."""

    page: int
    paragraphs: tuple[str, ...]
    confidence: float | None
    turned: int = 0

    @property
    def low(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)

    def to_json(self) -> dict:
        return {"page": self.page, "confidence": None if self.confidence is None else round(self.confidence, 1),
                "turned": self.turned,
                "characters": sum(len(p) for p in self.paragraphs)}


def available() -> bool:
    """Whether the tesseract program is installed."""
    return shutil.which("tesseract") is not None


def read_page(image, page: int, languages: str, seconds: float) -> OcrPage:
    """``image`` (a PIL image) read by Tesseract in ``languages`` ("eng+chi_sim"); ParseError naming the page when
    the engine is missing, fails or takes longer than ``seconds``."""
    try:
        import pytesseract  # on use: the OCR binding, only for pages without text
    except ImportError as e:  # pragma: no cover - a core dependency
        raise ParseError(f"page {page} needs OCR and pytesseract is not installed ({e}); run `make install`") from e
    if not available():
        raise ParseError(f"page {page} has no text layer and Tesseract is not installed: apt-get install "
                         "tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim (`make install` does it), or set "
                         "ocr to '' to index such pages empty")
    gray = image.convert("L")
    t0 = time.monotonic()
    try:  # one budget for the page: the orientation and the reading together
        gray, turned = _upright(pytesseract, gray, seconds)
        data = pytesseract.image_to_data(gray, lang=languages, config="--psm 3",
                                         timeout=max(1.0, seconds - (time.monotonic() - t0)),
                                         output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError as e:  # a subclass of RuntimeError: first
        raise ParseError(f"OCR of page {page} failed: {e}; check that the languages {languages!r} are installed "
                         "(tesseract --list-langs)") from e
    except RuntimeError as e:  # pytesseract's time-out ("Tesseract process timeout")
        raise ParseError(f"OCR of page {page} took longer than ocr_page_seconds={seconds:g}; raise it for "
                         "large or dense scans") from e
    paragraphs, confidences = _paragraphs(data, languages)
    for beat in _on_page:
        beat()
    return OcrPage(page, tuple(paragraphs), statistics.fmean(confidences) if confidences else None, turned)


def _upright(pytesseract, image, seconds: float):
    """The page turned upright when Tesseract's orientation detection is sure of a turn (else as it is)."""
    try:
        osd = pytesseract.image_to_osd(image, config="--psm 0 -c min_characters_to_try=10", timeout=seconds,
                                       output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError:  # too little text to tell: read it as it is
        return image, 0
    turn = int(osd.get("rotate", 0) or 0)
    if turn and float(osd.get("orientation_conf", 0) or 0) >= 1.0:
        return image.rotate(-turn, expand=True, fillcolor=255), turn
    return image, 0


def _paragraphs(data: dict, languages: str) -> tuple[list[str], list[float]]:
    """Tesseract's words grouped into its paragraphs, in its reading order; the words' confidences."""
    paragraphs: dict[tuple[int, int], list[str]] = {}
    confidences: list[float] = []
    for i, word in enumerate(data["text"]):
        word = str(word).strip()
        conf = float(data["conf"][i])
        if not word or conf < 0:
            continue
        confidences.append(conf)
        paragraphs.setdefault((data["block_num"][i], data["par_num"][i]), []).append(word)
    return [t for words in paragraphs.values() if (t := _join(words))], confidences


def _join(words: list[str]) -> str:
    """Words of one paragraph: spaced, except between two CJK words (Chinese is written without spaces)."""
    text = ""
    for w in words:
        if text and not (_cjk(text[-1]) and _cjk(w[0])):
            text += " "
        text += w
    return text


def _cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\uffef"


def stored_pages(db, doc_ids) -> dict[str, list[dict]]:
    """Each document's pages read by OCR, from its stored parse report (``ocr_pages``; [] for a text document)."""
    import json  # on use: a diagnosis's read of stored reports

    ids = sorted(set(doc_ids))
    if not ids:
        return {}
    rows = db.conn.execute(f"SELECT doc_id, parse_report FROM documents WHERE doc_id IN ({','.join('?' * len(ids))})",
                           ids)
    return {d: list((json.loads(r) if r else {}).get("ocr_pages") or ()) for d, r in rows}
