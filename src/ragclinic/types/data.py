"""Frozen dataclasses that the layers exchange: documents, chunks, hits, passages, the gate's decision, answers.
Derive new values with ``dataclasses.replace``.

Offsets (``start``/``end``) are always character offsets into ``ParsedDocument.text`` with
``text[start:end]`` being the span, so a citation can point at the exact paragraph.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

EMPTY: Mapping[str, Any] = MappingProxyType({})


def make_doc_id(path: str, record_key: str = "") -> str:
    """Stable document id: a hash of the source identity (resolved path, and record key for JSONL)."""
    ident = path if not record_key else f"{path}#{record_key}"
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]


def make_chunk_id(doc_id: str, text: str, occurrence: int = 0) -> str:
    """Content-hash chunk id: text + source identity (+ occurrence, for text repeated in one document)."""
    h = hashlib.sha256(f"{doc_id}\0{occurrence}\0".encode("utf-8") + text.encode("utf-8"))
    return h.hexdigest()[:32]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SourceFile:
    """A file read once: the bytes every parser works from, hashed once."""

    path: Path  # resolved, absolute
    data: bytes
    sha256: str
    mtime: float
    size: int


@dataclass(frozen=True)
class Section:
    """A heading and the span it governs (heading line included)."""

    path: tuple[str, ...]  # heading path, outermost first
    level: int  # 1 = top level
    start: int
    end: int


@dataclass(frozen=True)
class Table:
    """A table: structured cells, plus the span of its Markdown rendering in the text."""

    rows: tuple[tuple[str, ...], ...]
    start: int
    end: int
    page: int | None = None


@dataclass(frozen=True)
class Page:
    number: int  # 1-based
    start: int
    end: int


@dataclass(frozen=True)
class ParsedDocument:
    doc_id: str
    path: str  # resolved source path
    record_key: str  # "" for whole-file documents; the record id for JSONL
    title: str
    text: str
    sections: tuple[Section, ...] = ()
    tables: tuple[Table, ...] = ()
    pages: tuple[Page, ...] = ()
    language: str = "en"  # "en", "zh", or "und"
    parser: str = ""
    sha256: str = ""  # of the parsed text
    mtime: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY)

    def page_at(self, offset: int) -> int | None:
        for p in self.pages:
            if p.start <= offset < p.end:
                return p.number
        return None


@dataclass(frozen=True)
class ParseReport:
    """Parse-layer quality figures for one document. Ratios are ``None`` when undefined."""

    doc_id: str
    path: str
    record_key: str
    parser: str
    characters: int
    pages: int
    empty_pages: tuple[int, ...]
    replacement_chars: int
    mojibake_hits: int
    garbled_ratio: float | None
    hyphen_joins: int
    hyphens_kept: int
    tables: int
    keyword_retention: float | None
    lost_keywords: tuple[str, ...]
    warnings: tuple[str, ...]
    hidden_chars: int = 0  # text a reader cannot see (left out of the index unless keep_hidden_text)
    instructions: int = 0  # planted instructions found: in the text (cut out of prompts) or in hidden text
    # pages read by OCR (parse/ocr.py): page, the engine's mean word confidence (0-100), the turn applied, characters
    ocr_pages: tuple[dict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Parsed:
    """What a parser yields per document."""

    document: ParsedDocument
    report: ParseReport


@dataclass(frozen=True)
class Chunk:
    id: str
    doc_id: str
    text: str
    start: int
    end: int
    section: tuple[str, ...]
    page: int | None
    language: str
    tokens: int
    ordinal: int  # position within the document
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class ChunkReport:
    doc_id: str
    chunks: int
    tokens_min: int
    tokens_p50: float
    tokens_p90: float
    tokens_max: int
    tokens_mean: float
    mid_sentence_ends: int  # expected 0, except chunks cut inside a reported over-long sentence
    overlong_sentences: int
    split_tables: int
    tiny_chunks: int
    duplicate_chunks: int
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RecordError:
    """A record inside a multi-document file (JSONL line) that could not be parsed; the rest are kept."""

    path: str
    location: str  # e.g. "line 12"
    reason: str


@dataclass(frozen=True)
class SourceScore:
    """How one retriever ranked a hit."""

    retriever: str  # "lexical", "dense", ...
    rank: int  # 1-based
    score: float  # that retriever's own score (BM25, cosine)


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk: the score it is ranked by (fused for hybrid) and how each retriever saw it."""

    chunk: Chunk
    score: float
    sources: tuple[SourceScore, ...]
    rowid: int  # the chunk's row in the knowledge base (index label)

    @property
    def retrievers(self) -> tuple[str, ...]:
        return tuple(s.retriever for s in self.sources)


# ---------------------------------------------------------------------------------------------- ask side


@dataclass(frozen=True)
class DocInfo:
    """What the scope policies and citations need to know about a hit's document."""

    doc_id: str
    path: str
    title: str
    tags: Mapping[str, str] = field(default_factory=lambda: EMPTY)


@dataclass(frozen=True)
class Conflict:
    """Two top passages from different documents that disagree on a value the question asks about."""

    kind: str  # "number", "date", "entity"
    chunk_a: str
    chunk_b: str
    values_a: tuple[str, ...]
    values_b: tuple[str, ...]
    sentence_a: str
    sentence_b: str


