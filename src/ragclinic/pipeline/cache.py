"""The semantic answer cache in front of a pipeline (store/answer_cache.py holds the entries and the match rule).

``AnswerCacheFront(kb, settings)`` looks a question up before anything runs — the question's e5 vector is the one dense
retrieval would compute anyway (the embedder keeps the last few) — and keeps the ``ask --json`` object of an
answer afterwards. Answers that are not worth repeating are not kept: a crashed or timed-out model's extractive
fallback, a clarifying question. A cache that cannot be opened or written (read-only folder, full disk) is
skipped with a warning: the answer never depends on it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ragclinic.config import Settings
from ragclinic.store.answer_cache import AnswerCache, CacheKey
from ragclinic.store.kb import KnowledgeBase
from ragclinic.text.lang import detect_language

_NOT_KEPT_FLAGS = ("llm_crashed", "llm_unavailable", "truncated")


class AnswerCacheFront:
    def __init__(self, kb: KnowledgeBase, settings: Settings, *, enabled: bool | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        """The cache of the answers from ``kb`` under ``settings``; ``enabled``: None follows ``answer_cache``."""
        self.kb, self.settings, self.warn = kb, settings, warn
        on = settings.answer_cache if enabled is None else enabled
        self.cache: AnswerCache | None = None
        if on:
            try:
                self.cache = AnswerCache(kb.folder, settings.answer_cache_threshold)
            except (sqlite3.Error, OSError) as e:
                self._warn(f"answer cache off: cannot open {kb.folder}: {e}")

    def _warn(self, msg: str) -> None:
        if self.warn:
            self.warn(msg)

    def _key(self, question: str, scope: dict[str, str] | None, doctor: bool, version: int | None = None) -> CacheKey:
        return CacheKey.of(self.kb.db.version if version is None else version, scope, detect_language(question),
                           self.settings, doctor)

    def _vector(self, question: str):
        emb = self.kb.embedder
        return None if emb is None else emb.embed_queries([question])[0]

    def lookup(self, question: str, scope: dict[str, str] | None, doctor: bool) -> dict | None:
        """The cached ``ask --json`` object with ``cached: true``, its similarity and lookup time; or None."""
        if self.cache is None:
            return None
        t0 = time.perf_counter()
        try:
            hit = self.cache.lookup(self._key(question, scope, doctor), question, self._vector(question))
        except sqlite3.Error as e:
            self._warn(f"answer cache skipped: {e}")
            return None
        if hit is None:
            return None
        payload, cos = hit
        return {**payload, "cached": True, "cache": {"similarity": round(cos, 4), "question": payload.get(
            "cache", {}).get("question", ""), "ms": round((time.perf_counter() - t0) * 1000, 2)}}

    def keep(self, question: str, scope: dict[str, str] | None, doctor: bool, payload: dict,
             version: int | None = None) -> dict:
        """``payload`` with ``cached: false``, stored for the next near-identical question when worth it — under
        ``version`` of the knowledge base when given (the one the answer was given at), else the current one."""
        payload = {**payload, "cached": False}
        if self.cache is None or payload.get("route") == "clarify" or any(
                str(f).startswith(_NOT_KEPT_FLAGS) for f in payload.get("flags", ())):
            return payload
        try:
            stored = {**payload, "cache": {"question": question}}
            self.cache.store(self._key(question, scope, doctor, version), question, self._vector(question), stored)
        except (sqlite3.Error, OSError) as e:
            self._warn(f"answer not cached: {e}")
        return payload

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
