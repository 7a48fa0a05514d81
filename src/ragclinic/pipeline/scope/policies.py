"""Scope policies: newest version only (a pre-filter, like the metadata filters: retrieve/versions.py, re-exported
here) and authority preference.

Versions: documents are versions of one another when they share a ``family`` tag, or — without one —
carry a ``version`` tag and the same title, within one tenant (the ``tenant`` tag). Within a family only the
newest version stays searchable; the others are excluded before the search under the rule ``version=latest``
(a ``--scope version=N`` filter picks an older version explicitly, since filters run first). Versions compare
numerically part by part ("1.10" > "1.9"), falling back to text.

Authority: the ``authority`` tag, a number or a named level from ``authority_levels``; a hit's score is
multiplied by ``1 + authority_boost × level / max_level`` and the hits are re-sorted, so a more
authoritative source wins a near tie but cannot lift an irrelevant passage over a relevant one. Like versions,
authority compares documents of one tenant: another tenant's hits keep their places (issue 32).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ragclinic.pipeline.retrieve.versions import TENANT_TAG, family_of, superseded, version_key
from ragclinic.types import DocInfo, Hit

__all__ = ["TENANT_TAG", "apply_authority", "authority_level", "family_of", "superseded", "version_key"]


def authority_level(tags: Mapping[str, str], tag: str, levels: Mapping[str, float]) -> float | None:
    raw = tags.get(tag)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        return levels.get(str(raw).lower())


def apply_authority(hits: Sequence[Hit], docs: Mapping[str, DocInfo], tag: str, levels: Mapping[str, float],
                    boost: float) -> tuple[list[Hit], int]:
    """Hits re-sorted with the authority boost; also returns how many hits changed position. The boost compares
    documents of one tenant (the ``tenant`` tag; untagged documents are one owner): the places each tenant's hits
    hold in the search's order stay that tenant's, re-sorted among themselves, so no tenant's tag lifts its
    documents over another's (issue 32)."""
    top = max([*levels.values(), 1.0])
    owners: dict[str, list[tuple[float, int, Hit]]] = defaultdict(list)
    for i, h in enumerate(hits):
        doc = docs.get(h.chunk.doc_id)
        level = authority_level(doc.tags, tag, levels) if doc else None
        factor = 1.0 + boost * max(0.0, min(level, top)) / top if level is not None else 1.0
        owner = str(doc.tags.get(TENANT_TAG, "")) if doc else ""
        owners[owner].append((-(h.score * factor), i, replace(h, score=h.score * factor)))
    placed: list[tuple[int, int, Hit]] = []  # (place, original position, hit)
    for group in owners.values():
        places = [i for _, i, _ in group]
        placed += [(place, i, h) for place, (_, i, h) in zip(places, sorted(group, key=lambda t: (t[0], t[1])))]
    placed.sort(key=lambda t: t[0])
    moved = sum(1 for place, i, _ in placed if place != i)
    return [h for _, _, h in placed], moved
