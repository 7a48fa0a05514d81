"""Markdown via markdown-it-py (CommonMark + tables).

Headings become sections; inline formatting is stripped to plain text (links keep their text,
images their alt text); paragraphs are reflowed to one line; list items stay one per line with
their marker and indentation; code blocks are kept verbatim inside fences; tables become Table
cells plus a Markdown rendering. The HTML parser reuses ``markdown_blocks`` on trafilatura's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ragclinic.config import Settings
from ragclinic.pipeline.parse.base import Block, DocInfo, assemble, make_parsed, table_block
from ragclinic.pipeline.parse.encoding import decode_bytes
from ragclinic.types import Parsed, RecordError, SourceFile

_TAG = re.compile(r"<[^>]+>")


class MarkdownParser:
    name = "markdown"
    suffixes = (".md", ".markdown")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        decoded = decode_bytes(source.data)
        title, body = split_front_matter_title(decoded.text)
        assembled = assemble(markdown_blocks(body), keep_hyphens=settings.keep_hyphens)
        info = DocInfo(self.name, raw_text=decoded.text, title=title,
                       metadata={"encoding": decoded.encoding})
        yield make_parsed(source, settings, assembled, info)


_YAML_LINE = re.compile(r"^(?:[\w.-]+[ \t]*:(?:[ \t].*)?|[ \t]+.*|[ \t]*-[ \t].*|#.*)$")


def split_front_matter_title(text: str) -> tuple[str, str]:
    """Drop a YAML front-matter block (``---`` ... ``---``), returning its ``title:`` if any."""
    m = re.match(r"---[ \t]*\n(.*?)\n---[ \t]*(\n|$)", text, re.S)
    # Front matter is "key: value" lines; a document that merely opens with a --- rule is not.
    if not m or not all(_YAML_LINE.match(line) for line in m.group(1).splitlines() if line.strip()):
        return "", text
    t = re.search(r"^title:\s*(.+?)\s*$", m.group(1), re.M)
    return (t.group(1).strip("\"'") if t else ""), text[m.end():]


def inline_text(token) -> str:
    """Plain text of an inline token: formatting dropped, link text and image alt text kept."""
    out: list[str] = []
    for child in token.children or ():
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "image":
            out.append(child.content)
        elif child.type == "softbreak":
            out.append("\n")
        elif child.type == "hardbreak":
            out.append("\n")
        elif child.type == "html_inline" and child.content.lower().startswith("<br"):
            out.append("\n")
    return "".join(out)


def markdown_blocks(source: str) -> list[Block]:
    """Reading-order blocks of a Markdown text."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    blocks: list[Block] = []
    lists = _ListCollector()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if lists.feed(tok, blocks):
            i += 1
        elif tok.type == "heading_open":
            blocks.append(Block("heading", inline_text(tokens[i + 1]), level=int(tok.tag[1:]), reflow=True))
            i += 3
        elif tok.type == "paragraph_open":
            blocks.append(Block("text", inline_text(tokens[i + 1]), reflow=True))
            i += 3
        elif tok.type == "table_open":
            i, rows = _table_rows(tokens, i)
            block = table_block(rows)
            blocks += [block] if block is not None else []
        else:
            if tok.type in ("fence", "code_block"):
                blocks.append(Block("code", f"```{tok.info.strip()}\n{tok.content.rstrip()}\n```"))
            elif tok.type == "html_block" and _TAG.sub(" ", tok.content).strip():
                blocks.append(Block("text", _TAG.sub(" ", tok.content).strip(), reflow=True))
            i += 1
    return blocks


class _ListCollector:
    """Turns a (possibly nested) list into one text block: one line per item, marker and indent kept."""

    def __init__(self) -> None:
        self.stack: list[list] = []  # per open list: [ordered?, next number]
        self.lines: list[str] = []
        self.marker_open = False  # the last line is a bare marker waiting for its item's text

    def feed(self, tok, blocks: list[Block]) -> bool:
        """Consume ``tok`` if it belongs to a list; a finished top-level list is appended to ``blocks``."""
        kind = tok.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            self.stack.append([kind == "ordered_list_open", int(tok.attrs.get("start", 1) or 1)])
        elif not self.stack:
            return False
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.stack.pop()
            if not self.stack:
                blocks.append(Block("text", "\n".join(self.lines)))
                self.lines = []
        elif kind == "list_item_open":
            ordered, number = self.stack[-1]
            self.stack[-1][1] = number + 1
            self.lines.append("  " * (len(self.stack) - 1) + (f"{tok.info or number}." if ordered else "-") + " ")
            self.marker_open = True
        elif kind == "inline":
            self._add(" ".join(inline_text(tok).split()))
        elif kind in ("fence", "code_block"):
            self._add(tok.content.rstrip())
        return True

    def _add(self, text: str) -> None:
        if self.marker_open:
            self.lines[-1] += text
        else:
            self.lines.append("  " * len(self.stack) + text)
        self.marker_open = False


def _table_rows(tokens: Sequence, i: int) -> tuple[int, list[list[str]]]:
    """Collect a table's cells; returns the index after ``table_close``."""
    rows: list[list[str]] = []
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type == "inline" and rows:
            rows[-1].append(" ".join(inline_text(tok).split()))
        i += 1
    return i + 1, rows
