"""ChunkReport: chunk-layer quality figures for one document, computed from the chunks themselves."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ragclinic.types import Chunk, ChunkReport, ParsedDocument

_LISTED = 10  # offsets named in one warning; the count says how many there are in all


def where(doc: ParsedDocument) -> str:
    """How warnings name a document: its path, and the record key for JSONL records."""
    return f"{doc.path}#{doc.record_key}" if doc.record_key else doc.path


def build_report(doc: ParsedDocument, chunks: Sequence[Chunk], *, min_tokens: int,
                 allowed_ends: Collection[int], overlong_sentences: int, split_tables: int,
                 warnings: Sequence[str]) -> ChunkReport:
    """``allowed_ends``: offsets where a sentence or a table row ends (after trailing whitespace
    is stripped). A chunk ending anywhere else ends mid-sentence, which only a reported over-long
    sentence justifies; checking ends against the sentence spans, rather than trusting the
    packer, is what makes the figure a test of the packer."""
    notes = list(warnings)
    mid = [c for c in chunks if c.end not in allowed_ends]
    tiny = [c for c in chunks if c.tokens < min_tokens]
    seen: set[str] = set()
    duplicates = []
    for c in chunks:
        if c.text in seen:
            duplicates.append(c)
        seen.add(c.text)
    if mid:
        notes.append(f"{where(doc)}: {len(mid)} chunk(s) end mid-sentence, at {_offsets(mid, 'end')}")
    if tiny:
        notes.append(f"{where(doc)}: {len(tiny)} chunk(s) under chunk_min_tokens ({min_tokens}), "
                     f"at {_offsets(tiny, 'start')}")
    if duplicates:
        notes.append(f"{where(doc)}: {len(duplicates)} chunk(s) repeat an earlier chunk's text, "
                     f"at {_offsets(duplicates, 'start')}")
    sizes = sorted(c.tokens for c in chunks)
    empty = not sizes
    return ChunkReport(
        doc_id=doc.doc_id,
        chunks=len(chunks),
        tokens_min=0 if empty else sizes[0],
        tokens_p50=0.0 if empty else _percentile(sizes, 50),
        tokens_p90=0.0 if empty else _percentile(sizes, 90),
        tokens_max=0 if empty else sizes[-1],
        tokens_mean=0.0 if empty else sum(sizes) / len(sizes),
        mid_sentence_ends=len(mid),
        overlong_sentences=overlong_sentences,
        split_tables=split_tables,
        tiny_chunks=len(tiny),
        duplicate_chunks=len(duplicates),
        warnings=tuple(notes),
    )


def _offsets(chunks: Sequence[Chunk], attr: str) -> str:
    shown = ", ".join(str(getattr(c, attr)) for c in chunks[:_LISTED])
    return shown + (", ..." if len(chunks) > _LISTED else "")


def _percentile(ordered: Sequence[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy's per-call cost."""
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))
