"""JSONL: one document per line, streamed (a 5,000-record corpus parses in a few seconds).

Fields come from settings: the record id is the first present of ``jsonl_id_fields`` (default
``_id``, ``id``) and is the document's ``record_key``; the body is ``jsonl_text_field``; the title
is ``jsonl_title_field``. When a record has a title, the document text is ``f"{title}\\n\\n{body}"``
with a level-1 Section for the title, so the title is searchable and citable like any heading.

A malformed line (not UTF-8, bad JSON, not an object, missing or non-string text, missing or
duplicate id) yields ``RecordError(path, "line N", reason)`` and parsing continues; blank lines
are skipped. Lines are expected in UTF-8 (a leading BOM is tolerated), as JSON Lines requires.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from ragclinic.config import Settings
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed
from ragclinic.types import Parsed, RecordError, SourceFile


class _BadRecord(Exception):
    pass


class JsonlParser:
    name = "jsonl"
    suffixes = (".jsonl",)

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        path = str(source.path)
        seen: set[str] = set()
        for number, raw in enumerate(io.BytesIO(source.data), start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                key, title, body, extra = self._record(raw, settings)
                if key in seen:
                    raise _BadRecord(f"duplicate id {key!r} (ids must be unique within the file)")
            except _BadRecord as e:
                yield RecordError(path, f"line {number}", str(e))
                continue
            seen.add(key)
            blocks = [Block("heading", title, level=1), Block("text", body)] if title else [Block("text", body)]
            raw_text = f"{title}\n\n{body.strip()}" if title else body.strip()
            info = DocInfo(self.name, raw_text=raw_text, title=title, record_key=key,
                           metadata={"line": number, "fields": extra})
            yield make_parsed(source, settings, assemble(blocks, keep_hyphens=settings.keep_hyphens), info)

    @staticmethod
    def _record(raw: bytes, settings: Settings) -> tuple[str, str, str, dict[str, Any]]:
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise _BadRecord(f"not UTF-8 at byte {e.start}; JSON Lines must be UTF-8") from None
        except json.JSONDecodeError as e:
            raise _BadRecord(f"invalid JSON: {e.msg} at column {e.colno}") from None
        except RecursionError:  # found by fuzzing: [[[[… a few thousand deep
            raise _BadRecord("JSON nested too deeply to read (thousands of levels)") from None
        if not isinstance(obj, dict):
            raise _BadRecord(f"expected a JSON object, got {type(obj).__name__}")
        id_field = next((f for f in settings.jsonl_id_fields if f in obj), None)
        if id_field is None or isinstance(obj[id_field], bool) or not isinstance(obj[id_field], (str, int)):
            raise _BadRecord(f"no usable id field (looked for {', '.join(settings.jsonl_id_fields)}; "
                             f"set jsonl_id_fields)")
        text_field = settings.jsonl_text_field
        body = obj.get(text_field)
        if body is None:
            raise _BadRecord(f"missing text field {text_field!r} (set jsonl_text_field)")
        if not isinstance(body, str):
            raise _BadRecord(f"text field {text_field!r} is {type(body).__name__}, expected a string")
        body = body.replace("\r\n", "\n").replace("\r", "\n")  # as every other parser's text
        title = obj.get(settings.jsonl_title_field)
        title = title.strip() if isinstance(title, str) else ""
        # Other scalar fields travel along as metadata (e.g. for scope filters downstream).
        skip = {id_field, text_field, settings.jsonl_title_field}
        extra = {k: v for k, v in obj.items() if k not in skip and isinstance(v, (str, int, float, bool))}
        return str(obj[id_field]), title, body, extra
