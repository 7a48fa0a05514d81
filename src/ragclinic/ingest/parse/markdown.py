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
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed, table_block
from ragclinic.ingest.parse.encoding import decode_bytes
from ragclinic.ingest.parse.hidden import Hidden, html_hidden, style_hides
from ragclinic.types import Parsed, RecordError, SourceFile

_TAG = re.compile(r"<[^>]+>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


class MarkdownParser:
    name = "markdown"
    suffixes = (".md", ".markdown")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        decoded = decode_bytes(source.data)
        title, body = split_front_matter_title(decoded.text)
        hidden: list[Hidden] = []
        assembled = assemble(markdown_blocks(body, hidden), keep_hyphens=settings.keep_hyphens)
        raw = _TAG.sub(" ", _COMMENT.sub(" ", decoded.text))  # markup is not text the retention check looks for
        info = DocInfo(self.name, raw_text=raw, title=title, hidden=tuple(hidden),
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


_OPEN_TAG = re.compile(r"<([A-Za-z][\w-]*)([^>]*?)(/?)>")


def inline_text(token, hidden: list[Hidden] | None = None) -> str:
    """Plain text of an inline token: formatting dropped, link text and image alt text kept; text inside an
    inline HTML element that hides it (``<span style="display:none">``) is left out (and added to ``hidden``)."""
    out: list[str] = []
    skip: list[tuple[str, str, list[str]]] = []  # open hiding elements: (tag, how, their text)
    for child in token.children or ():
        if child.type == "html_inline":
            if skip and child.content.lower().startswith(f"</{skip[-1][0]}"):
                tag, how, text = skip.pop()
                if not skip and hidden is not None:
                    hidden.append(Hidden(how, "".join(text)))
            elif (m := _OPEN_TAG.match(child.content)) and not m.group(3) and (how := _inline_hides(m.group(2))):
                skip.append((m.group(1).lower(), how, skip[-1][2] if skip else []))
            elif child.content.lower().startswith("<br") and not skip:
                out.append("\n")
            continue
        piece = (child.content if child.type in ("text", "code_inline", "image")
                 else "\n" if child.type in ("softbreak", "hardbreak") else "")
        (skip[-1][2] if skip else out).append(piece)
    return "".join(out)


def _inline_hides(attrs: str) -> str:
    import lxml.html  # on use: lxml, needed only for HTML/XML documents

    try:
        el = lxml.html.fragment_fromstring(f"<span {attrs}></span>")
    except Exception:  # unparseable attributes: not something we can judge, so not hidden
        return ""
    if el.get("hidden") is not None:
        return "hidden attribute"
    if (el.get("aria-hidden") or "").lower() == "true":
        return "aria-hidden"
    return style_hides(el.get("style") or "")


def _html_block_text(content: str, hidden: list[Hidden] | None) -> str:
    """Visible text of a raw HTML block: comments and hidden elements left out (and added to ``hidden``)."""
    import lxml.html  # on use: lxml, needed only for HTML/XML documents
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    try:
        root = lxml.html.fragment_fromstring(content, create_parent="div")
    except (etree.ParserError, ValueError):
        return _TAG.sub(" ", content).strip()
    found = html_hidden(root)
    if hidden is not None:
        hidden += found
    return " ".join(root.text_content().split())


def markdown_blocks(source: str, hidden: list[Hidden] | None = None) -> list[Block]:
    """Reading-order blocks of a Markdown text; text a reader would not see is added to ``hidden``."""
    from markdown_it import MarkdownIt  # on use: markdown-it, needed only for Markdown

    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    blocks: list[Block] = []
    lists = _ListCollector()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if lists.feed(tok, blocks):
            i += 1
        elif tok.type == "heading_open":
            blocks.append(Block("heading", inline_text(tokens[i + 1], hidden), level=int(tok.tag[1:]), reflow=True))
            i += 3
        elif tok.type == "paragraph_open":
            blocks.append(Block("text", inline_text(tokens[i + 1], hidden), reflow=True))
            i += 3
        elif tok.type == "table_open":
            i, rows = _table_rows(tokens, i)
            block = table_block(rows)
            blocks += [block] if block is not None else []
        else:
            if tok.type in ("fence", "code_block"):
                blocks.append(Block("code", f"```{tok.info.strip()}\n{tok.content.rstrip()}\n```"))
            elif tok.type == "html_block" and (visible := _html_block_text(tok.content, hidden)):
                blocks.append(Block("text", visible, reflow=True))
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
