"""Chunk layer: parsed documents to sentence-aligned, token-bounded chunks with a quality report."""

from ragclinic.ingest.chunk.chunker import Chunker, chunk_document
from ragclinic.ingest.chunk.tokens import TOKEN_COUNTERS, TokenCounter

__all__ = ["Chunker", "chunk_document", "TokenCounter", "TOKEN_COUNTERS"]
