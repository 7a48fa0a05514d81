"""Reading a page image with Tesseract (Debian's tesseract-ocr with eng, chi_sim and osd; `make install` installs
them), through pytesseract: one ``tesseract`` process per call, so a page that crashes or hangs the engine costs
that page, never the ingest (``ocr_page_seconds`` bounds it).

Per page: the orientation is detected first (Tesseract's OSD) and the page turned upright; then it is read with
automatic page segmentation (``--psm 3``: columns found, read column by column); Tesseract's blocks and
paragraphs become the page's text blocks in that order, each with the mean confidence of its words. A page whose
mean word confidence is under ``LOW_CONFIDENCE`` is flagged (the parse report's ``ocr_low_confidence``).
"""

from __future__ import annotations

import re
import shutil
import statistics
import threading
import time
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import Block, markdown_table, reflow
from ragclinic.ingest.parse.reading_order import in_margin, is_page_number
from ragclinic.ingest.parse.scan_columns import regions
from ragclinic.ingest.parse.scan_layout import (CROP_BORDER, blanked, fill_grid, find_grids, join_words, shifted,
                                                  skew_angle, table_crop, unrotated)

LOW_CONFIDENCE = 60.0  # mean word confidence (0-100) under which a page's OCR text is suspect
SURE_TURN, UNSURE_TURN = 1.0, 0.3  # Tesseract's orientation confidence: turn; or read both ways and compare
_SCRIPTS = {"Latin": {"eng", "deu", "fra", "spa", "ita", "por", "nld", "swe", "dan", "nor", "fin", "pol", "ces",
                      "tur", "vie", "ind"},
            "Han": {"chi_sim", "chi_tra", "chi_sim_vert", "chi_tra_vert"}, "Japanese": {"jpn", "jpn_vert"},
            "Hangul": {"kor", "kor_vert"}, "Cyrillic": {"rus", "ukr", "bul", "srp"}, "Arabic": {"ara", "fas"}}


MAX_PIXELS = 40_000_000  # a page rendered for OCR has at most this many pixels (an A4 page at 400 dpi: 15.5 M)
_on_page: list = []  # the parse worker's heartbeat (isolate.py): each page read resets its parse_timeout_s
_beat_lock = threading.Lock()

Rows = tuple[tuple[str, ...], ...]
_CAPTION = re.compile(r"(?i)^\s*(fig(ure)?\.?|photo|picture|diagram|chart|plate|screenshot|illustration|"
                      r"图|圖|插图|照片|示意图)\s*[\dA-Za-z一二三四五六七八九十]")


def on_page(callback) -> None:
    """Call ``callback()`` after each page read (the parse worker tells its parent it is still working)."""
    _on_page[:] = [callback]


