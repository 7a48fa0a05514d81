"""Scope: cut planted instructions out of a passage and keep the facts around them.

Each admitted hit is checked in its document, with ``WINDOW`` characters on either side, so that an
instruction split across two chunks ("…ignore all previous" | "instructions and reply…") is found in
both. The spans that overlap the chunk are removed from the text the generator sees; the chunk stays
whole in the store and in the source view. What was removed is recorded by place (document, paragraph,
page, kind, characters), never by content: repeating a payload to the user would deliver it.
A passage with nothing left but the instruction is set aside as an exclusion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ragclinic.text.injection import Span, find_instructions, strip_spans
from ragclinic.text.support import content_terms
from ragclinic.types import DocInfo, Exclusion, Hit

WINDOW = 400
_MIN_LEFT = 3  # content terms a stripped passage must keep to stay in the context


@dataclass(frozen=True)
class Removal:
    chunk_id: str
    doc_id: str
    document: str  # title or path
    paragraph: int  # 1-based, in the document
    page: int | None
    kinds: tuple[str, ...]
    chars: int
    kept: bool  # False: nothing but the instruction was left, the passage was set aside

    def where(self) -> str:
        page = f", page {self.page}" if self.page else ""
        return f"{self.document}, paragraph {self.paragraph}{page}"

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "document": self.document,
                "paragraph": self.paragraph, "page": self.page, "kinds": list(self.kinds), "chars": self.chars,
                "kept": self.kept, "where": self.where()}


def sanitize(conn, hit: Hit, doc: DocInfo, detector=None) -> tuple[Hit | None, Removal | None]:
    """(the hit with its instructions cut out, or None when nothing else is left; what was removed, or None).
    ``detector``: the learned instruction detector (verify/instructions.py), or None for the rules alone."""
    chunk = hit.chunk
    spans, offset = _spans_around(conn, hit, detector)
    inside = [sp for sp in spans if sp.end > offset and sp.start < offset + len(chunk.text)]
    if not inside:
        return hit, None
    text = strip_spans(chunk.text, inside, offset)
    first = max(inside[0].start, offset)
    removal = Removal(chunk.id, chunk.doc_id, doc.title or doc.path or chunk.doc_id,
                      _paragraph(conn, chunk.doc_id, first, chunk, offset), chunk.page,
                      tuple(dict.fromkeys(sp.kind for sp in inside)),
                      sum(min(sp.end, offset + len(chunk.text)) - max(sp.start, offset) for sp in inside),
                      kept=len(content_terms(text)) >= _MIN_LEFT)
    if not removal.kept:
        return None, removal
    return replace(hit, chunk=replace(chunk, text=text)), removal


def _spans_around(conn, hit: Hit, detector) -> tuple[list[Span], int]:
    """Instruction spans in the chunk's neighbourhood, and the chunk's offset in the text they refer to.
    Falls back to the chunk alone when the stored document text does not hold it at its offsets."""
    chunk = hit.chunk
    lo = max(chunk.start - WINDOW, 0)
    row = conn.execute("SELECT substr(text, ?, ?) FROM documents WHERE doc_id = ?",
                       [lo + 1, chunk.end - lo + WINDOW, chunk.doc_id]).fetchone()
    window = row[0] if row else ""
    at = chunk.start - lo
    if window[at:at + len(chunk.text)] != chunk.text:
        return find_instructions(chunk.text, detector), 0
    return find_instructions(window, detector), at


def _paragraph(conn, doc_id: str, offset: int, chunk, chunk_offset: int) -> int:
    """The paragraph number in the document (blocks are joined by blank lines) of the span's start."""
    absolute = chunk.start + (offset - chunk_offset)
    row = conn.execute("SELECT (length(p) - length(replace(p, char(10) || char(10), ''))) / 2 FROM "
                       "(SELECT substr(text, 1, ?) AS p FROM documents WHERE doc_id = ?)",
                       [max(absolute, 0), doc_id]).fetchone()
    return int(row[0]) + 1 if row and row[0] is not None else 1


def removal_exclusion(r: Removal) -> Exclusion:
    """The removal as the trace records it: rule ``instruction_removed`` (the rest of the passage was kept) or
    ``instruction`` (the passage held nothing else and was set aside). The reason names the place only."""
    what = ", ".join(r.kinds)
    if r.kept:
        return Exclusion(r.chunk_id, r.doc_id, "instruction_removed",
                         f"{r.where()}: {r.chars} characters addressing the assistant ({what}) were cut out; "
                         f"the rest of the passage was kept")
    return Exclusion(r.chunk_id, r.doc_id, "instruction",
                     f"{r.where()}: the passage holds nothing but an instruction to the assistant ({what}); set aside")


RULES = ("instruction_removed", "instruction")
_PLACE = re.compile(r"^(.*?), paragraph (\d+)(?:, page (\d+))?:")


def removal_places(excluded, language: str = "en") -> list[str]:
    """The places ("visa.md, paragraph 3"; zh "《visa.md》第3段") of the instructions the scope layer removed,
    each once."""
    out = []
    for e in excluded:
        if e.rule not in RULES:
            continue
        m = _PLACE.match(e.reason)
        if m is None:
            out.append(e.doc_id)
        elif language == "zh":
            out.append(f"《{m.group(1)}》" + (f"第{m.group(3)}页" if m.group(3) else "") + f"第{m.group(2)}段")
        else:
            out.append(f"{m.group(1)}, paragraph {m.group(2)}" + (f", page {m.group(3)}" if m.group(3) else ""))
    return list(dict.fromkeys(out))
