"""Contextual chunk headers: what is embedded and lexically indexed for a chunk.

A chunk cut from the middle of a document often never names its subject ("The effect was larger in
women..."). With ``chunk_context`` on, the indexes see the document title and the chunk's section path
on a first line, unless the chunk already starts with them. The chunk's own text (what is cited, with
its offsets) is unchanged; only the index input differs.
"""

from __future__ import annotations

from collections.abc import Sequence


def index_text(text: str, title: str, section: Sequence[str], enabled: bool = True) -> str:
    if not enabled:
        return text
    head = text[:300]
    parts: list[str] = []
    for part in [title, *section]:
        part = " ".join(part.split())
        if part and part not in head and part not in parts:
            parts.append(part)
    return (" › ".join(parts) + "\n" + text) if parts else text
