"""Importing this module registers the built-in model backends (the same path plugins use)."""

from ragclinic.models import e5, fake, fake_llm, judge, llama, openai_compat, wordllama  # noqa: F401
