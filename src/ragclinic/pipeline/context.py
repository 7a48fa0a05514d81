"""What every query layer of one run reads besides the state: the knowledge base, the settings, the model parts
and the retriever, built once by the runner (pipeline/runner.py) and handed to each layer."""

from __future__ import annotations

from dataclasses import dataclass

from ragclinic.config import Settings
from ragclinic.models.judge import Judge
from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.pipeline.generate.base import Generator
from ragclinic.pipeline.retrieve.base import Retriever
from ragclinic.store.kb import KnowledgeBase


@dataclass(frozen=True)
class RunContext:
    kb: KnowledgeBase
    settings: Settings
    lm: LanguageModel | None  # None: extractive answers (no model, or it crashed mid-question)
    judge: Judge | None
    generator: Generator | None
    retriever: Retriever | None = None  # the request's retriever (None: a run that starts after retrieve)
    on_token: TokenCallback | None = None  # the streamed answer
    flags: tuple[str, ...] = ()  # what the answer must say about this run (the model unavailable, crashed)
