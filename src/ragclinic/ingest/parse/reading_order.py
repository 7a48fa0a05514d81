"""Reading order of the boxes on one page: column by column, full-width boxes in place.

pdfminer's own box order (``boxes_flow``) interleaves columns whenever paragraph gaps line up
across the gutter, so the order is rebuilt here from geometry:
1. Columns are found from the x-coverage of the narrow boxes (each box weighted by its height):
   a gutter is a run of x positions that almost no narrow box covers. Weighting by height lets a
   short centred title cross the gutter without hiding it.
2. A box overlapping two or more columns (title, full-width table, wide paragraph) is
   "spanning": it closes the current band.
3. Within a band, columns are read left to right, each top to bottom.
4. A one-line box (heading, caption) that ends a band below everything in the other columns and
   sits right above a spanning box introduces that box ("Results" above a full-width table), so
   it is read after all the columns, not after its own column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

NARROW_SHARE = 0.6  # boxes wider than this share of the text width cannot be inside one column
GUTTER_COVERAGE = 0.1  # a gutter is covered by at most this share of the peak coverage...
MIN_GUTTER = 6.0  # ...over at least this many points
MARGIN_BAND = 0.08  # share of the page height searched for page-number headers/footers
_PAGE_NUMBER = re.compile(r"(?i)^\s*(page\s*)?\d{1,4}(\s*(/|of)\s*\d{1,4})?\s*$|^\s*[-–]\s*\d{1,4}\s*[-–]\s*$"
                          r"|^\s*第\s*\d{1,4}\s*页(\s*[/，,]?\s*共\s*\d{1,4}\s*页)?\s*$")
SPAN_OVERLAP = 5.0  # a box spans two columns when it overlaps each by more than this (points)


@dataclass(frozen=True)
class Box:
    """A rectangle in top-down page coordinates (``top`` < ``bottom``) with what it holds."""

    x0: float
    top: float
    x1: float
    bottom: float
    payload: Any = None
    one_line: bool = False


def find_columns(boxes: Sequence[Box]) -> list[tuple[float, float]]:
    """The x-intervals of the page's columns; a single interval when there is one column."""
    if not boxes:
        return []
    left, right = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    narrow = [b for b in boxes if b.x1 - b.x0 <= NARROW_SHARE * (right - left)]
    if len(narrow) < 2:
        return [(left, right)]
    lo, hi = int(min(b.x0 for b in narrow)), int(max(b.x1 for b in narrow)) + 1
    coverage = np.zeros(hi - lo)
    for b in narrow:
        coverage[int(b.x0) - lo:int(b.x1) - lo + 1] += b.bottom - b.top
    low = coverage <= GUTTER_COVERAGE * coverage.max()
    columns, start, x = [], lo, lo
    while x < hi:
        if low[x - lo]:
            run_end = x
            while run_end < hi and low[run_end - lo]:
                run_end += 1
            if run_end - x >= MIN_GUTTER and x > lo and run_end < hi:
                columns.append((float(start), float(x)))
                start = run_end
            x = run_end
        else:
            x += 1
    columns.append((float(start), float(hi)))
    return _valid_columns(columns, narrow) or [(left, right)]


def _valid_columns(columns: list[tuple[float, float]], narrow: Sequence[Box]) -> list[tuple[float, float]]:
    """Keep the split only if every column carries real text (not one stray short line)."""
    if len(columns) < 2:
        return []
    total = sum(b.bottom - b.top for b in narrow)
    for c0, c1 in columns:
        inside = [b for b in narrow if c0 <= (b.x0 + b.x1) / 2 <= c1]
        if sum(b.bottom - b.top for b in inside) < 0.05 * total:
            return []
    return columns


def _overlap(b: Box, col: tuple[float, float]) -> float:
    return min(b.x1, col[1]) - max(b.x0, col[0])


def reading_order(boxes: Sequence[Box]) -> list[Box]:
    """Boxes in reading order (see the module docstring)."""
    columns = find_columns(boxes)
    by_top = sorted(boxes, key=lambda b: (b.top, b.x0))
    if len(columns) < 2:
        return by_top
    out: list[Box] = []
    band: list[tuple[int, Box]] = []
    for b in by_top:
        overlaps = [_overlap(b, c) for c in columns]
        if sum(o > SPAN_OVERLAP for o in overlaps) >= 2:
            out += _read_band(band, introduces_spanning=True)
            band = []
            out.append(b)
        else:
            band.append((int(np.argmax(overlaps)), b))
    return out + _read_band(band, introduces_spanning=False)


def _read_band(band: list[tuple[int, Box]], *, introduces_spanning: bool) -> list[Box]:
    tail: list[Box] = []
    if introduces_spanning and band:
        col, last = band[-1]  # the band is in top order
        others = [b.bottom for c, b in band if c != col]
        if last.one_line and others and last.top >= max(others):
            band, tail = band[:-1], [last]
    return [b for _, b in sorted(band, key=lambda cb: (cb[0], cb[1].top, cb[1].x0))] + tail


def in_margin(top: float, bottom: float, height: float) -> bool:
    """A box (top-down coordinates) wholly inside the page's top or bottom ``MARGIN_BAND``."""
    return bottom <= MARGIN_BAND * height or top >= (1 - MARGIN_BAND) * height


def is_page_number(text: str, top: float, bottom: float, height: float) -> bool:
    """A page number ("3", "Page 3", "3 / 10", "- 3 -", "第 3 页") in the top or bottom margin."""
    return in_margin(top, bottom, height) and bool(_PAGE_NUMBER.match(text))
