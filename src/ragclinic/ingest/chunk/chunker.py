"""Sentence-aware chunking with dynamic overlap.

A document is cut into *blocks* (top-level sections; chunks never cross them), each block into
*units* (sentences, whole tables, and the clause or row pieces of sentences and tables over the
limit), and units are packed greedily up to ``chunk_max_tokens``. Each unit is counted once and
a chunk's size is the sum of its units' counts. Where units meet at whitespace that is the
tokenizer's own count of the chunk; where pysbd cuts inside a space-free string ("(n=12).Results")
the two can differ by a few tokens (SciFact: the sum is at most 3 under, 14 over).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from ragclinic.config import Settings
from ragclinic.errors import LayerError, RagclinicError
from ragclinic.ingest.chunk.report import build_report, where
from ragclinic.ingest.chunk.tokens import TokenCounter
from ragclinic.text.lang import detect_language
from ragclinic.text.sentences import LONG_RUN, long_runs, split_clauses, split_sentences
from ragclinic.types import Chunk, ChunkReport, ParsedDocument, Section, Table, make_chunk_id


@dataclass(frozen=True)
class _Unit:
    start: int  # span in doc.text; includes the whitespace after it
    end: int
    tokens: int
    whole: bool  # a complete sentence: only these are repeated as overlap


@dataclass(frozen=True)
class _Group:
    first: int  # first unit (overlap included)
    own: int  # first unit that is new in this chunk
    stop: int  # one past the last unit


@dataclass
class _Notes:
    """What unit building found, for the report."""

    ends: set[int]  # offsets where a chunk may end: sentence ends and table row ends
    overlong: int = 0
    split_tables: int = 0
    warnings: list[str] = field(default_factory=list)


class Chunker:
    """Config once (settings, token counter); ``chunk`` takes a document."""

    def __init__(self, settings: Settings, counter: TokenCounter) -> None:
        self.max = settings.chunk_max_tokens
        self.min = settings.chunk_min_tokens
        self.overlap_min = settings.overlap_min_tokens
        self.overlap_max = settings.overlap_max_tokens
        self.counter = counter

    def chunk(self, doc: ParsedDocument) -> tuple[tuple[Chunk, ...], ChunkReport]:
        try:
            return self._chunk(doc)
        except RagclinicError:
            raise
        except Exception as e:  # a bug or a malformed document: name the layer and the file
            raise LayerError("chunk", RuntimeError(f"{where(doc)}: {type(e).__name__}: {e}")) from e

    def _chunk(self, doc: ParsedDocument) -> tuple[tuple[Chunk, ...], ChunkReport]:
        notes = _Notes(ends=set())
        chunks: list[Chunk] = []
        seen: dict[str, int] = {}
        for a, b in _blocks(doc):
            units = self._units(doc, a, b, notes)
            for units_of_chunk, own in self._chunk_spans(units):
                chunks.append(self._make_chunk(doc, units_of_chunk, own, len(chunks), seen))
        report = build_report(doc, chunks, min_tokens=self.min, allowed_ends=notes.ends,
                              overlong_sentences=notes.overlong, split_tables=notes.split_tables,
                              warnings=notes.warnings)
        return tuple(chunks), report

    # ------------------------------------------------------------------ units
    def _units(self, doc: ParsedDocument, a: int, b: int, notes: _Notes) -> list[_Unit]:
        text = doc.text
        tables = _tables_in(doc.tables, a, b)
        cuts = {a, b}
        cuts.update(s.start for s in doc.sections if a < s.start < b)
        for t in tables:
            cuts.update((t.start, t.end))
        bounds = sorted(cuts)
        table_at = {t.start: t for t in tables}
        units: list[_Unit] = []
        for s, e in zip(bounds, bounds[1:]):
            if s in table_at and table_at[s].end == e:
                units.extend(self._table_units(doc, s, e, notes))
                continue
            for ss, se in split_sentences(text[s:e], s):
                notes.ends.add(_rstrip(text, ss, se))
                units.extend(self._sentence_units(doc, ss, se, notes))
        return units

    def _sentence_units(self, doc: ParsedDocument, s: int, e: int, notes: _Notes) -> list[_Unit]:
        runs = long_runs(doc.text, s, e)
        if not runs:
            tokens = self._count(doc.text, s, e)
            if tokens <= self.max:
                return [_Unit(s, e, tokens, True)]
            self._warn_too_long(doc, notes, "sentence", s, e, f"has {tokens} tokens", "clause boundaries")
        else:
            self._warn_too_long(doc, notes, "sentence", s, e, _run_words(runs), "clause boundaries")
        notes.overlong += 1
        return self._pieces(doc.text, s, e, runs)

    def _table_units(self, doc: ParsedDocument, s: int, e: int, notes: _Notes) -> list[_Unit]:
        text = doc.text
        lines = _lines(text, s, e)
        notes.ends.update(_rstrip(text, ls, le) for ls, le in lines)
        tokens = self._count(text, s, e)
        if tokens <= self.max:
            return [_Unit(s, e, tokens, False)]
        notes.split_tables += 1
        self._warn_too_long(doc, notes, "table", s, e, f"has {tokens} tokens", "row boundaries")
        units: list[_Unit] = []
        for ls, le in lines:
            n = self._count(text, ls, le)
            if n > self.max:  # one row over the limit: its cells' text is cut like a long sentence
                units.extend(self._pieces(text, ls, le, long_runs(text, ls, le)))
            else:
                units.append(_Unit(ls, le, n, False))
        return units

    def _pieces(self, text: str, s: int, e: int, runs: list[tuple[int, int]]) -> list[_Unit]:
        """Units of an over-long span: clauses (then words, then characters); a run longer than LONG_RUN
        is cut every chunk_max_tokens characters, counted one token a character (an upper bound) — never
        tokenized whole, which is what made a one-token file cost minutes (issue 32)."""
        units: list[_Unit] = []
        pos = s
        for ra, rb in [*runs, (e, e)]:
            if pos < ra:
                pieces = split_clauses(text[pos:ra], pos, self.max, self.counter.count)
                units.extend(_Unit(ps, pe, self._count(text, ps, pe), False) for ps, pe in pieces)
            stop = _rstrip(text, ra, rb)  # the whitespace after the run stays with its last piece
            for p in range(ra, stop, self.max):
                q = min(p + self.max, stop)
                units.append(_Unit(p, rb if q == stop else q, q - p, False))
            pos = rb
        return units

    def _warn_too_long(self, doc: ParsedDocument, notes: _Notes, what: str, s: int, e: int, size: str,
                       how: str) -> None:
        span = f"{_lstrip(doc.text, s, e)}-{_rstrip(doc.text, s, e)}"
        notes.warnings.append(f"{where(doc)}: {what} at {span} {size} "
                              f"> chunk_max_tokens {self.max}; split at {how}")

    def _count(self, text: str, s: int, e: int) -> int:
        return self.counter.count(text[s:e])

    # ------------------------------------------------------------------ packing
    def _chunk_spans(self, units: list[_Unit]) -> list[tuple[list[_Unit], int]]:
        groups = self._rebalance(units, self._pack(units))
        return [(units[g.first:g.stop], g.own - g.first) for g in groups]

    def _pack(self, units: list[_Unit]) -> list[_Group]:
        """Greedy: add units until the next would overflow, then start over from the overlap."""
        groups: list[_Group] = []
        first = own = 0
        tokens = 0
        for i, u in enumerate(units):
            if i > own and tokens + u.tokens > self.max:
                groups.append(_Group(first, own, i))
                first = self._overlap_start(units, first, i)
                tokens = _sum(units, first, i)
                if tokens + u.tokens > self.max:  # the overlap would push this unit over
                    first, tokens = i, 0
                own = i
            tokens += u.tokens
        if own < len(units):
            groups.append(_Group(first, own, len(units)))
        return groups

    def _overlap_start(self, units: list[_Unit], lo: int, stop: int) -> int:
        """Index where the overlap taken from ``units[lo:stop]`` begins (``stop`` = no overlap).

        The last sentence if it fits under overlap_max; the one before it too when the last is
        under overlap_min and both fit. A piece of a cut sentence or table is never repeated.
        """
        last = stop - 1
        if self.overlap_max <= 0 or last < lo or not units[last].whole:
            return stop
        n = units[last].tokens
        if n > self.overlap_max:
            return stop
        prev = last - 1
        if (n < self.overlap_min and prev >= lo and units[prev].whole
                and n + units[prev].tokens <= self.overlap_max):
            return prev
        return last

    def _rebalance(self, units: list[_Unit], groups: list[_Group]) -> list[_Group]:
        """Re-split a tiny chunk with its neighbour (the one before first, then the one after).

        With greedy packing a tiny chunk can never simply be appended to the chunk before it (that
        chunk closed because the tiny one's first unit did not fit), so the pair is cut again at
        the point that makes the smaller of the two largest, when that helps. What stays tiny
        (a heading-only section, a short sentence before a very long one) is reported.
        """
        groups = list(groups)
        for i in range(len(groups)):
            if _sum(units, groups[i].first, groups[i].stop) >= self.min:
                continue
            for j in (i - 1, i):
                if 0 <= j and j + 1 < len(groups):
                    pair = self._resplit(units, groups[j], groups[j + 1])
                    if pair is not None:
                        groups[j], groups[j + 1] = pair
                if _sum(units, groups[i].first, groups[i].stop) >= self.min:
                    break
        # A re-cut pair moves where the next chunk's overlap may come from: derive them all again.
        return self._with_overlaps(units, [g.own for g in groups])

    def _with_overlaps(self, units: list[_Unit], owns: list[int]) -> list[_Group]:
        """Groups whose own content starts at ``owns``, each with the overlap ``_pack`` gives it."""
        groups: list[_Group] = []
        for own, stop in zip(owns, [*owns[1:], len(units)]):
            first = own
            if groups:
                first = self._overlap_start(units, groups[-1].first, own)
                if _sum(units, first, stop) > self.max:
                    first = own
            groups.append(_Group(first, own, stop))
        return groups

    def _resplit(self, units: list[_Unit], a: _Group, b: _Group) -> tuple[_Group, _Group] | None:
        best = min(_sum(units, a.first, a.stop), _sum(units, b.first, b.stop))
        found = None
        for k in range(a.own + 1, b.stop):
            head = _sum(units, a.first, k)
            if head > self.max:
                break
            first = self._overlap_start(units, a.first, k)
            tail = _sum(units, first, b.stop)
            if tail > self.max:
                first, tail = k, _sum(units, k, b.stop)
            if tail <= self.max and min(head, tail) > best:
                best, found = min(head, tail), (_Group(a.first, a.own, k), _Group(first, k, b.stop))
        return found

    # ------------------------------------------------------------------ output
    def _make_chunk(self, doc: ParsedDocument, units: list[_Unit], own: int, ordinal: int,
                    seen: dict[str, int]) -> Chunk:
        text = doc.text
        start = _lstrip(text, units[0].start, units[-1].end)
        end = _rstrip(text, start, units[-1].end)
        body = text[start:end]
        own_start = _lstrip(text, units[own].start, units[own].end)
        occurrence = seen.get(body, 0)
        seen[body] = occurrence + 1
        overlap_tokens = sum(u.tokens for u in units[:own])
        return Chunk(
            id=make_chunk_id(doc.doc_id, body, occurrence),
            doc_id=doc.doc_id,
            text=body,
            start=start,
            end=end,
            # The section where the chunk's own (non-overlap) content starts: an overlap sentence
            # repeated from the previous subsection should not relabel the chunk.
            section=_section_at(doc.sections, own_start),
            page=doc.page_at(start),
            language=detect_language(body),
            tokens=sum(u.tokens for u in units),
            ordinal=ordinal,
            metadata=MappingProxyType({"content_start": own_start, "overlap_tokens": overlap_tokens,
                                       "occurrence": occurrence}),
        )


def chunk_document(doc: ParsedDocument, settings: Settings,
                   counter: TokenCounter) -> tuple[tuple[Chunk, ...], ChunkReport]:
    """One-off convenience; build a ``Chunker`` once to chunk many documents."""
    return Chunker(settings, counter).chunk(doc)


# ---------------------------------------------------------------------- helpers
def _blocks(doc: ParsedDocument) -> list[tuple[int, int]]:
    """Top-level blocks: spans of the sections at the smallest level present, and the text
    around them (before the first heading, or between sections that leave a gap)."""
    n = len(doc.text)
    bounds = {0, n}
    if doc.sections:
        top = min(s.level for s in doc.sections)
        for s in doc.sections:
            if s.level == top:
                bounds.update(min(max(x, 0), n) for x in (s.start, s.end))
    edges = sorted(bounds)
    return [(a, b) for a, b in zip(edges, edges[1:]) if doc.text[a:b].strip()]


def _run_words(runs: list[tuple[int, int]]) -> str:
    longest = max(b - a for a, b in runs)
    return f"holds {len(runs)} unbroken run(s) of up to {longest} characters (over {LONG_RUN}; cut by characters)"


def _tables_in(tables: tuple[Table, ...], a: int, b: int) -> list[Table]:
    """Tables inside [a, b), clipped to it, in order, later overlapping tables dropped."""
    out: list[Table] = []
    for t in sorted(tables, key=lambda t: (t.start, -t.end)):
        s, e = max(t.start, a), min(t.end, b)
        if s < e and (not out or s >= out[-1].end):
            out.append(Table(rows=t.rows, start=s, end=e, page=t.page))
    return out


def _lines(text: str, s: int, e: int) -> list[tuple[int, int]]:
    out = []
    pos = s
    while pos < e:
        nl = text.find("\n", pos, e)
        stop = e if nl < 0 else nl + 1
        if text[pos:stop].strip():
            out.append((pos, stop))
        elif out:  # a blank line stays with the row before it
            out[-1] = (out[-1][0], stop)
        pos = stop
    return out


def _section_at(sections: tuple[Section, ...], offset: int) -> tuple[str, ...]:
    best: Section | None = None
    for s in sections:
        if s.start <= offset < s.end and (best is None or (s.level, s.start) >= (best.level, best.start)):
            best = s
    return best.path if best else ()


def _sum(units: list[_Unit], a: int, b: int) -> int:
    return sum(u.tokens for u in units[a:b])


def _lstrip(text: str, s: int, e: int) -> int:
    while s < e and text[s].isspace():
        s += 1
    return s


def _rstrip(text: str, s: int, e: int) -> int:
    while e > s and text[e - 1].isspace():
        e -= 1
    return e
