"""The layout of a scanned page, from its pixels (numpy only): the skew to undo before reading it, and the ruled
tables on it, so that a table in a scan becomes a table like any other (rows and cells, an SQL table) instead of
a run of words.

- ``skew_angle``: the angle (degrees) whose rotation makes the text lines horizontal — the one that maximises the
  variance of the row sums of the dark pixels (the projection-profile method), searched within ±``MAX_SKEW``.
  A scanner's skew is small (under 2°); a page fed in turned 90° is Tesseract's orientation detection's job.
- ``find_grids``: ruled tables — three or more horizontal rules of one width crossed by three or more vertical
  rules over their whole height (two rows and two columns at least). A table without its vertical rules is not
  "clear", and its words stay text.
- ``fill_grid``: the words Tesseract read, put into the grid's cells by where their centres fall.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_SKEW = 3.0  # degrees searched either way
SKEW_STEP = 0.1  # degrees: 0.1° drifts 3.5 px over an A4 line at 300 dpi, within a rule's tolerance below
MIN_SKEW = 0.15  # a smaller skew is left as it is (rotating resamples every pixel)
DARK = 160  # a pixel darker than this (0-255) is ink: 5 standard deviations of a scanner's noise below paper
RULE_FILL = 0.85  # a rule's run of ink covers this share of its length (broken by noise, scan and resampling)
MIN_RULE_SHARE = 0.15  # a horizontal rule is at least this share of the page's width
RULE_JOIN = 4  # rows (or columns) of ink closer than this many pixels are one rule
CROP_BORDER = 20  # pixels of white around a table read on its own (Tesseract reads text at an edge poorly)
RULE_ERASE = 4  # pixels either side of a table's rule painted white before its cells are read
BLANK_PAD = 6  # pixels around a table painted white on the page read without it


@dataclass(frozen=True)
class Grid:
    """A ruled table: the y of its horizontal rules and the x of its vertical rules, top-down pixels."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]

    @property
    def box(self) -> tuple[int, int, int, int]:
        return self.cols[0], self.rows[0], self.cols[-1], self.rows[-1]

    def holds(self, x: float, y: float) -> bool:
        x0, y0, x1, y1 = self.box
        return x0 <= x <= x1 and y0 <= y <= y1


def ink(gray: np.ndarray) -> np.ndarray:
    return gray < DARK


def skew_angle(gray: np.ndarray) -> float:
    """The rotation (degrees, counter-clockwise as PIL's ``rotate``) that levels the page's lines; 0.0 when none
    does better than the page as it is."""
    from PIL import Image  # on use: Pillow, for scans only

    small = Image.fromarray(gray)
    scale = 800 / max(small.size)
    if scale < 1:
        small = small.resize((max(1, int(small.width * scale)), max(1, int(small.height * scale))))
    dark = Image.fromarray(np.where(ink(np.asarray(small)), 255, 0).astype(np.uint8))

    def score(angle: float) -> float:
        turned = np.asarray(dark.rotate(angle, resample=Image.BILINEAR, fillcolor=0), dtype=np.float32)
        return float(np.var(turned.sum(axis=1)))

    coarse = max(np.arange(-MAX_SKEW, MAX_SKEW + 0.25, 0.5), key=lambda a: (score(float(a)), -abs(a)))
    fine = np.arange(coarse - 0.5, coarse + 0.5 + SKEW_STEP / 2, SKEW_STEP)  # coarse to fine: 24 turns, not 61
    best = float(max(fine, key=lambda a: (score(float(a)), -abs(a))))
    return round(best, 2) if abs(best) >= MIN_SKEW else 0.0


def find_grids(gray: np.ndarray) -> list[Grid]:
    """The ruled tables on an upright, deskewed page, top to bottom."""
    dark = ink(gray)
    h, w = dark.shape
    length = max(20, int(w * MIN_RULE_SHARE))
    rules = _horizontal_rules(dark, length)
    grids: list[Grid] = []
    for group in _stacks(rules):
        y0, y1 = group[0][0], group[-1][0]
        x0, x1 = min(r[1] for r in group), max(r[2] for r in group)
        cols = _vertical_rules(dark[y0:y1 + 1, max(0, x0 - 3):min(w, x1 + 4)], max(0, x0 - 3))
        if len(cols) >= 3:
            grids.append(Grid(tuple(r[0] for r in group), tuple(cols)))
    return grids


def _horizontal_rules(dark: np.ndarray, length: int) -> list[tuple[int, int, int]]:
    """(y, x0, x1) of each horizontal run of ink at least ``length`` long (noise-tolerant), nearby rows joined."""
    if dark.shape[1] <= length:
        return []
    csum = np.concatenate([np.zeros((dark.shape[0], 1), np.int32), np.cumsum(dark, axis=1, dtype=np.int32)], axis=1)
    window = csum[:, length:] - csum[:, :-length]  # ink in each window of ``length`` pixels
    full = window >= RULE_FILL * length
    found: list[tuple[int, int, int]] = []
    for y in np.flatnonzero(full.any(axis=1)):
        xs = np.flatnonzero(full[y])
        x0, x1 = int(xs[0]), int(xs[-1]) + length
        if found and y - found[-1][0] <= RULE_JOIN and _overlap((x0, x1), found[-1][1:]) > 0.8:
            prev = found[-1]
            found[-1] = (int(y), min(prev[1], x0), max(prev[2], x1))
        else:
            found.append((int(y), x0, x1))
    return found


