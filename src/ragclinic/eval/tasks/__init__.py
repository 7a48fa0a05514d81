"""Evaluation tasks: each takes a loaded dataset (and a knowledge base or models) and returns metrics."""
