from __future__ import annotations

from ragclinic.demo.writers import write_markdown
from ragclinic.ingest.parse.base import markdown_table
from ragclinic.ingest.parse.markdown import markdown_blocks

from .helpers import assert_spans_valid, parse_one

SOURCE = """---
title: Front Matter Title
---
# Guide

Install with **pip** and read [the docs](https://example.org/docs) or `ragclinic --help`.
A second line of the same paragraph.

## Setup

- first item with *emphasis*
- second item
  - nested item
1. step one
2. step two

```bash
pip install ragclinic
```

| Flag | Meaning |
|------|---------|
| `--kb` | knowledge base |
| a \\| b | escaped pipe |

### Deep

Deep text.

## Usage

Usage text.
"""


def test_sections_offsets_and_paths(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(SOURCE, encoding="utf-8")
    doc = parse_one(path).document
    assert [s.path for s in doc.sections] == [
        ("Guide",), ("Guide", "Setup"), ("Guide", "Setup", "Deep"), ("Guide", "Usage")]
    for s in doc.sections:
        assert doc.text[s.start:s.end].startswith(s.path[-1])
    setup, deep, usage = doc.sections[1:]
    assert setup.end == usage.start and deep.end == usage.start and doc.sections[0].end == len(doc.text)
    assert doc.title == "Front Matter Title"
    assert_spans_valid(doc)


def test_inline_formatting_lists_code_and_tables(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(SOURCE, encoding="utf-8")
    doc = parse_one(path).document
    text = doc.text
    assert "Install with pip and read the docs or ragclinic --help. A second line of the same paragraph." in text
    assert "**" not in text and "https://example.org" not in text and "*emphasis*" not in text
    assert "- first item with emphasis\n- second item\n  - nested item\n\n1. step one\n2. step two" in text
    assert "```bash\npip install ragclinic\n```" in text
    (table,) = doc.tables
    assert table.rows == (("Flag", "Meaning"), ("--kb", "knowledge base"), ("a | b", "escaped pipe"))
    assert text[table.start:table.end] == markdown_table(table.rows)
    assert "a \\| b" in text[table.start:table.end]


def test_writer_round_trip(tmp_path):
    path = write_markdown(tmp_path / "w.md", "Notes", [
        ("Part A", 1, ["Alpha text.", [["k", "v"], ["x", "1"]]]), ("Part B", 1, ["Beta text."])])
    parsed = parse_one(path)
    assert [s.path for s in parsed.document.sections] == [("Notes",), ("Notes", "Part A"), ("Notes", "Part B")]
    assert parsed.report.keyword_retention == 1.0
    assert_spans_valid(parsed.document)


def test_heading_levels_that_skip():
    blocks = markdown_blocks("### Deep first\n\ntext\n\n# Top\n\nmore")
    assert [(b.kind, b.level) for b in blocks] == [("heading", 3), ("text", 0), ("heading", 1), ("text", 0)]


def test_a_leading_rule_is_not_front_matter():
    from ragclinic.ingest.parse.markdown import split_front_matter_title

    assert split_front_matter_title("---\ntitle: Hello\ntags:\n  - a\n---\nBody") == ("Hello", "Body")
    text = "---\nA paragraph between two rules.\n---\nBody."
    assert split_front_matter_title(text) == ("", text)
