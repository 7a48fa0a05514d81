"""Evidence verification (issue 13, in progress): the constraints a question puts on its answer, checked
against a passage — features for the coming Verifier role (sufficiency, support, contradiction)."""
