"""Importing this module registers the built-in model backends (the same path plugins use)."""

from ragclinic.models import e5, fake, wordllama  # noqa: F401
