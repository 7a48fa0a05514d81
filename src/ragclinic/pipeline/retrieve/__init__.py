"""Retrieve layer: lexical (BM25), dense (e5), the learned questions' rankers (questions, question_terms) and hybrid
(convex or reciprocal rank fusion) retrievers; the scope's pre-filter (filters.py) and the judge's rerank. Its
public face (issue 54): what code outside the pipeline may use of it."""

from ragclinic.pipeline.retrieve import dense, hybrid, lexical, questions  # noqa: F401  (register the built-ins)
from ragclinic.pipeline.retrieve.base import RETRIEVERS, Retriever
from ragclinic.pipeline.retrieve.filters import resolve as resolve_scope
from ragclinic.pipeline.retrieve.rerank import rerank as judge_rerank
from ragclinic.pipeline.retrieve.hybrid import rrf
from ragclinic.store.kb import KnowledgeBase


def create_retriever(kb: KnowledgeBase, name: str | None = None) -> Retriever:
    """The retriever named in the settings (or ``name``); unknown names list the valid ones."""
    return RETRIEVERS.create(name or kb.settings.retriever, kb)


__all__ = ["RETRIEVERS", "Retriever", "create_retriever", "judge_rerank", "resolve_scope", "rrf"]
