"""What the generator is shown of a community passage (the graph's global step, pipeline/reason/graph.py marks it):
the sentences of its chunk that are the community's points."""

from __future__ import annotations

from ragclinic.text.sentences import split_sentences
from ragclinic.types import Passage


def point_excerpt(p: Passage) -> str | None:
    """What the generator is shown of a community passage: its points' sentences (None: not one)."""
    marks = [m for m in p.marks if m.startswith("points=")]
    if not marks or not marks[0][7:]:
        return None
    idx = [int(i) for i in marks[0][7:].split(",")]
    spans = split_sentences(p.chunk.text, language="zh" if p.chunk.language == "zh" else None)
    return " … ".join(" ".join(p.chunk.text[a:b].split()) for i, (a, b) in enumerate(spans) if i in idx)
