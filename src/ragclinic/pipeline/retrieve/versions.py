"""Versions of one document: which are superseded (the newest-version-only rule, ``version=latest``), resolved with
the scope's filters before the search (retrieve/filters.py). See scope/policies.py for the rule's whole story."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence


def version_key(value: str) -> tuple:
    parts = re.findall(r"\d+|[^\d.\-_ ]+", value.strip().lower().lstrip("v"))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


TENANT_TAG = "tenant"  # the tag a server key's tenant is (server/auth.py)


def family_of(doc_id: str, title: str, tags: Mapping[str, str]) -> str | None:
    if tags.get("family"):
        return "family:" + tags["family"]
    if "version" in tags and title.strip():
        return "title:" + title.strip().lower()
    return None


def superseded(rows: Sequence[tuple[str, str, Mapping[str, str]]]) -> dict[str, str]:
    """doc_id → why it is excluded, for every document that a newer version of its family replaces.

    ``rows``: (doc_id, title, tags). Documents of one family without a version tag are never excluded, and a
    family is one tenant's: another tenant's higher version of the same title never hides a document (issue 32).
    """
    families: dict[tuple[str, str], list[tuple[tuple, str, str]]] = defaultdict(list)
    for doc_id, title, tags in rows:
        fam = family_of(doc_id, title, tags)
        if fam is not None and "version" in tags:
            key = (str(tags.get(TENANT_TAG, "")), fam)
            families[key].append((version_key(str(tags["version"])), str(tags["version"]), doc_id))
    out: dict[str, str] = {}
    for (_, fam), members in families.items():
        newest = max(m[0] for m in members)
        newest_label = next(m[1] for m in members if m[0] == newest)
        for key, label, doc_id in members:
            if key != newest:
                out[doc_id] = f"version {label} is superseded by version {newest_label} ({fam.split(':', 1)[1]})"
    return out
