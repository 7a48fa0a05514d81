"""SciFact in BEIR layout, read by path from ../shared/data (never copied): test qrels and queries."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "beir"


def load_qrels(query_ids=None) -> list:
    """ir-measures Qrels of the test split (optionally only these query ids)."""
    from ir_measures import Qrel

    rows = (line.split("\t") for line in (DATA / "qrels" / "test.tsv").read_text().splitlines()[1:])
    return [Qrel(q, d, int(s)) for q, d, s in rows if query_ids is None or q in query_ids]


def load_queries(query_ids=None) -> dict[str, str]:
    """query id → text (optionally only these ids)."""
    with open(DATA / "queries.jsonl", encoding="utf-8") as f:
        return {j["_id"]: j["text"] for j in map(json.loads, f) if query_ids is None or j["_id"] in query_ids}
