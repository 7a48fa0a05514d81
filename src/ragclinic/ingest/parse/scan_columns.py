"""The columns of a scanned page, from its pixels (numpy only), so that a page in two or three columns is read
column by column rather than left to Tesseract's own segmentation, which at 150 dpi can lose a narrow gutter and
read the lines of both columns as one (a Chinese two-column scan: CER 0.75, bench/RESULTS.md issue 39).

``regions`` cuts the page as a recursive X-Y cut does: find the page's main gutter — a vertical band of white at
least ``MIN_GUTTER`` of the page wide, with ink on both sides of it in ``MIN_TWO_SIDED`` of the page's height, no
row's ink crossing it, and each side at least ``MIN_COLUMN`` of the page wide — then cut the page into what is
above it, its left side, its right side and what is below, and look again in each part. What is found is a list
of boxes in reading order: full-width parts top to bottom, a column section's columns left to right.

The ink is read on a coarse map (cells of about 1/400 of the page's shorter side; a cell is ink when a sixth of
it is dark), so a scanner's specks and a letter's strokes do not count as gaps or ink on their own; each row of
the map sees the ink ``LINE_REACH`` above and below it, so that a row through a text line sees its letters whole.
A narrow list of codes beside their meanings is not two columns (its left side is under ``MIN_COLUMN``); a gutter
crossed by full-width lines is none; a page number centred under the columns ends them, as a line across does. A gutter slanted by a skew more than a gutter's width over a column's height
(over about 1° for an A4 column) is not found, and the page is read whole, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragclinic.ingest.parse.scan_layout import DARK

CELL_SHARE = 1 / 400  # a cell of the ink map is this share of the page's shorter side (3 px at 150 dpi)
CELL_INK = 1 / 6  # share of a cell's pixels that are dark for it to be ink (a speck is one pixel)
MIN_GUTTER = 0.02  # of the page's width: 4 mm on A4, twice a large title's word space, half a narrow gutter
MIN_COLUMN = 0.2  # of the page's width: each side of a gutter at least (a column of text, not a list of codes)
MIN_TWO_SIDED = 0.05  # of the page's height: rows with ink on both sides of a gutter (three lines of 11 pt text)
LINE_REACH = 0.006  # of the page's height: the ink a row sees above and below it (half an 11 pt line)
SPECK = 1  # cells of ink in a gutter a row may have without crossing it (dust; a centred page number has more)
MAX_DEPTH = 6  # cuts within cuts at most (three sections of three columns need four)

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (pixels, x1 and y1 excluded)


@dataclass
class _Gutter:
    a: int  # the white band's first cell and the cell after it
    b: int
    start: int  # the first row and the row after the last
    end: int = -1
    two_sided: int = 0


def regions(gray: np.ndarray) -> list[Box]:
    """The page's parts to read one by one, in reading order: one box when it is one column, none when it is
    blank. ``gray``: the page as an array of 0-255 values."""
    h, w = gray.shape[:2]
    size = max(2, round(min(h, w) * CELL_SHARE))
    rows, cols = h // size, w // size
    if not rows or not cols:
        return []
    dark = gray[:rows * size, :cols * size] < DARK
    raw = _despeckled(dark.reshape(rows, size, cols, size).sum(axis=(1, 3)) >= max(2, size * size * CELL_INK))
    reach = max(1, round(h * LINE_REACH / size))
    seen = _reach(raw, reach)
    out: list[Box] = []
    _split(seen, raw, (0, 0, cols, rows), reach, 0, out)

    def px(v: int, last: int, full: int) -> int:
        return full if v >= last else v * size

    return [(px(x0, cols, w) if x0 else 0, px(y0, rows, h) if y0 else 0, px(x1, cols, w), px(y1, rows, h))
            for x0, y0, x1, y1 in out]


def _despeckled(cells: np.ndarray) -> np.ndarray:
    """The ink cells that touch another: a scanner's lone specks (about 20 cells of a 150 dpi page) dropped."""
    padded = np.pad(cells, 1).astype(np.int8)
    h, w = cells.shape
    around = sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) - cells
    return cells & (around > 0)


