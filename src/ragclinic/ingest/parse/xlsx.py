"""XLSX workbooks (openpyxl, read-only, cached values — formulas are not evaluated): one document per file, each
sheet a heading and a table (the first non-empty row its header), so every sheet is searchable as text and
queryable as an SQL table (store/tables.py). The zip is checked for bombs like a DOCX's; a password-protected
workbook is refused with the fix."""

from __future__ import annotations

import io
from collections.abc import Iterator

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed, table_block
from ragclinic.ingest.parse.docx import ZIP_ERRORS, open_checked_zip
from ragclinic.types import Parsed, RecordError, SourceFile

MAX_ROWS = 100_000  # per sheet; the rest is cut and reported
MAX_COLS = 200


class XlsxParser:
    name = "xlsx"
    suffixes = (".xlsx", ".xlsm")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        try:
            open_checked_zip(source.data, settings, kind="XLSX", app="Excel", required="xl/workbook.xml")
        except ZIP_ERRORS as e:  # found by fuzzing: a damaged archive fails inside zipfile/zlib
            raise ParseError(f"corrupt XLSX archive ({type(e).__name__}: {e}); re-save it from Excel") from None
        try:
            import openpyxl  # on use: openpyxl, needed only for XLSX documents

            book = openpyxl.load_workbook(io.BytesIO(source.data), read_only=True, data_only=True)
        except ImportError:
            raise ParseError("reading .xlsx needs openpyxl: pip install openpyxl") from None
        except Exception as e:  # BadZipFile, KeyError, ValueError, lxml's XMLSyntaxError, …
            raise ParseError(f"corrupt XLSX ({type(e).__name__}: {e}); re-save it from Excel or LibreOffice") from None
        try:
            yield from self._parsed(source, settings, book)
        except ParseError:
            raise
        except Exception as e:  # found by fuzzing: openpyxl reads sheets lazily and raises lxml/value errors
            raise ParseError(f"corrupt XLSX ({type(e).__name__}: {e}); re-save it from Excel or LibreOffice") from None

    def _parsed(self, source: SourceFile, settings: Settings, book) -> Iterator[Parsed]:
        blocks, warnings, raw = [], [], []
        try:
            for sheet in book.worksheets:
                rows, cut = _rows(sheet)
                if cut:
                    warnings.append(f"sheet {sheet.title!r}: cut at {MAX_ROWS} rows / {MAX_COLS} columns")
                block = table_block(rows)
                if block is None:
                    continue
                blocks += [Block("heading", sheet.title, level=1), block]
                raw += [sheet.title] + [str(c) for r in rows for c in r if c not in (None, "")]
        finally:
            book.close()
        if not blocks:
            warnings.append("the workbook has no cell with text")
            blocks = [Block("text", "")]
        info = DocInfo(self.name, raw_text=" ".join(raw), warnings=tuple(warnings),
                       metadata={"sheets": len([b for b in blocks if b.kind == "heading"])})
        yield make_parsed(source, settings, assemble(blocks), info)


def _rows(sheet) -> tuple[list[list[str]], bool]:
    rows, cut = [], False
    for i, row in enumerate(sheet.iter_rows(values_only=True)):
        if i >= MAX_ROWS:
            cut = True
            break
        cells = ["" if v is None else _cell(v) for v in row[:MAX_COLS]]
        cut = cut or len(row) > MAX_COLS
        if any(cells):
            rows.append(cells)
    return rows, cut


def _cell(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
