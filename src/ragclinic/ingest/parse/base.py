"""The Parser role and the builder every parser shares.

A parser only has to turn its format into a list of ``Block``s in reading order (headings,
paragraphs, tables, code) plus a raw extraction for the quality check. ``assemble`` does the
rest once for all formats: dehyphenation (before any offset is taken, so offsets refer to the
final text), joining blocks with blank lines, sections with heading paths, table spans, page spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.hidden import Hidden
from ragclinic.ingest.parse.dehyphen import HyphenEvidence, dehyphenate, gather_evidence, has_line_break_hyphen
from ragclinic.ingest.parse.quality import build_report
from ragclinic.text.lang import detect_language
from ragclinic.types import (Page, Parsed, ParsedDocument, RecordError, Section, SourceFile, Table,
                             make_doc_id, sha256_text)

BLOCK_SEP = "\n\n"
_REFLOW = re.compile(r"(.?)[ \t]*\n[ \t]*(.?)")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def reflow(text: str) -> str:
    """Join a paragraph's lines with spaces; no space where a line break sits next to CJK text,
    which is written without spaces between words."""
    return _REFLOW.sub(lambda m: m.group(1) + ("" if _CJK.match(m.group(1)) or _CJK.match(m.group(2))
                                               else " ") + m.group(2), text)


@runtime_checkable
class Parser(Protocol):
    """Turns one source file into documents. Whole-file failures raise ParseError; a bad record
    inside a multi-document file is yielded as a RecordError and parsing continues."""

    name: str
    suffixes: tuple[str, ...]

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]: ...


@dataclass(frozen=True)
class Block:
    """One unit of reading order. ``reflow`` joins the block's lines with spaces (after dehyphenation)."""

    kind: Literal["heading", "text", "table", "code"]
    text: str = ""
    level: int = 0  # headings: 1 = top level
    rows: tuple[tuple[str, ...], ...] = ()  # tables
    page: int | None = None  # 1-based, PDF only
    reflow: bool = False


@dataclass(frozen=True)
class Assembled:
    text: str
    sections: tuple[Section, ...]
    tables: tuple[Table, ...]
    pages: tuple[Page, ...]
    hyphen_joins: int
    hyphens_kept: int
    first_heading: str = ""


def clean_cell(cell: Any) -> str:
    return " ".join(str(cell).split()) if cell is not None else ""


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """GitHub-style pipe table; the first row is the header. Pipes in cells are escaped."""
    width = max((len(r) for r in rows), default=0)

    def line(cells: Sequence[str]) -> str:
        padded = list(cells) + [""] * (width - len(cells))
        return "| " + " | ".join(c.replace("|", "\\|") for c in padded) + " |"

    return "\n".join([line(rows[0]), "|" + "---|" * width, *(line(r) for r in rows[1:])])


def table_block(rows: Sequence[Sequence[Any]], page: int | None = None) -> Block | None:
    """A table block from raw cells, or None when the table has no text at all."""
    clean = tuple(tuple(clean_cell(c) for c in row) for row in rows)
    clean = tuple(r for r in clean if any(r))
    return Block("table", rows=clean, page=page) if clean else None


def _render(block: Block, evidence: HyphenEvidence | None) -> tuple[str, int, int]:
    if block.kind == "table":
        return markdown_table(block.rows), 0, 0
    if block.kind == "code":
        return block.text.strip("\n"), 0, 0
    result = dehyphenate(block.text, evidence)
    if block.kind == "heading":  # one line, so that the heading path is the heading text
        return " ".join(result.text.split()), result.joins, result.kept
    text = reflow(result.text) if block.reflow else result.text
    return text.strip(), result.joins, result.kept


