"""CSV and TSV: one document per file, the whole file one table (the first row its header).

The table is kept as structured cells (``ParsedDocument.tables``: what the SQL tool of issue 17 will query) and
rendered as a Markdown pipe table in the text, so it is searchable like any other document. The delimiter is
sniffed (comma, semicolon, tab, pipe) unless the suffix is .tsv; the encoding goes through encoding.py. Rows
with more cells than the header keep them; a file with no cell of text is an empty document, reported so.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, check_table_size, make_parsed, table_block
from ragclinic.ingest.parse.encoding import decode_bytes
from ragclinic.types import Parsed, RecordError, SourceFile

MAX_CELL = 10_000  # characters: a longer cell is cut (and reported), so one runaway field cannot flood a chunk
csv.field_size_limit(1 << 24)


class CsvParser:
    name = "csv"
    suffixes = (".csv", ".tsv")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        text = decode_bytes(source.data).text
        rows, warnings = _rows(text, tab=source.path.suffix.lower() == ".tsv")
        check_table_size([rows], settings)  # before the cells are rendered, counted and chunked
        block = table_block(rows)
        blocks = [block] if block is not None else [Block("text", "")]
        if block is None:
            warnings.append("the file has no cell with text")
        assembled = assemble(blocks)
        info = DocInfo(self.name, raw_text=" ".join(c for r in rows for c in r), warnings=tuple(warnings),
                       metadata={"rows": max(0, len(rows) - 1), "columns": len(rows[0]) if rows else 0})
        yield make_parsed(source, settings, assembled, info)


def _rows(text: str, tab: bool) -> tuple[list[list[str]], list[str]]:
    sample = text[:20_000]
    if tab:
        dialect = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    warnings: list[str] = []
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect) if any(c.strip() for c in row)]
    except csv.Error as e:
        raise ParseError(f"not readable as CSV: {e}; check the quoting") from None
    cut = 0
    for row in rows:
        for i, c in enumerate(row):
            if len(c) > MAX_CELL:
                row[i], cut = c[:MAX_CELL], cut + 1
    if cut:
        warnings.append(f"{cut} cell(s) longer than {MAX_CELL} characters were cut")
    return rows, warnings
