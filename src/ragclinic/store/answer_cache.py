"""The semantic answer cache: a repeated or near-identical question is answered from the answer it got before.

One SQLite file beside the knowledge base (``answer-cache.sqlite3``). An entry is keyed by what decides an
answer — the knowledge base version, the scope, the question's language and a fingerprint of the settings that
shape answers (model, judge, doctor on/off, top_k, ...) — and found by the question: the same text after
normalisation (case, width, spaces, closing punctuation), or an e5 query vector with cosine ≥ ``threshold``
*and* the same content terms (a polite opener, "exactly" or a word order aside), numbers and question word.
The vector alone is not enough: e5 puts a question with one name swapped for another at cosine ≥ 0.97 in
half the cases, and other questions about the same article above 0.97 in 1.4% (bench/cache_threshold_bench.py,
bench/RESULTS.md); a dropped or added word is a dropped or added constraint. Known limit: the terms are a set,
so "Did A beat B?" and "Did B beat A?" would count as the same question. A knowledge base version change makes every older entry unreachable (and
the next store deletes them): a changed document never gets a stale answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragclinic.text.support import content_terms, numbers

FILE = "answer-cache.sqlite3"
MAX_ENTRIES = 5000  # per knowledge base version; the oldest go first
# The settings that do not change an answer (paths, speed and telemetry knobs) are left out of the key.
_NOT_ANSWER_SHAPING = frozenset({"kb", "cache_dir", "llm_threads", "llm_call_timeout", "llm_cpu_variant",
                                 "llm_isolation", "llm_prefix_cache", "llm_hidden_capture", "answer_cache", "answer_cache_threshold", "openai_api_key",
                                 "openai_timeout", "openai_max_retries", "llm_warm_seconds",
                                 # the server's request bounds and browser side (issue 32): a refused request is
                                 # never answered, so they shape no answer — and `serve --allowed-host` must not
                                 # stop the server sharing cached answers with the CLI
                                 "allowed_hosts", "session_hours", "login_failures_max", "login_failures_window_s",
                                 "max_scope_keys", "max_scope_key_chars", "max_scope_value_chars", "max_chat_messages",
                                 "max_chat_message_chars", "max_feedback_note_chars", "max_upload_files",
                                 "max_upload_name_bytes", "parse_timeout_s", "repair_queue_max", "repair_wait_s"})
# Words that make a question politer or more emphatic, not another question (after text.support's stopwords).
FILLERS = frozenset({"exact", "exactly", "precis", "precisely", "me", "us", "just", "actual", "actually", "briefli",
                     "briefly", "quick", "quickly", "kind", "kindly", "一下", "告诉", "知道", "请", "想", "想知道",
                     "问", "问一下", "具体", "到底", "究竟"})
_ASKS = re.compile(r"\b(who|whom|whose|what|which|when|where|why|how many|how much|how long|how)\b|"
                   r"谁|什么|哪|何时|几时|多少|几|为什么|为何|怎么|如何", re.I)


@dataclass(frozen=True)
class CacheKey:
    kb_version: int
    scope: str  # the scope filters, canonical JSON
    language: str
    settings: str  # fingerprint of the answer-shaping settings

    @staticmethod
    def of(kb_version: int, scope: dict[str, str] | None, language: str, settings: Any, doctor: bool) -> "CacheKey":
        dump = {k: v for k, v in settings.model_dump(mode="json").items() if k not in _NOT_ANSWER_SHAPING}
        dump["doctor"] = doctor
        digest = hashlib.sha256(json.dumps(dump, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return CacheKey(kb_version, json.dumps(sorted((scope or {}).items())), language, digest)


def normalise(question: str) -> str:
    """Case, full-width forms, runs of spaces and closing punctuation do not make another question."""
    q = unicodedata.normalize("NFKC", question).casefold()
    q = re.sub(r"\s+", " ", q).strip()
    return re.sub(r"[\s?？!！.。,，;；:：]+$", "", q)


def same_constraints(a: str, b: str) -> bool:
    """The same content terms (fillers aside), numbers and question word: a near-identical question may not ask
    about another year, another name or one constraint more or less."""
    return (numbers(a) == numbers(b) and _asks(a) == _asks(b)
            and content_terms(a) - FILLERS == content_terms(b) - FILLERS)


def _asks(q: str) -> set[str]:
    return {m.group().lower() for m in _ASKS.finditer(q)}


class AnswerCache:
    def __init__(self, folder: Path, threshold: float) -> None:
        self.path = Path(folder) / FILE
        self.threshold = threshold
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS answers (id INTEGER PRIMARY KEY, kb_version INTEGER, "
                         "scope TEXT, language TEXT, settings TEXT, normalised TEXT, question TEXT, vector BLOB, "
                         "answer TEXT, created REAL)")
        self._db.execute("CREATE INDEX IF NOT EXISTS answers_key ON answers (kb_version, scope, language, settings)")

    def close(self) -> None:
        self._db.close()

    def lookup(self, key: CacheKey, question: str, vector: np.ndarray | None) -> tuple[dict, float] | None:
        """(the stored answer, cosine; 1.0 for the same normalised text), or None."""
        rows = self._db.execute("SELECT normalised, question, vector, answer FROM answers WHERE kb_version=? AND "
                                "scope=? AND language=? AND settings=? ORDER BY id DESC",
                                (key.kb_version, key.scope, key.language, key.settings)).fetchall()
        norm = normalise(question)
        for n, _, _, answer in rows:
            if n == norm:
                return json.loads(answer), 1.0
        if vector is None:
            return None
        best = None
        for _, q, blob, answer in rows:
            if blob is None:
                continue
            cos = float(np.frombuffer(blob, np.float32) @ vector)
            if cos >= self.threshold and same_constraints(q, question) and (best is None or cos > best[1]):
                best = (answer, cos)
        return (json.loads(best[0]), best[1]) if best else None

    def store(self, key: CacheKey, question: str, vector: np.ndarray | None, answer: dict) -> None:
        blob = None if vector is None else np.asarray(vector, np.float32).tobytes()
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM answers WHERE kb_version < ?", (key.kb_version,))
            self._db.execute("INSERT INTO answers (kb_version, scope, language, settings, normalised, question, "
                             "vector, answer, created) VALUES (?,?,?,?,?,?,?,?,?)",
                             (key.kb_version, key.scope, key.language, key.settings, normalise(question), question,
                              blob, json.dumps(answer, ensure_ascii=False), time.time()))
            self._db.execute("DELETE FROM answers WHERE id NOT IN (SELECT id FROM answers ORDER BY id DESC LIMIT ?)",
                             (MAX_ENTRIES,))
