"""The layout of a scanned page from its pixels (scan_layout.py, no OCR engine needed): the skew found and undone,
ruled tables found as grids — and nothing found where there is no clear table (an underline, rules without
columns, text alone) — and words put into cells by where they fall."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from ragclinic.ingest.parse.scan_layout import Grid, fill_grid, find_grids, join_words, skew_angle, unrotated


def _noisy(img: Image.Image, seed: int = 0) -> np.ndarray:
    a = np.asarray(img, dtype=np.float32)
    rng = np.random.default_rng(seed)
    a = np.clip(a + rng.normal(0, 18, a.shape), 0, 255)
    a[rng.random(a.shape) < 0.0015] = 0
    return a.astype(np.uint8)


def _text_page(size=(1240, 1754)) -> Image.Image:
    """Lines of dark bars standing in for text lines (as a 150 dpi A4 page)."""
    img = Image.new("L", size, 255)
    d = ImageDraw.Draw(img)
    for i in range(40):
        y = 120 + i * 36
        for x in range(100, 1100, 60):
            d.rectangle((x, y, x + 45, y + 14), fill=0)
    return img


def _table_page(rows=5, cols=3, verticals=True, size=(2480, 3508)) -> tuple[Image.Image, list[int], list[int]]:
    img = Image.new("L", size, 255)
    d = ImageDraw.Draw(img)
    ys = [800 + r * 90 for r in range(rows + 1)]
    xs = [240 + c * 600 for c in range(cols + 1)]
    for y in ys:
        d.line((xs[0], y, xs[-1], y), fill=0, width=2)
    if verticals:
        for x in xs:
            d.line((x, ys[0], x, ys[-1]), fill=0, width=2)
    for r in range(rows):  # a little "text" in each cell
        for c in range(cols):
            d.rectangle((xs[c] + 30, ys[r] + 30, xs[c] + 200, ys[r] + 55), fill=0)
    return img, ys, xs


@pytest.mark.parametrize("angle", [0.8, -1.3])
def test_the_skew_of_a_page_is_found(angle):
    page = _noisy(_text_page().rotate(angle, resample=Image.BICUBIC, fillcolor=255))
    assert skew_angle(page) == pytest.approx(-angle, abs=0.15)


def test_a_level_page_is_left_as_it_is():
    assert skew_angle(_noisy(_text_page())) == 0.0


def test_a_ruled_table_is_found_as_a_grid_even_skewed_and_noisy_once_deskewed():
    img, ys, xs = _table_page()
    skewed = _noisy(img.rotate(0.6, resample=Image.BICUBIC, fillcolor=255))
    angle = skew_angle(skewed)
    level = np.asarray(Image.fromarray(skewed).rotate(angle, resample=Image.BICUBIC, fillcolor=255))
    (grid,) = find_grids(level)
    assert len(grid.rows) == 6 and len(grid.cols) == 4
    assert all(abs(a - b) <= 25 for a, b in zip(grid.rows, ys)) and all(abs(a - b) <= 25 for a, b in zip(grid.cols, xs))


def test_no_grid_without_columns_or_without_rules():
    rules_only, _, _ = _table_page(verticals=False)
    assert find_grids(_noisy(rules_only)) == []  # a booktabs-style table: its structure is not clear here
    assert find_grids(_noisy(_text_page())) == []
    underline = Image.new("L", (1240, 1754), 255)
    ImageDraw.Draw(underline).line((100, 300, 900, 300), fill=0, width=2)
    assert find_grids(_noisy(underline)) == []


def test_words_fall_into_their_cells_and_an_unclear_grid_is_none():
    grid = Grid(rows=(0, 100, 200, 300), cols=(0, 300, 600))
    words = [(50, 50, "Code"), (350, 50, "Meaning"), (50, 150, "E1"), (350, 150, "No"), (420, 150, "ignition"),
             (50, 250, "E4"), (350, 250, "Water"), (420, 250, "too"), (480, 250, "hot"), (900, 900, "outside")]
    assert fill_grid(grid, words) == (("Code", "Meaning"), ("E1", "No ignition"), ("E4", "Water too hot"))
    assert fill_grid(grid, [(50, 150, "E1")]) is None  # an empty header row, most cells empty
    assert fill_grid(Grid((0, 100, 200), (0, 300, 600)), [(50, 50, "代码"), (350, 50, "含义"), (50, 150, "E3"),
                                                         (350, 150, "锅盖"), (380, 150, "未盖好")]) == \
        (("代码", "含义"), ("E3", "锅盖未盖好"))


def test_words_are_joined_with_spaces_except_between_chinese_words():
    assert join_words(["Press", "reset"]) == "Press reset"
    assert join_words(["重新", "盖紧", "锅盖", "E3"]) == "重新盖紧锅盖 E3"


def test_a_table_found_on_the_deskewed_page_maps_back_to_where_it_lies_on_the_scan():
    img, ys, xs = _table_page()
    skewed = img.rotate(0.6, resample=Image.BICUBIC, fillcolor=255, expand=True)
    level = skewed.rotate(-0.6, resample=Image.BICUBIC, fillcolor=255, expand=True)
    (grid,) = find_grids(np.asarray(level))
    x0, y0, x1, y1 = unrotated(grid.box, -0.6, np.asarray(skewed).shape, np.asarray(level).shape)
    dark = np.argwhere(np.asarray(skewed) < 128)  # the table's ink on the skewed page lies inside the box
    assert y0 <= dark[:, 0].min() + 3 and dark[:, 0].max() - 3 <= y1
    assert x0 <= dark[:, 1].min() + 3 and dark[:, 1].max() - 3 <= x1


def test_the_languages_follow_the_script_of_the_page():
    from ragclinic.ingest.parse.ocr import for_script

    assert for_script("eng+chi_sim", "Han") == "chi_sim" and for_script("eng+chi_sim", "Latin") == "eng"
    assert for_script("eng+deu+chi_sim", "Latin") == "eng+deu"
    assert for_script("eng+chi_sim", "Cyrillic") == "eng+chi_sim"  # none of them: all of them
    assert for_script("eng+chi_sim", "") == "eng+chi_sim"
