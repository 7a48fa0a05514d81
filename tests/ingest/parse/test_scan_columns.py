"""The columns of a scanned page from its pixels (scan_columns.py, no OCR engine needed): a page in two columns is
read column by column — under a full-width title, between full-width paragraphs, in three columns — and a page
in one column, a page whose "columns" are a narrow list of codes, and a page whose gutter is crossed by full-width
lines are left whole. Pages are bars standing in for text lines, with a scanner's noise."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from ragclinic.ingest.parse.scan_columns import regions

from .test_scan_layout import _noisy

W, H = 1240, 1754  # an A4 page at 150 dpi
LINE = 33  # a text line's pitch


def _lines(d: ImageDraw.ImageDraw, x0: int, x1: int, y: int, n: int, seed: int = 1, last: float = 0.35) -> int:
    """``n`` lines of "words" between x0 and x1 from y (ragged right, the last ``last`` of the width); the y after
    them."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        end = x0 + (x1 - x0) * (last if i == n - 1 else rng.uniform(0.85, 1.0))
        x = x0
        while x < end:
            w = int(rng.integers(18, 60))
            d.rectangle((x, y, min(x + w, int(end)), y + 16), fill=0)
            x += w + 9
        y += LINE
    return y


def _page(build) -> np.ndarray:
    img = Image.new("L", (W, H), 255)
    build(ImageDraw.Draw(img))
    return _noisy(img)


def _columns(d, y, n=12, cols=((110, 590), (650, 1130)), seed=1):
    return max(_lines(d, a, b, y + 6 * k, n - k, seed + k) for k, (a, b) in enumerate(cols))


def test_two_columns_are_read_left_then_right():
    boxes = regions(_page(lambda d: _columns(d, 180)))
    assert len(boxes) == 2
    (l0, t0, r0, b0), (l1, t1, r1, b1) = boxes
    assert 590 <= r0 == l1 <= 650  # split in the gutter
    assert l0 <= 110 and r1 >= 1130 and t0 <= 180 and t1 <= 186
    assert b0 >= 180 + 11 * LINE and b1 >= 186 + 10 * LINE


def test_a_ragged_line_reaching_into_the_gutter_keeps_the_columns_whole():
    """One line of the left column runs further right than the others (ragged right, a long word): the gutter
    narrows past it, and the columns are not cut into two sections there (en-two at 150 dpi was read section by
    section, its sentences out of order)."""
    def build(d):
        _lines(d, 110, 590, 180, 14, seed=1)
        y = 180 + 15 * LINE  # after a paragraph's end, a first line that runs 10 px into the gutter
        d.rectangle((110, y, 600, y + 16), fill=0)
        _lines(d, 110, 590, y + LINE, 7, seed=2)
        _lines(d, 650, 1130, 180, 23, seed=3)

    boxes = regions(_page(build))
    assert len(boxes) == 2
    (l0, t0, r0, b0), (l1, t1, r1, b1) = boxes
    assert 600 <= r0 == l1 <= 650 and t0 <= 180 and b0 >= 180 + 22 * LINE


def test_a_full_width_title_and_closing_paragraph_are_read_before_and_after_the_columns():
    def build(d):
        d.rectangle((110, 100, 1100, 130), fill=0)  # a title across the page
        y = _columns(d, 180)
        _lines(d, 110, 1130, y + 40, 4, seed=9)

    boxes = regions(_page(build))
    assert len(boxes) == 4
    title, left, right, closing = boxes
    assert title[1] <= 100 and title[3] <= 180 and title[2] >= 1100
    assert 590 <= left[2] == right[0] <= 650
    assert closing[1] >= left[1] + 11 * LINE and closing[2] >= 1100
    for a, b in zip(boxes, boxes[1:]):  # no line cut in two: the cuts lie in the white between them
        assert a[3] <= b[3]


def test_a_page_number_centred_under_the_columns_is_read_on_its_own():
    def build(d):
        _columns(d, 180)
        d.rectangle((612, 1650, 636, 1666), fill=0)  # "12" in the gutter's line, at the foot

    boxes = regions(_page(build))
    assert len(boxes) == 3
    assert boxes[2][1] < 1650 and boxes[2][2] - boxes[2][0] == W  # whole, not cut in two by the gutter
    assert boxes[0][3] <= 1650 and boxes[1][3] <= 1650


def test_two_sections_of_columns_read_section_by_section():
    def build(d):
        y = _columns(d, 150, n=10)
        y = _lines(d, 110, 1130, y + 30, 3, seed=7)
        _columns(d, y + 30, n=10, seed=20)

    boxes = regions(_page(build))
    assert len(boxes) == 5
    assert 590 <= boxes[0][2] == boxes[1][0] <= 650  # section one: left, right
    assert boxes[2][2] >= 1100  # the full-width paragraph
    assert 590 <= boxes[3][2] == boxes[4][0] <= 650  # section two
    assert boxes[3][1] > boxes[1][3] - 5


def test_three_columns_are_read_left_to_right():
    boxes = regions(_page(lambda d: _columns(d, 180, n=14, cols=((100, 410), (460, 770), (820, 1130)))))
    assert len(boxes) == 3
    assert [b[0] < c[0] for b, c in zip(boxes, boxes[1:])] == [True, True]
    assert 410 <= boxes[0][2] == boxes[1][0] <= 460 and 770 <= boxes[1][2] == boxes[2][0] <= 820


def test_one_column_is_left_whole():
    boxes = regions(_page(lambda d: _lines(d, 110, 1130, 150, 40)))
    assert len(boxes) <= 1


def test_a_narrow_list_of_codes_beside_its_meanings_is_not_two_columns():
    def build(d):  # "E1  the lid is open" ... : codes 6% of the page wide, a wide gap, then text
        for i in range(20):
            y = 200 + i * LINE
            d.rectangle((110, y, 180, y + 16), fill=0)
            _lines(d, 330, 1100, y, 1, seed=i)

    assert len(regions(_page(build))) <= 1


def test_lines_across_the_gutter_keep_the_page_whole():
    def build(d):  # a column-like gap in some lines only: every third line runs across the page
        for i in range(30):
            y = 150 + i * LINE
            if i % 3 == 0:
                _lines(d, 110, 1130, y, 1, seed=i, last=0.95)
            else:
                _lines(d, 110, 590, y, 1, seed=i, last=0.95)
                _lines(d, 650, 1130, y, 1, seed=100 + i, last=0.95)

    assert len(regions(_page(build))) <= 1


@pytest.mark.parametrize("scale", [2])
def test_a_300_dpi_page_splits_where_the_150_dpi_one_does(scale):
    small = _page(lambda d: _columns(d, 180))
    big = np.asarray(Image.fromarray(small).resize((W * scale, H * scale), Image.NEAREST))
    got, want = [tuple(v / scale for v in b) for b in regions(big)], regions(small)
    assert len(got) == len(want) == 2
    assert all(abs(a - b) <= 8 for g, w in zip(got, want) for a, b in zip(g, w))


def test_a_blank_page_has_no_regions():
    assert regions(np.full((H, W), 255, np.uint8)) == []
