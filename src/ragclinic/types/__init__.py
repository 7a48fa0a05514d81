"""The core values every layer exchanges (frozen dataclasses): ``from ragclinic.types import X``.

data.py: documents, chunks, hits, passages, decisions, answers; scope.py: what a question may search;
ask.py: the request and the state a question carries through the query layers; findings.py: the doctor's record.
"""

from ragclinic.types.ask import AskRequest, AskState
from ragclinic.types.data import (EMPTY, Answer, Chunk, ChunkReport, Citation, Claim, Conflict, DocInfo, Exclusion,
                                  GateDecision, Hit, Page, ParseReport, Parsed, ParsedDocument, Passage, RecordError,
                                  Section, SourceFile, SourceScore, Table, make_chunk_id, make_doc_id, sha256_text)
from ragclinic.types.findings import Repair, Snapshot, Symptom
from ragclinic.types.scope import Scope

__all__ = ["EMPTY", "Answer", "AskRequest", "AskState", "Chunk", "ChunkReport", "Citation", "Claim", "Conflict",
           "DocInfo", "Exclusion", "GateDecision", "Hit", "Page", "ParseReport", "Parsed", "ParsedDocument", "Passage",
           "RecordError", "Repair", "Scope", "Section", "Snapshot", "SourceFile", "SourceScore", "Symptom", "Table",
           "make_chunk_id", "make_doc_id", "sha256_text"]