def _stacks(rules: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Rules of one table: the same left and right ends (within 3% of the width), three or more of them."""
    groups: list[list[tuple[int, int, int]]] = []
    for rule in rules:
        for g in groups:
            if _overlap(rule[1:], g[-1][1:]) > 0.9:
                g.append(rule)
                break
        else:
            groups.append([rule])
    return [g for g in groups if len(g) >= 3]


def _vertical_rules(band: np.ndarray, offset: int) -> list[int]:
    """x of each column of ink crossing the whole band (a table's height), nearby columns joined."""
    height = band.shape[0]
    if height < 10:
        return []
    full = np.flatnonzero(band.sum(axis=0) >= RULE_FILL * height)
    cols: list[int] = []
    for x in full:
        if cols and x + offset - cols[-1] <= RULE_JOIN:
            cols[-1] = int(x + offset)
        else:
            cols.append(int(x + offset))
    return cols


def _overlap(a: Sequence[int], b: Sequence[int]) -> float:
    """The overlap of two spans over the longer one (0-1)."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    return max(0.0, inter) / max(1, max(a[1] - a[0], b[1] - b[0]))


def fill_grid(grid: Grid, words: Sequence[tuple[float, float, str]]) -> tuple[tuple[str, ...], ...] | None:
    """The table's rows of cells from ``words`` ((x centre, y centre, text) in reading order); None when its
    structure is not clear: an empty header row, or fewer than half the cells holding a word."""
    cells: dict[tuple[int, int], list[str]] = {}
    for x, y, text in words:
        r = int(np.searchsorted(grid.rows, y)) - 1
        c = int(np.searchsorted(grid.cols, x)) - 1
        if 0 <= r < len(grid.rows) - 1 and 0 <= c < len(grid.cols) - 1:
            cells.setdefault((r, c), []).append(text)
    rows = tuple(tuple(join_words(cells.get((r, c), [])) for c in range(len(grid.cols) - 1))
                 for r in range(len(grid.rows) - 1))
    filled = sum(1 for row in rows for cell in row if cell)
    if not any(rows[0]) or filled * 2 < len(rows) * len(rows[0]):
        return None
    return rows


def join_words(words: Sequence[str]) -> str:
    """Words of one line or cell: spaced, except between two CJK words (Chinese is written without spaces)."""
    text = ""
    for w in words:
        if text and not (_cjk(text[-1]) and _cjk(w[0])):
            text += " "
        text += w
    return text


def _cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\uffef"


def unrotated(box: tuple[int, int, int, int], angle: float, shape: tuple[int, ...],
              turned_shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """A box on the page rotated by ``angle`` (PIL's ``rotate(angle, expand=True)``: counter-clockwise, about the
    centre) as the bounding box of where it lies on the page before the rotation."""
    if not angle:
        return box
    a = np.radians(angle)
    (h, w), (th, tw) = shape[:2], turned_shape[:2]
    xs, ys = [], []
    for x, y in ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])):
        dx, dy = x - tw / 2, y - th / 2
        xs.append(w / 2 + dx * np.cos(a) - dy * np.sin(a))
        ys.append(h / 2 + dx * np.sin(a) + dy * np.cos(a))
    return (max(0, int(min(xs))), max(0, int(min(ys))), min(w, int(np.ceil(max(xs)))), min(h, int(np.ceil(max(ys)))))


def blanked(pixels: np.ndarray, boxes) -> "object":
    """The page with ``boxes`` (its ruled tables) painted white: they are read on their own."""
    from PIL import Image  # on use: Pillow, for scans only

    out = pixels.copy()
    for x0, y0, x1, y1 in boxes:
        out[max(0, y0 - BLANK_PAD):y1 + BLANK_PAD + 1, max(0, x0 - BLANK_PAD):x1 + BLANK_PAD + 1] = 255
    return Image.fromarray(out)


def table_crop(pixels: np.ndarray, grid: Grid) -> "object":
    """A table's region with its rules erased, in a white border."""
    from PIL import Image, ImageOps  # on use: Pillow, for scans only

    x0, y0, x1, y1 = grid.box
    out = pixels[y0:y1 + 1, x0:x1 + 1].copy()
    for y in grid.rows:
        out[max(0, y - y0 - RULE_ERASE):y - y0 + RULE_ERASE + 1, :] = 255
    for x in grid.cols:
        out[:, max(0, x - x0 - RULE_ERASE):x - x0 + RULE_ERASE + 1] = 255
    return ImageOps.expand(Image.fromarray(out), border=CROP_BORDER, fill=255)


def shifted(data: dict, grid: Grid) -> dict:
    """Tesseract's data for a table crop (``table_crop``) in the coordinates of the page the grid is on."""
    x0, y0 = grid.box[0] - CROP_BORDER, grid.box[1] - CROP_BORDER
    return {**data, "left": [v + x0 for v in data["left"]], "top": [v + y0 for v in data["top"]]}
