"""The ``model`` extractor and summarizer: the language model reads each chunk and writes typed entities and typed
relations as JSON, checked against a schema (pydantic); community summaries are written by it over the extractive
summary's sentences, citing them.

The system turn (instructions + one worked example) is the same for every chunk, so its KV state is computed once
(models/llama.py keeps it). Each item is checked against the schema: a reply cut off by the token limit keeps its
complete items, a type outside the six becomes ``concept`` (or the type a known synonym names), an item that still
fails is dropped (``ModelExtractor.repaired`` counts these); a reply with no valid entity is extracted by the fast
rules instead (``ModelExtractor.fallbacks``): the graph stays complete either way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from ragclinic.graph.communities import extractive_summary
from ragclinic.graph.extract import _describe, extract_chunks, normalise
from ragclinic.models.llm import Message
from ragclinic.store.graph import ChunkGraph, Mention, Point, Relation
from ragclinic.text.sentences import split_sentences

TYPES = ("person", "organisation", "concept", "technology", "event", "location")
EXTRACT_TOKENS = 400
SUMMARY_TOKENS = 160
PREFILL = '{"entities": [{"name": "'


class _Entity(BaseModel):
    name: str = Field(min_length=1, max_length=80)
    type: Literal["person", "organisation", "concept", "technology", "event", "location"]


class _Relation(BaseModel):
    source: str = Field(min_length=1, max_length=80)
    target: str = Field(min_length=1, max_length=80)
    relation: str = Field(min_length=1, max_length=40)
    description: str = Field(default="", max_length=300)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class Extraction(BaseModel):
    """The schema a reply is checked against."""

    entities: list[_Entity] = Field(max_length=30)
    relations: list[_Relation] = Field(default_factory=list, max_length=30)


SYSTEM = """You extract a knowledge graph from a passage. Reply with one JSON object and nothing else:
{"entities": [{"name": ..., "type": ...}], "relations": [{"source": ..., "target": ..., "relation": ..., "description": ..., "confidence": ...}]}
- type is one of: person, organisation, concept, technology, event, location.
- Use each entity's full name as the passage writes it; replace pronouns (he, she, it, they, 他, 她, 它, 他们) by the entity they refer to.
- At most 10 entities, the most important ones, and at most 8 relations.
- A relation links two of the entities; relation is a short verb phrase; description is one short sentence from the passage's facts; confidence is between 0 and 1.
- Write names and descriptions in the passage's language.

Example passage: Maria Lund joined Arctic Cables in 2019. She now leads its cable-laying project in Tromso.
Example reply: {"entities": [{"name": "Maria Lund", "type": "person"}, {"name": "Arctic Cables", "type": "organisation"}, {"name": "cable-laying project", "type": "event"}, {"name": "Tromso", "type": "location"}], "relations": [{"source": "Maria Lund", "target": "Arctic Cables", "relation": "joined", "description": "Maria Lund joined Arctic Cables in 2019.", "confidence": 0.95}, {"source": "Maria Lund", "target": "cable-laying project", "relation": "leads", "description": "Maria Lund leads Arctic Cables' cable-laying project.", "confidence": 0.9}, {"source": "cable-laying project", "target": "Tromso", "relation": "located in", "description": "The cable-laying project is in Tromso.", "confidence": 0.9}]}"""


_TYPE_WORDS = {"organization": "organisation", "company": "organisation", "institution": "organisation",
               "place": "location", "country": "location", "city": "location", "people": "person",
               "human": "person", "tool": "technology", "method": "technology", "software": "technology",
               "device": "technology", "product": "technology", "incident": "event", "process": "event"}


def parse_reply(text: str) -> tuple[Extraction, int]:
    """The reply (prefill included) as an Extraction, and how many items were repaired or dropped; ValueError when
    nothing usable is in it. A reply cut off by the token limit keeps its complete items; an entity type outside
    the six becomes ``concept`` (a known synonym its type); an item that still fails the schema is dropped."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the reply")
    obj, repaired = _decode(text[start:])
    if not isinstance(obj, dict) or not isinstance(obj.get("entities"), list):
        raise ValueError("does not fit the schema: no entities list")
    entities, relations, bad = [], [], repaired
    for item in obj["entities"][:30]:
        if isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"] not in TYPES:
            item = {**item, "type": _TYPE_WORDS.get(item["type"].lower().strip(), "concept")}
            bad += 1
        try:
            entities.append(_Entity.model_validate(item))
        except ValidationError:
            bad += 1
    for item in (obj.get("relations") or [])[:30] if isinstance(obj.get("relations"), list) else []:
        try:
            relations.append(_Relation.model_validate(item))
        except ValidationError:
            bad += 1
    if not entities:
        raise ValueError("does not fit the schema: no valid entity")
    return Extraction(entities=entities, relations=relations), bad