@dataclass(frozen=True)
class Passage:
    """A hit admitted to the context, numbered as the generator sees it ([n])."""

    n: int
    hit: Hit
    doc: DocInfo
    support: float = 0.0  # the gate's evidence score for the question (0..1)
    support_by: str = ""  # "lexical" or the judge's / verifier's model id
    marks: tuple[str, ...] = ()  # "conflict", "authority=official", ...
    support_why: str = ""  # what a verifier's score rested on ("the passage is about 2021; the question asks ...")

    @property
    def chunk(self) -> Chunk:
        return self.hit.chunk


@dataclass(frozen=True)
class Exclusion:
    chunk_id: str
    doc_id: str
    rule: str  # e.g. "version=latest"
    reason: str


@dataclass(frozen=True)
class GateDecision:
    route: str  # "answer", "refuse", "clarify"
    question_type: str  # "factual", "how-to", "comparison", "causal", "opinion", "other"
    evidence_score: float
    reason: str
    type_by: str = "rules"  # "rules" or "llm"
    false_premise: bool = False
    clarifying_question: str = ""
    path: str = "direct"  # issue 17: "direct", or "tools" (a plan over sql / calculator / search)
    path_why: str = ""
    reread: int = 0  # issue 52: the passage a second reading found the answer in, when that reading let it answer
    # the second reading's reply when it is that passage's own words (found whole, not cut off): the answer as
    # the model already gave it (generate/draft.py uses it instead of asking the model again)
    reread_reply: str = ""
    # issue 55: what the reasoning stage found across the passages, shown to the model as notes ("Named in more
    # than one document: …")
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.notes, list):  # read back from a trace's JSON
            object.__setattr__(self, "notes", tuple(self.notes))


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: str
    doc_id: str
    text: str
    path: str = ""
    title: str = ""


@dataclass(frozen=True)
class Claim:
    """One sentence of the answer and how its citations hold up."""

    text: str
    cited: tuple[int, ...]
    verdict: str  # "supported", "unsupported", "contradicted", "uncited", "invalid_citation"
    score: float  # support of the best cited passage (0..1)
    chunk_id: str = ""  # the passage that decides the verdict
    checked_by: str = "lexical"


@dataclass(frozen=True)
class Answer:
    text: str
    route: str
    question_type: str
    refused: bool
    citations: tuple[Citation, ...]
    claims: tuple[Claim, ...]
    confidence: float
    generator: str  # model id, "extractive" or "template"
    flags: tuple[str, ...] = ()  # violation phrases, invalid citations, fallbacks
    trace_id: str = ""
    # the Python API's extras (ragclinic.Clinic; not in to_json: `ask --json` carries them at its top level)
    symptoms: tuple[dict[str, Any], ...] = ()  # the doctor's findings
    repairs: tuple[dict[str, Any], ...] = ()  # the doctor's treatments, accepted or not
    model_calls: int = 0  # language-model calls made for this answer (0 for a replay or a cached answer)
    cached: bool = False  # answered from the answer cache
    plan: tuple[dict[str, Any], ...] = ()  # the tools path: each plan the model wrote ({attempt, text, steps, error})
    tools: tuple[dict[str, Any], ...] = ()  # the tools path: each call {step, name, input, output, seconds, error, cites}
    causal_chain: tuple[dict[str, Any], ...] = ()  # causal questions: the stated links, in causal order
    evidence_strength: str = ""  # causal questions: "strong", "limited", "conflicting", "none"
    # what the user must know beside the answer (an instruction removed, a global question answered from chunks,
    # the preferred side of a conflict), each a sentence in the question's language; never part of ``text``
    notes: tuple[str, ...] = ()

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Answer":
        """The inverse of ``to_json`` (a cached answer printed again)."""
        cites = tuple(Citation(c["n"], c["chunk_id"], c["doc_id"], c["text"], c.get("path", ""), c.get("title", ""))
                      for c in d.get("citations", ()))
        claims = tuple(Claim(**{**c, "cited": tuple(c.get("cited", ()))}) for c in d.get("claims", ()))
        return Answer(d["answer"], d["route"], d.get("question_type", ""), bool(d.get("refused")), cites, claims,
                      float(d.get("confidence", 0.0)), d.get("generator", ""), tuple(d.get("flags", ())),
                      d.get("trace_id", ""), tuple(d.get("symptoms", ())), tuple(d.get("repairs", ())), 0,
                      bool(d.get("cached", False)), tuple(d.get("plan", ())), tuple(d.get("tools", ())),
                      tuple(d.get("causal_chain", ())), d.get("evidence_strength", ""), tuple(d.get("notes", ())))

    def to_json(self) -> dict[str, Any]:
        """The `ragclinic ask --json` contract (extended, never renamed)."""
        return {"answer": self.text, "refused": self.refused, "route": self.route,
                "question_type": self.question_type,
                "citations": [{"n": c.n, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "text": c.text,
                               "path": c.path, "title": c.title} for c in self.citations],
                "confidence": round(self.confidence, 4), "trace_id": self.trace_id,
                "claims": [{**asdict(c), "cited": list(c.cited)} for c in self.claims], "flags": list(self.flags),
                "generator": self.generator, "plan": [dict(p) for p in self.plan], "tools": [dict(t) for t in self.tools],
                "causal_chain": [dict(c) for c in self.causal_chain], "evidence_strength": self.evidence_strength,
                "notes": list(self.notes)}
