"""A raw extraction of a source document — the text as the file holds it, with none of the parser's
rules (no column ordering, no de-hyphenation, no boilerplate removal) — for the parse probe to compare the
parsed text against."""

from __future__ import annotations

import html.parser
import io
import json
import zipfile
from pathlib import Path

from ragclinic.errors import RagclinicError
from ragclinic.ingest.parse.docx import raw_text
from ragclinic.ingest.parse.encoding import decode_bytes


def raw_text(path: str, record_key: str = "", settings=None) -> str:
    """The source's raw text; a JSONL record's text field as written. Raises when the file is gone."""
    p = Path(path)
    if not p.is_file():
        raise RagclinicError(f"{path}: the source file is gone, so its raw text cannot be compared "
                             "(re-ingest it, or diagnose with --gold-doc pointing at a present document)")
    data = p.read_bytes()
    suffix = p.suffix.lower()
    if record_key:
        return _jsonl_record(data, record_key, settings)
    if suffix == ".pdf":
        from pdfminer.high_level import extract_text  # on use: pdfminer is heavy and only PDFs need it

        return extract_text(io.BytesIO(data))
    if suffix == ".docx":
        return raw_text(zipfile.ZipFile(io.BytesIO(data)))
    text = decode_bytes(data).text
    if suffix in (".html", ".htm", ".xhtml"):
        return _html_text(text)
    return text


def _jsonl_record(data: bytes, key: str, settings) -> str:
    ids, field = list(settings.jsonl_id_fields), settings.jsonl_text_field
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and any(str(obj.get(f)) == key for f in ids if f in obj):
            body = obj.get(field)
            return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return ""


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def _html_text(markup: str) -> str:
    p = _Text()
    p.feed(markup)
    return "".join(p.parts)
