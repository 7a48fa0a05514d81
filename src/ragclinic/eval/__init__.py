"""The evaluation harness (issue 5): dataset loaders so far."""
