"""Parse layer: source files -> ParsedDocument + ParseReport, one backend per format.

    parser_for(path) -> Parser                       by suffix; UnsupportedFileType otherwise
    parse_source(source, settings) -> Iterator[Parsed | RecordError]

Built-in parsers register through ``PARSERS`` like any plugin would. Whole-file failures raise
ParseError (EncryptedDocument, UnsupportedFileType) with a one-line ``reason``; a bad record in
a multi-document file (a JSONL line) is yielded as a RecordError and the rest are parsed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.errors import UnsupportedFileType
from ragclinic.ingest.parse.base import Parser
from ragclinic.ingest.parse.csv import CsvParser
from ragclinic.ingest.parse.docx import DocxParser
from ragclinic.ingest.parse.html import HtmlParser
from ragclinic.ingest.parse.image import ImageParser
from ragclinic.ingest.parse.jsonl import JsonlParser
from ragclinic.ingest.parse.markdown import MarkdownParser
from ragclinic.ingest.parse.pdf import PdfParser
from ragclinic.ingest.parse.text import TextParser
from ragclinic.ingest.parse.xlsx import XlsxParser
from ragclinic.registry import Registry
from ragclinic.types import Parsed, RecordError, SourceFile

__all__ = ["PARSERS", "SUPPORTED_SUFFIXES", "Parser", "parse_source", "parser_for", "supported_suffixes"]

PARSERS: Registry[Parser] = Registry("parser")
for _cls in (PdfParser, DocxParser, HtmlParser, MarkdownParser, TextParser, JsonlParser, CsvParser, XlsxParser,
             ImageParser):
    PARSERS.register(_cls.name, _cls)

# Formats people try that we deliberately do not parse, with the fix.
_REFUSED = {
    ".doc": "legacy Word .doc is not supported: convert it to .docx "
            "(e.g. libreoffice --headless --convert-to docx FILE.doc)",
}


def supported_suffixes() -> tuple[str, ...]:
    """Suffixes of every registered parser (plugins included), sorted."""
    return tuple(sorted({s for name in PARSERS.names() for s in PARSERS.create(name).suffixes}))


SUPPORTED_SUFFIXES: tuple[str, ...] = supported_suffixes()  # the built-ins; see supported_suffixes()


def parser_for(path: Path) -> Parser:
    """The registered parser for ``path``'s suffix (case-insensitive)."""
    suffix = Path(path).suffix.lower()
    if suffix in _REFUSED:
        raise UnsupportedFileType(_REFUSED[suffix])
    for name in PARSERS.names():
        parser = PARSERS.create(name)
        if suffix in parser.suffixes:
            return parser
    shown = suffix or "(no suffix)"
    raise UnsupportedFileType(f"unsupported file type {shown}; supported: "
                              f"{', '.join(supported_suffixes())} (convert the file, or register a parser)")


def parse_source(source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
    """Parse one file: one Parsed per document (many for JSONL), RecordErrors for bad records.

    The parser is chosen now (UnsupportedFileType is raised by this call); the file is read
    lazily, so ParseError for a broken file is raised while iterating.
    """
    return parser_for(source.path).parse(source, settings)
