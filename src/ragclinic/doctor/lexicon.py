"""The words the doctor counts: how many chunks use a word, and how many chunks there are (issue 32).

The lexical index holds every tenant's chunks. For a question whose request enforces a tenant (a server key's),
counting over the whole index would tell the tenant whether a word occurs in documents it cannot read — the term
check's "never occur in the corpus" and its score, and the key terms a rewrite picks (their idf). So for such a
question the corpus is the tenant's own documents: a word is counted in the chunks its tags admit. A key without a
tenant (the admin, the library, the CLI) counts over the whole index, as before.
"""

from __future__ import annotations

from typing import Any

from ragclinic.pipeline.retrieve import resolve_scope as resolve
from ragclinic.types import Scope


class Lexicon:
    """``doc_freq(term)`` and ``len()`` over the whole lexical index (``allowed`` None) or over the chunk rows
    ``allowed``. Counts are cached: a detector and the treatments ask about the same words."""

    def __init__(self, lexical: Any, allowed: set[int] | None = None) -> None:
        self.lexical = lexical
        self.allowed = None if allowed is None else set(allowed)
        self._df: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.lexical) if self.allowed is None else len(self.allowed)

    def doc_freq(self, term: str) -> int:
        """Chunks (of ``allowed``) that use the analysed ``term``."""
        if self.allowed is None:
            return self.lexical.doc_freq(term)
        if term not in self._df:
            self._df[term] = self._count(term)
        return self._df[term]

    def _count(self, term: str) -> int:
        # The cheaper of two exact counts: every chunk of the index that uses the word, kept if admitted; or the
        # search's pre-filter over the admitted chunks (building it costs ~0.5 µs a chunk: 25 ms for 50,000).
        anywhere = self.lexical.doc_freq(term)  # may still count deleted chunks: an upper bound
        if anywhere == 0 or not self.allowed:
            return 0
        if anywhere <= len(self.allowed):
            return sum(1 for rowid, _ in self.lexical.search([term], anywhere) if rowid in self.allowed)
        return len(self.lexical.search([term], len(self.allowed), sorted(self.allowed)))


def lexicon_of(kb: Any, enforced: tuple[tuple[str, str], ...]) -> Lexicon | None:
    """The tenant's chunks when the request enforces tags, else the whole index; None without a knowledge base or
    a lexical index."""
    lexical = kb.lexical_current() if kb is not None else None
    if lexical is None:
        return None
    return Lexicon(lexical, resolve(kb.db, Scope().require(tuple(enforced)), newest_only=False).allowed
                   if enforced else None)
