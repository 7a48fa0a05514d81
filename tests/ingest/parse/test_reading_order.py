from __future__ import annotations

from ragclinic.ingest.parse.reading_order import Box, find_columns, reading_order


def _names(boxes):
    return [b.payload for b in reading_order(boxes)]


def test_two_columns_with_centred_title_and_full_width_table():
    boxes = [
        Box(200, 40, 395, 60, "title", one_line=True),  # centred: crosses the gutter
        Box(50, 80, 280, 200, "left-1"), Box(315, 80, 545, 150, "right-1"),
        Box(50, 210, 280, 300, "left-2"), Box(315, 160, 545, 300, "right-2"),
        Box(50, 320, 545, 400, "table"),
        Box(50, 420, 280, 500, "left-3"), Box(315, 420, 545, 480, "right-3"),
    ]
    assert _names(boxes) == ["title", "left-1", "left-2", "right-1", "right-2", "table", "left-3", "right-3"]


def test_aligned_paragraph_gaps_do_not_interleave_columns():
    boxes = [Box(50, 100, 280, 200, "l1"), Box(315, 100, 545, 200, "r1"),
             Box(50, 210, 280, 300, "l2"), Box(315, 210, 545, 300, "r2")]
    assert _names(boxes) == ["l1", "l2", "r1", "r2"]


def test_single_column_is_top_to_bottom():
    boxes = [Box(50, 300, 545, 400, "c"), Box(50, 100, 545, 200, "a"), Box(50, 210, 300, 290, "b")]
    assert _names(boxes) == ["a", "b", "c"]
    assert len(find_columns(boxes)) == 1


def test_three_columns():
    boxes = [Box(x, y, x + 150, y + 90, f"{x}-{y}") for x in (50, 220, 390) for y in (100, 200)]
    assert _names(boxes) == ["50-100", "50-200", "220-100", "220-200", "390-100", "390-200"]


def test_heading_below_the_columns_introduces_the_table():
    boxes = [Box(50, 100, 280, 300, "left"), Box(315, 100, 545, 250, "right"),
             Box(50, 320, 120, 335, "Results", one_line=True), Box(50, 340, 545, 400, "table")]
    assert _names(boxes) == ["left", "right", "Results", "table"]


def test_unequal_columns_keep_the_last_paragraph_in_its_column():
    boxes = [Box(50, 100, 280, 200, "l1"), Box(50, 260, 280, 300, "l2"), Box(315, 100, 545, 240, "r1"),
             Box(50, 340, 545, 400, "table")]
    assert _names(boxes) == ["l1", "l2", "r1", "table"]