def assemble(blocks: Sequence[Block], *, page_count: int = 0, keep_hyphens: Sequence[str] = ()) -> Assembled:
    """Build the document text and its spans. ``page_count`` > 0 makes page spans that cover
    the whole text (an empty page gets a zero-length span where its text would have been);
    ``keep_hyphens``: compounds whose line-break hyphen is always kept (settings ``keep_hyphens``)."""
    prose = [b.text for b in blocks if b.kind in ("heading", "text")]
    # Evidence costs a pass over the whole document: gather it only when there is something to decide.
    evidence = gather_evidence(prose, keep_hyphens) if any(has_line_break_hyphen(t) for t in prose) else None
    parts: list[str] = []
    pos = joins = kept = 0
    heads: list[tuple[int, int, tuple[str, ...]]] = []  # (level, start, path)
    stack: list[tuple[int, str]] = []
    tables: list[Table] = []
    page_starts: dict[int, int] = {}
    for block in blocks:
        text, j, k = _render(block, evidence)
        joins, kept = joins + j, kept + k
        if not text:
            continue
        if parts:
            parts.append(BLOCK_SEP)
            pos += len(BLOCK_SEP)
        start, end = pos, pos + len(text)
        parts.append(text)
        pos = end
        if block.page is not None:
            page_starts.setdefault(block.page, start)
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, text))
            heads.append((block.level, start, tuple(h for _, h in stack)))
        elif block.kind == "table":
            tables.append(Table(block.rows, start, end, block.page))
    full = "".join(parts)
    return Assembled(full, _sections(heads, len(full)), tuple(tables), _pages(page_starts, page_count, len(full)),
                     joins, kept, heads[0][2][-1] if heads else "")


def _sections(heads: list[tuple[int, int, tuple[str, ...]]], length: int) -> tuple[Section, ...]:
    """A section ends where the next heading of the same or a higher level starts."""
    ends = [length] * len(heads)
    open_: list[int] = []  # indexes of sections still open, levels increasing
    for i, (level, start, _) in enumerate(heads):
        while open_ and heads[open_[-1]][0] >= level:
            ends[open_.pop()] = start
        open_.append(i)
    return tuple(Section(path, level, start, end) for (level, start, path), end in zip(heads, ends))


def _pages(page_starts: dict[int, int], page_count: int, length: int) -> tuple[Page, ...]:
    if page_count <= 0:
        return ()
    starts = [0] * (page_count + 2)
    starts[page_count + 1] = length
    for n in range(page_count, 1, -1):  # an empty page starts where the next non-empty one does
        starts[n] = page_starts.get(n, starts[n + 1])
    return tuple(Page(n, starts[n], starts[n + 1]) for n in range(1, page_count + 1))


@dataclass(frozen=True)
class DocInfo:
    """What a parser knows about one document besides its blocks."""

    parser: str
    raw_text: str  # the raw extraction keyword retention is checked against
    title: str = ""
    record_key: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    hidden: tuple[Hidden, ...] = ()  # text a reader cannot see (parse/hidden.py)


def check_table_size(tables: Sequence[Sequence[Sequence[Any]]], settings: Settings) -> None:
    """ParseError when a table is wider than ``max_table_columns`` or the tables hold more than
    ``max_table_cells`` cells: a 3,000-column CSV took 33 s and then failed the whole ingest (issue 32)."""
    cells = 0
    for rows in tables:
        width = max((len(r) for r in rows), default=0)
        if width > settings.max_table_columns:
            raise ParseError(f"a table has {width} columns, more than max_table_columns={settings.max_table_columns} "
                             f"(each table is also an SQL table; SQLite stores at most 2000 columns); split the "
                             f"table, or raise RAGCLINIC_MAX_TABLE_COLUMNS")
        cells += width * len(rows)
    if cells > settings.max_table_cells:
        raise ParseError(f"the tables hold {cells} cells, more than max_table_cells={settings.max_table_cells}; "
                         f"split the file, or raise RAGCLINIC_MAX_TABLE_CELLS")


def make_parsed(source: SourceFile, settings: Settings, assembled: Assembled, info: DocInfo) -> Parsed:
    """The ParsedDocument and its ParseReport (title: given, else first heading, else file stem)."""
    check_table_size([t.rows for t in assembled.tables], settings)
    path = str(source.path)
    title = " ".join(info.title.split()) or assembled.first_heading or source.path.stem
    metadata = {"size": source.size, "file_sha256": source.sha256, **info.metadata}
    doc = ParsedDocument(
        doc_id=make_doc_id(path, info.record_key), path=path, record_key=info.record_key, title=title,
        text=assembled.text, sections=assembled.sections, tables=assembled.tables, pages=assembled.pages,
        language=detect_language(assembled.text), parser=info.parser, sha256=sha256_text(assembled.text),
        mtime=source.mtime, metadata=metadata)
    report = build_report(doc, settings, raw_text=info.raw_text, hyphen_joins=assembled.hyphen_joins,
                          hyphens_kept=assembled.hyphens_kept, warnings=info.warnings, hidden=info.hidden,
                          ocr_pages=tuple(info.metadata.get("ocr", ())))
    return Parsed(doc, report)