def _decode(text: str) -> tuple[object, int]:
    """JSON from ``text``; a reply cut off mid-way is closed after its last complete item (→ 1 repair)."""
    try:
        return json.JSONDecoder().raw_decode(text)[0], 0
    except json.JSONDecodeError as e:
        first = e
    ends = [i for i, ch in enumerate(text) if ch == "}"][::-1][:40]
    for end in ends:
        for tail in ("]}", "}]}", "]}]}"):
            try:
                return json.loads(text[:end + 1] + tail), 1
            except json.JSONDecodeError:
                continue
    raise ValueError(f"not JSON: {first}")


class ModelExtractor:
    def __init__(self, model) -> None:
        self.model = model
        self.fallbacks = 0  # replies with nothing usable: extracted by the rules instead
        self.repaired = 0  # items repaired (a reply cut off, a type outside the six) or dropped
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def extract_chunks(self, chunks: Sequence[tuple[str, str, str, str]]) -> list[ChunkGraph]:
        return [self.extract_one(*c) for c in chunks]

    def extract_one(self, chunk_id: str, doc_id: str, text: str, language: str) -> ChunkGraph:
        msgs = [Message("system", SYSTEM), Message("user", f"Passage: {' '.join(text.split())}"),
                Message("assistant", PREFILL)]
        done = self.model.chat(msgs, max_tokens=EXTRACT_TOKENS, temperature=0.0)
        self.calls += 1
        self.prompt_tokens += done.prompt_tokens
        self.completion_tokens += done.completion_tokens
        reply = done.text if done.text.lstrip().startswith("{") else PREFILL + done.text
        try:
            found, repaired = parse_reply(reply)
        except ValueError:
            self.fallbacks += 1
            return extract_chunks([(chunk_id, doc_id, text, language)])[0]
        self.repaired += repaired
        return to_chunk_graph(chunk_id, doc_id, text, language, found)


def to_chunk_graph(chunk_id: str, doc_id: str, text: str, language: str, found: Extraction) -> ChunkGraph:
    """Entities → mentions (in the sentence that names them, else the first); relations between two of them."""
    spans = split_sentences(text, language="zh" if language == "zh" else None)
    sentences = [text[a:b].lower() for a, b in spans] or [text.lower()]
    mentions, keys = [], {}
    for e in found.entities:
        key = normalise(e.name)
        if len(key) < 2 or key in keys:
            continue
        keys[key] = e.name
        where = next((i for i, s in enumerate(sentences) if e.name.lower() in s), 0)
        mentions.append(Mention(key, e.name.strip(), e.type, where))
    relations = []
    for r in found.relations:
        a, b = normalise(r.source), normalise(r.target)
        if a in keys and b in keys and a != b:
            relations.append(Relation(a, b, r.relation.strip(), _describe(r.description or r.relation),
                                      1.0, float(r.confidence)))
    return ChunkGraph(chunk_id, doc_id, tuple(mentions), tuple(relations))


SUMMARY_SYSTEM = ("You summarise what numbered sentences say about a group of related entities. Write two or three "
                  "sentences in the sentences' language. End each sentence with the number of the sentence it rests on "
                  "in brackets, like [2]. Use only what the sentences say.")


def summarizer(model):
    """(title, names, points) → (summary, model id): the model's summary, its [n] the points' numbers; the
    extractive summary when the reply cites none of them."""
    def summarize(title: str, names: list[str], points: list[Point]) -> tuple[str, str]:
        if not points:
            return extractive_summary(title, points), "extractive"
        listed = "\n".join(f"[{i}] {p.text}" for i, p in enumerate(points, start=1))
        msgs = [Message("system", SUMMARY_SYSTEM),
                Message("user", f"Entities: {', '.join(names[:8])}\nSentences:\n{listed}")]
        done = model.chat(msgs, max_tokens=SUMMARY_TOKENS, temperature=0.0)
        text = " ".join(done.text.split())
        cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
        if not text or not cited or not cited <= set(range(1, len(points) + 1)):
            return extractive_summary(title, points), "extractive"
        return f"{title}: {text}", getattr(model, "model_id", "model")

    return summarize