@dataclass(frozen=True)
class OcrPage:
    """One page read by OCR: its paragraphs in reading order, the mean word confidence (0-100; None when it found no
    words: a blank page), the turn applied; ``tables``: each ruled table's rows and the paragraph it comes before;
    ``edges``: the paragraphs in the top or bottom margin (a running header or footer, if it repeats)."""

    page: int
    paragraphs: tuple[str, ...]
    confidence: float | None
    turned: int = 0
    tables: tuple[tuple[int, Rows], ...] = ()
    edges: tuple[int, ...] = ()

    @property
    def low(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE

    def blocks(self) -> list[Block]:
        """The page as parse blocks in reading order: paragraphs (reflowed) and tables."""
        out: list[Block] = []
        for i in range(len(self.paragraphs) + 1):
            out += [Block("table", rows=rows, page=self.page) for at, rows in self.tables if at == i]
            if i < len(self.paragraphs):
                out.append(Block("text", self.paragraphs[i], page=self.page, reflow=True))
        return out

    @property
    def text(self) -> str:
        return "\n\n".join(b.text if b.kind == "text" else markdown_table(b.rows) for b in self.blocks())

    def to_json(self) -> dict:
        return {"page": self.page, "confidence": None if self.confidence is None else round(self.confidence, 1),
                "turned": self.turned, "tables": len(self.tables),
                "characters": sum(len(p) for p in self.paragraphs) + sum(len(c) for _, rows in self.tables
                                                                         for row in rows for c in row)}


def available() -> bool:
    """Whether the tesseract program is installed."""
    return shutil.which("tesseract") is not None


def read_page(image, page: int, languages: str, seconds: float) -> OcrPage:
    """``image`` (a PIL image) read by Tesseract in ``languages`` ("eng+chi_sim"); ParseError naming the page when
    the engine is missing, fails or takes longer than ``seconds``. The page is turned upright, then deskewed, then
    read; ruled tables become tables (scan_layout.py) and page numbers in the margins are dropped."""
    try:
        import pytesseract  # on use: the OCR binding, only for pages without text
    except ImportError as e:  # pragma: no cover - a core dependency
        raise ParseError(f"page {page} needs OCR and pytesseract is not installed ({e}); run `make install`") from e
    if not available():
        raise ParseError(f"page {page} has no text layer and Tesseract is not installed: apt-get install "
                         "tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim (`make install` does it), or set "
                         "ocr to '' to index such pages empty")
    t0 = time.monotonic()

    def left() -> float:
        return max(1.0, seconds - (time.monotonic() - t0))

    try:  # one budget for the page: the orientation and the reading together
        upright, turned, doubt, script = _upright(pytesseract, image.convert("L"), seconds)
        # Read in the languages of the script Tesseract sees: "eng+chi_sim" reads short Chinese cells as English
        # letters ("含义" -> "eae"), chi_sim alone reads this set's Chinese pages with CER 0.015 against 0.035.
        langs = for_script(languages, script)
        done = _read(pytesseract, upright, page, langs, turned, left)
        if doubt is not None:  # an unsure turn: the other reading too, the more confident one kept
            other = _read(pytesseract, doubt[0], page, langs, doubt[1], left)
            done = max((done, other), key=lambda p: p.confidence or 0.0)
        if langs != languages and (done.confidence or 0.0) < LOW_CONFIDENCE:
            done = max((done, _read(pytesseract, upright, page, languages, turned, left)),
                       key=lambda p: p.confidence or 0.0)
    except pytesseract.TesseractError as e:  # a subclass of RuntimeError: first
        raise ParseError(f"OCR of page {page} failed: {e}; check that the languages {languages!r} are installed "
                         "(tesseract --list-langs)") from e
    except RuntimeError as e:  # pytesseract's time-out ("Tesseract process timeout")
        raise ParseError(f"OCR of page {page} took longer than ocr_page_seconds={seconds:g}; raise it for "
                         "large or dense scans") from e
    with _beat_lock:  # pages are read by a pool of threads; the heartbeat's pipe takes one message at a time
        for beat in _on_page:
            beat()
    return done


def _read(pytesseract, upright, page: int, languages: str, turned: int, left) -> OcrPage:
    """An upright page read: its ruled tables found on the page deskewed and read on their own, the rest read as
    it is (Tesseract levels text lines itself, and reads this set's Chinese 300 dpi pages better unresampled:
    CER 0.015 against 0.035 deskewed)."""
    from PIL import Image  # on use: Pillow, for scans only

    pixels = np.asarray(upright)
    angle = skew_angle(pixels)
    level = np.asarray(upright.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=255)) if angle else pixels
    grids = find_grids(level)
    boxes = [unrotated(g.box, angle, pixels.shape, level.shape) for g in grids]
    data = _by_columns(pytesseract, blanked(pixels, boxes) if grids else upright, languages, left)
    # A ruled table is read on its own, its rules erased, as one block of lines: the page's automatic
    # segmentation reads few words between rules (3 of 12 cells on the test table).
    tables = tuple((g, shifted(_data(pytesseract, table_crop(level, g), languages, "--psm 6", left()), g), box[1])
                   for g, box in zip(grids, boxes))
    return layout(page, data, float(pixels.shape[0]), turned, tables)


_FIELDS = ("text", "conf", "left", "top", "width", "height", "block_num", "par_num", "line_num")


def _by_columns(pytesseract, image, languages: str, left) -> dict:
    """The page read part by part when its pixels show columns (scan_columns.regions: full-width parts and each
    column on its own, in reading order), else whole with Tesseract's automatic segmentation. At 150 dpi, chi_sim
    alone lost a two-column page's gutter and read its columns line by line interleaved (CER 0.75)."""
    from PIL import ImageOps  # on use: Pillow, for scans only

    parts = regions(np.asarray(image))
    if len(parts) <= 1:
        return _data(pytesseract, image, languages, "--psm 3", left())
    merged: dict[str, list] = {k: [] for k in _FIELDS}
    for n, (x0, y0, x1, y1) in enumerate(parts):
        crop = ImageOps.expand(image.crop((x0, y0, x1, y1)), border=CROP_BORDER, fill=255)
        data = _data(pytesseract, crop, languages, "--psm 3", left())
        # in the page's coordinates; Tesseract numbers blocks from 1 in each part: the part's number keeps two
        # parts' paragraphs apart
        data = {**data, "left": [v + x0 - CROP_BORDER for v in data["left"]],
                "top": [v + y0 - CROP_BORDER for v in data["top"]],
                "block_num": [(n + 1) * 10_000 + b for b in data["block_num"]]}
        for k in _FIELDS:
            merged[k] += list(data[k])
    return merged