def _reach(raw: np.ndarray, reach: int) -> np.ndarray:
    """Each row's ink with the ink up to ``reach`` rows above and below it."""
    n = raw.shape[0]
    c = np.vstack([np.zeros((1, raw.shape[1]), np.int32), np.cumsum(raw, axis=0, dtype=np.int32)])
    idx = np.arange(n)
    return (c[np.minimum(n, idx + reach + 1)] - c[np.maximum(0, idx - reach)]) > 0


def _split(seen: np.ndarray, raw: np.ndarray, box: Box, reach: int, depth: int, out: list[Box]) -> None:
    x0, y0, x1, y1 = box
    if not raw[y0:y1, x0:x1].any():
        return
    gutter = _gutter(seen, box) if depth < MAX_DEPTH else None
    if gutter is None:
        out.append(box)
        return
    top, bottom = _cut(raw, box, y0 + gutter.start, reach), _cut(raw, box, y0 + gutter.end, reach)
    middle = x0 + (gutter.a + gutter.b) // 2
    for part in ((x0, y0, x1, top), (x0, top, middle, bottom), (middle, top, x1, bottom), (x0, bottom, x1, y1)):
        if part[2] > part[0] and part[3] > part[1]:
            _split(seen, raw, part, reach, depth + 1, out)


def _cut(raw: np.ndarray, box: Box, y: int, reach: int) -> int:
    """The row near ``y`` (within ``reach``) with the least ink across the box: a cut there splits no line."""
    x0, y0, x1, y1 = box
    if y <= y0 or y >= y1:
        return min(max(y, y0), y1)
    lo, hi = max(y0 + 1, y - reach), min(y1 - 1, y + reach)
    ink = raw[lo:hi + 1, x0:x1].sum(axis=1)
    return lo + int(np.argmin(ink)) if ink.size else y


def _gutter(seen: np.ndarray, box: Box) -> _Gutter | None:
    """The box's main gutter (box-relative cells), the one with the most rows of ink on both sides; None."""
    x0, y0, x1, y1 = box
    sub = seen[y0:y1, x0:x1]
    width, height = seen.shape[1], seen.shape[0]
    narrow = max(2, round(MIN_GUTTER * width))
    active: list[_Gutter] = []
    done: list[_Gutter] = []
    for y in range(sub.shape[0]):
        xs = np.flatnonzero(sub[y])
        if not xs.size:
            continue
        gaps = [(int(xs[k]) + 1, int(xs[k + 1])) for k in np.flatnonzero(np.diff(xs) > narrow)]
        kept = []
        for g in active:
            inside = int(np.searchsorted(xs, g.b) - np.searchsorted(xs, g.a))
            best = max(gaps, key=lambda p: min(p[1], g.b) - max(p[0], g.a), default=None)
            overlap = min(best[1], g.b) - max(best[0], g.a) if best else 0
            # a line of a ragged column reaching into the band narrows it while a gutter's width is left clear
            if inside > SPECK and overlap < narrow:
                g.end = y
                done.append(g)
                continue
            kept.append(g)
            if (not inside or inside > SPECK) and overlap >= narrow // 2:
                g.a, g.b = max(best[0], g.a), min(best[1], g.b)
                g.two_sided += 1
        for a, b in gaps:
            if not any(min(b, g.b) > max(a, g.a) for g in kept):
                kept.append(_Gutter(a, b, y, two_sided=1))
        active = kept
    for g in active:
        g.end = sub.shape[0]
        done.append(g)
    good = [g for g in done if _columns(sub, g, width, height)]
    best = max(good, key=lambda g: g.two_sided, default=None)
    if best is not None:
        best.start = _reach_up(sub, best)
    return best


def _columns(sub: np.ndarray, g: _Gutter, width: int, height: int) -> bool:
    """Whether a gutter divides columns: rows of ink on both sides, each side wide enough."""
    if g.two_sided < max(3, MIN_TWO_SIDED * height):
        return False
    ink = np.flatnonzero(sub[g.start:g.end].any(axis=0))
    return bool(ink.size) and g.a - ink[0] >= MIN_COLUMN * width and ink[-1] + 1 - g.b >= MIN_COLUMN * width


def _reach_up(sub: np.ndarray, g: _Gutter) -> int:
    """The gutter's first row moved up over the rows above that do not cross it (a column's line above where the
    other column begins, a title over one column): they are part of the column section."""
    y = g.start
    while y > 0 and sub[y - 1, g.a:g.b].sum() <= SPECK:
        y -= 1
    return y
