"""Clarifications remembered per user (issue 17 §1): once a user has said which sense or referent an ambiguous
question meant, the same ambiguity is not asked about again — the reply is merged into the question as if the
user had typed it, and the answer says it reused one.

One SQLite file beside the knowledge base (``clarifications.sqlite3``), keyed by the owner (the CLI's login
user, the server's API key name — a conversation is one owner's sequence of questions) and the ambiguity:
the set of sense documents for two readings of a name (the same "Mercury" planet/element pair, whatever words
the question wraps it in), else the normalised question (a pronoun or a lone term means something else in
another question). A remembered reply whose sense documents are gone no longer matches (their ids are the key).
A file that cannot be opened or written (read-only folder, full disk) is skipped with a warning by the caller:
the user is then simply asked again.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path

from ragclinic.store.answer_cache import normalise

FILE = "clarifications.sqlite3"
MAX_PER_OWNER = 200  # the oldest go first

_SCHEMA = """
CREATE TABLE IF NOT EXISTS clarifications (
    owner TEXT NOT NULL, key TEXT NOT NULL, question TEXT NOT NULL, clarifying_question TEXT NOT NULL,
    reply TEXT NOT NULL, debug_round_id TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (owner, key));
"""


def ambiguity_key(question: str, ambiguity: Mapping) -> str:
    """What makes two ambiguous questions the same ambiguity (see the module's docstring); ``ambiguity`` is the
    gate's ``Ambiguity.to_json()``."""
    kind = str(ambiguity.get("ambiguity_type", ""))
    senses = ambiguity.get("senses") or ()
    if kind == "polysemy" and senses:
        return "senses:" + ",".join(sorted(str(s.get("doc_id", "")) for s in senses))
    return f"{kind or 'question'}:{normalise(question)}"


class ClarificationMemory:
    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / FILE
        self.conn = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False)
        self.conn.executescript(_SCHEMA)

    def recall(self, owner: str, key: str) -> dict | None:
        """``{reply, question, clarifying_question, debug_round_id, at}`` the owner gave for this ambiguity."""
        row = self.conn.execute("SELECT reply, question, clarifying_question, debug_round_id, at FROM clarifications"
                                " WHERE owner = ? AND key = ?", (owner, key)).fetchone()
        if row is None:
            return None
        return dict(zip(("reply", "question", "clarifying_question", "debug_round_id", "at"), row))

    def remember(self, owner: str, key: str, *, question: str, clarifying_question: str, reply: str,
                 debug_round_id: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO clarifications VALUES (?, ?, ?, ?, ?, ?, ?)",
                              (owner, key, question, clarifying_question, reply, debug_round_id, time.time()))
            self.conn.execute("DELETE FROM clarifications WHERE owner = ? AND key NOT IN (SELECT key FROM "
                              "clarifications WHERE owner = ? ORDER BY at DESC LIMIT ?)",
                              (owner, owner, MAX_PER_OWNER))

    def forget(self, owner: str) -> int:
        """Drop everything the owner said (the number of clarifications dropped)."""
        with self.conn:
            return self.conn.execute("DELETE FROM clarifications WHERE owner = ?", (owner,)).rowcount

    def close(self) -> None:
        self.conn.close()