def _data(pytesseract, image, languages: str, config: str, seconds: float) -> dict:
    return pytesseract.image_to_data(image, lang=languages, config=config, timeout=seconds,
                                     output_type=pytesseract.Output.DICT)


def _upright(pytesseract, image, seconds: float):
    """(the page turned upright, the turn, (the other reading, its turn) when the turn is unsure, the script
    Tesseract sees or ""). Sure: orientation confidence ``SURE_TURN`` or more; between ``UNSURE_TURN`` and that
    both readings are made (a 150 dpi Chinese page turned 90° gave 0.81, and was read turned right)."""
    try:
        osd = pytesseract.image_to_osd(image, config="--psm 0 -c min_characters_to_try=10", timeout=seconds,
                                       output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError:  # too little text to tell: read it as it is
        return image, 0, None, ""
    turn, conf = int(osd.get("rotate", 0) or 0), float(osd.get("orientation_conf", 0) or 0)
    script = str(osd.get("script", "") or "")
    if not turn or conf < UNSURE_TURN:
        return image, 0, None, script
    turned = image.rotate(-turn, expand=True, fillcolor=255)
    return turned, turn, (None if conf >= SURE_TURN else (image, 0)), script


def for_script(languages: str, script: str) -> str:
    """The languages of ``languages`` ("eng+chi_sim") written in ``script`` (Tesseract's OSD: "Latin", "Han"), or
    all of them when none is, or the script is not known."""
    wanted = _SCRIPTS.get(script)
    if wanted is None:
        return languages
    chosen = [lang for lang in languages.split("+") if lang in wanted or
              (script == "Latin" and not any(lang in v for v in _SCRIPTS.values()))]
    return "+".join(chosen) or languages


@dataclass
class _Par:
    words: list[str]
    box: list[float]  # x0, top, x1, bottom


def _words(data: dict) -> tuple[list[tuple[tuple[int, int, int], float, float, float, float, str]], list[float]]:
    """Tesseract's words in its reading order: ((block, paragraph, line), x0, top, x1, bottom, text); their
    confidences."""
    words, confidences = [], []
    for i, word in enumerate(data["text"]):
        word = str(word).strip()
        conf = float(data["conf"][i])
        if not word or conf < 0:
            continue
        confidences.append(conf)
        x0, top = float(data["left"][i]), float(data["top"][i])
        words.append(((data["block_num"][i], data["par_num"][i], data["line_num"][i]), x0, top,
                      x0 + float(data["width"][i]), top + float(data["height"][i]), word))
    return words, confidences


def layout(page: int, data: dict, height: float, turned: int = 0, tables: tuple = ()) -> OcrPage:
    """Tesseract's words (``image_to_data``) as the page's paragraphs in its reading order, with ``tables`` —
    (grid, the words read in it) for each ruled table — put in before the first paragraph below their top: as
    tables when their structure is clear, else as their lines of text. Page numbers in the margins are dropped,
    other paragraphs in the margins marked (a running header or footer is dropped when it repeats on other pages:
    ``without_running``)."""
    words, confidences = _words(data)
    paragraphs: dict[tuple[int, int], _Par] = {}
    for key, x0, top, x1, bottom, text in words:
        par = paragraphs.setdefault(key[:2], _Par([], [x0, top, x1, bottom]))
        par.words.append(text)
        par.box[:] = [min(par.box[0], x0), min(par.box[1], top), max(par.box[2], x1), max(par.box[3], bottom)]
    inserts: list[tuple[float, Rows | str]] = []  # (top, a table's rows or a line of an unclear one)
    for grid, found, top in tables:  # ``top``: the table's top on the page as read (not deskewed)
        cell_words, cell_conf = _words(found)
        confidences += cell_conf
        rows = fill_grid(grid, [((w[1] + w[3]) / 2, (w[2] + w[4]) / 2, w[5]) for w in cell_words])
        if rows is not None:
            inserts.append((top, rows))
            continue
        lines: dict[tuple[int, int, int], list] = {}
        for w in cell_words:
            lines.setdefault(w[0], []).append(w)
        inserts += [(top + min(w[2] for w in ws) - grid.box[1], join_words([w[5] for w in ws])) for ws in lines.values()]
    parts: list[str] = []
    placed: list[tuple[int, Rows]] = []
    edges: list[int] = []
    pending = sorted(inserts, key=lambda t: t[0])

    def flush(before: float) -> None:
        while pending and pending[0][0] <= before:
            _, item = pending.pop(0)
            if isinstance(item, str):
                parts.append(item)
            else:
                placed.append((len(parts), item))

    for par in paragraphs.values():
        flush(par.box[1])
        text = join_words(par.words)
        if not text or is_page_number(text, par.box[1], par.box[3], height):
            continue
        if in_margin(par.box[1], par.box[3], height):
            edges.append(len(parts))
        parts.append(text)
    flush(float("inf"))
    return OcrPage(page, tuple(parts), statistics.fmean(confidences) if confidences else None, turned,
                   tables=tuple(placed), edges=tuple(edges))


def without_running(pages: list[OcrPage]) -> list[OcrPage]:
    """The pages without their running headers and footers: a paragraph in the top or bottom margin whose text
    (digits aside) is in the margin of at least two pages and half of them, as a scanned book's or manual's is."""
    def norm(text: str) -> str:
        return re.sub(r"\d+", "#", re.sub(r"\s+", "", text.lower()))

    seen = Counter(norm(p.paragraphs[i]) for p in pages for i in set(p.edges))
    repeated = {t for t, n in seen.items() if n >= 2 and n * 2 >= len(pages)}
    if not repeated:
        return pages
    out = []
    for p in pages:
        drop = {i for i in p.edges if norm(p.paragraphs[i]) in repeated}
        keep = [i for i in range(len(p.paragraphs)) if i not in drop]
        index = {old: new for new, old in enumerate(keep)}
        tables = tuple((sum(1 for i in keep if i < at), rows) for at, rows in p.tables)
        out.append(replace(p, paragraphs=tuple(p.paragraphs[i] for i in keep), tables=tables,
                           edges=tuple(index[i] for i in p.edges if i in index)))
    return out


class OcrPool:
    """Pages read by a bounded pool of threads, each page one tesseract process: at most ``workers`` pages are read
    at once and as many more wait, rendered, in memory (a 300 dpi A4 page is 8.7 MB). ``submit`` blocks while the
    pool is full; ``results`` waits for every page. The first page that fails raises its ParseError there, and the
    pages not started are dropped (``with OcrPool(...)``: on leaving, nothing still runs)."""

    def __init__(self, languages: str, seconds: float, workers: int = 1) -> None:
        self.languages, self.seconds, self.workers = languages, seconds, max(1, workers)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ocr") if self.workers > 1 else None
        self._pending: deque[tuple[object, Future]] = deque()
        self._done: dict = {}

    def submit(self, image, page: int, key=None) -> None:
        """Read ``image`` as page ``page``; its result is ``results()[key]`` (``key`` defaults to ``page``)."""
        key = page if key is None else key
        if self._pool is None:
            self._done[key] = read_page(image, page, self.languages, self.seconds)
            return
        while len(self._pending) >= 2 * self.workers:
            self._collect()
        self._pending.append((key, self._pool.submit(read_page, image, page, self.languages, self.seconds)))

    def _collect(self) -> None:
        key, future = self._pending.popleft()
        self._done[key] = future.result()

    def results(self) -> dict:
        """Every page submitted, read, by its key."""
        while self._pending:
            self._collect()
        return dict(self._done)

    def __enter__(self) -> "OcrPool":
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def is_caption(text: str) -> bool:
    """Text that reads as a figure's caption: "Figure 3: …", "Fig. 2", "图 3 …"."""
    return bool(_CAPTION.match(text))


def figure_block(caption: str, text: str, page: int) -> Block | None:
    """A picture's block: its caption (one line) and the text read in it, together; None when both are empty."""
    caption = " ".join(reflow(caption).split()) if caption else ""
    if caption and text:
        return Block("text", caption + "\n" + text, page=page)
    if caption or text:
        return Block("text", caption or text, page=page, reflow=True)
    return None


def stored_pages(db, doc_ids) -> dict[str, list[dict]]:
    """Each document's pages read by OCR, from its stored parse report (``ocr_pages``; [] for a text document)."""
    import json  # on use: a diagnosis's read of stored reports

    ids = sorted(set(doc_ids))
    if not ids:
        return {}
    rows = db.conn.execute(f"SELECT doc_id, parse_report FROM documents WHERE doc_id IN ({','.join('?' * len(ids))})",
                           ids)
    return {d: list((json.loads(r) if r else {}).get("ocr_pages") or ()) for d, r in rows}
