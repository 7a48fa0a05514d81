"""The configured language model and embedder, by name. Importing the built-in backends here registers them
(the same path plugins use); a plugin registers into the role's registry (llm.py, embedder.py, judge.py)."""

from __future__ import annotations

from ragclinic.models import e5, fake, fake_llm, judge, local, openai_compat, wordllama  # noqa: F401  (registers them)
from ragclinic.models.embedder import EMBEDDERS, Embedder
from ragclinic.models.llm import LANGUAGE_MODELS, LanguageModel


def create_language_model(name: str, settings) -> LanguageModel | None:
    """The configured language model; None for ``none`` (extractive answers, no model)."""
    if name == "none":
        return None
    return LANGUAGE_MODELS.create(name, settings)


def create_embedder(name: str) -> Embedder | None:
    """The embedder a knowledge base is configured with; None for the lexical-only mode."""
    if name == "none":
        return None
    return EMBEDDERS.create(name)
