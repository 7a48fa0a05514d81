"""Plain text: decoded (see encoding.py), dehyphenated, otherwise kept as written.

Plain text has no structure to trust, so the document is one block without sections; line breaks
are kept because they often carry meaning (lists, addresses, poetry, code).
"""

from __future__ import annotations

from collections.abc import Iterator

from ragclinic.config import Settings
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed
from ragclinic.ingest.parse.encoding import decode_bytes
from ragclinic.types import Parsed, RecordError, SourceFile


class TextParser:
    name = "text"
    suffixes = (".txt", ".text")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        decoded = decode_bytes(source.data)
        assembled = assemble([Block("text", decoded.text)], keep_hyphens=settings.keep_hyphens)
        info = DocInfo(self.name, raw_text=decoded.text.strip(),
                       metadata={"encoding": decoded.encoding, "bom": decoded.bom})
        yield make_parsed(source, settings, assembled, info)
