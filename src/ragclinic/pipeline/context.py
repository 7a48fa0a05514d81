"""What every query layer of one run reads besides the state: the knowledge base, the settings, the model parts
and the retriever, built once by the runner (pipeline/runner.py) and handed to each layer — and the two ways a
layer reaches past the query order without importing what comes after it (issue 54): ``stage``, the reasoning
stage the layers call at their named points (pipeline/reason/stage.py), and ``search``, the retrieve, scope and gate
layers run again for other queries (generate's active retrieval asks for it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragclinic.config import Settings
from ragclinic.models.judge import Judge
from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import AskState

if TYPE_CHECKING:  # the roles' Protocols live with their layers, above this module
    from ragclinic.pipeline.generate.base import Generator
    from ragclinic.pipeline.retrieve.base import Retriever

Search = Callable[["RunContext", AskState], AskState]  # the state after retrieve, scope and gate ran again on it


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
    stage: Any = None  # the reasoning stage the layers call (pipeline/reason/stage.py; the runner gives it)
    search: Search | None = None  # retrieve → scope → gate again (the runner's; None: no second search)
