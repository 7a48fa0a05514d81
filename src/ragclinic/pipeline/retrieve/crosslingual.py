"""A question in another language than the documents: searched in theirs too (issue 35 item 3).

e5 is multilingual, but a Chinese question over the English PostgreSQL manual finds the answering chunk in the
hybrid top 5 for 2 of 12 dev questions, against 7 of 12 for the same questions asked in English, and 9 of 12 with
the local model's translation searched first (bench/RESULTS.md): the lexical index shares no words with the
question and the dense match is weak. When the question's language has under ``CORPUS_SHARE`` of the knowledge
base's chunks and another language has most of them, the model translates the question (one short call, ~3.5 s
here; commands and numbers kept as written) and both are searched, merged by turns. A knowledge base in the
question's language, or a run without a model, searches the question alone.
"""

from __future__ import annotations

import threading

from ragclinic.models.llm import LanguageModel, Message
from ragclinic.text.lang import language_of

CORPUS_SHARE = 0.2  # under this share of the chunks, the question's language is not the documents'
MAJORITY = 0.5
MAX_TOKENS = 96
NAMES = {"en": "English", "zh": "Simplified Chinese"}

_lock = threading.Lock()
_shares: dict[tuple[str, int], dict[str, float]] = {}


def corpus_languages(db) -> dict[str, float]:
    """The share of the knowledge base's chunks in each language (by their document's language, counted through
    the doc_id index: no chunk text is read), cached per knowledge-base version."""
    key = (str(getattr(db, "path", id(db))), db.version)
    with _lock:
        if key in _shares:
            return _shares[key]
    languages = dict(db.conn.execute("SELECT doc_id, language FROM documents").fetchall())
    counts: dict[str, int] = {}
    for doc_id, n in db.conn.execute("SELECT doc_id, COUNT(*) FROM chunks GROUP BY doc_id"):  # the chunks_doc index
        lang = (languages.get(doc_id) or "").split("-")[0]
        counts[lang] = counts.get(lang, 0) + n
    total = sum(counts.values()) or 1
    shares = {lang: n / total for lang, n in counts.items()}
    with _lock:
        _shares[key] = shares
        while len(_shares) > 64:
            _shares.pop(next(iter(_shares)))
    return shares


def target_language(question: str, shares: dict[str, float]) -> str | None:
    """The documents' language when the question is in another one they hardly use; else None."""
    asked = language_of(question)
    if shares.get(asked, 0.0) >= CORPUS_SHARE:
        return None
    best = max(shares.items(), key=lambda kv: kv[1], default=(None, 0.0))
    return best[0] if best[0] in NAMES and best[1] >= MAJORITY and best[0] != asked else None


def translate(lm: LanguageModel, question: str, target: str) -> str:
    """The question in ``target``'s language, by the model ("" when it gave nothing usable)."""
    msgs = [Message("system", f"Translate the user's question into {NAMES[target]}. Keep commands, options, file "
                              f"names, names and numbers exactly as written. Reply with the translation only."),
            Message("user", question)]
    text = lm.chat(msgs, max_tokens=MAX_TOKENS, temperature=0.0).text.strip().strip('"“”').strip()
    first = text.splitlines()[0].strip() if text else ""
    return first if first and first != question and language_of(first) == target else ""


def queries_for(ctx, question: str) -> tuple[str, ...]:
    """The question; when it is in another language than the documents, its translation into theirs first, then
    the question (a setting, ``crosslingual``; a model is needed). The translation leads: merged by turns, its
    best hit comes first (Recall@1 0.42 against 0.00 with the question first, bench/RESULTS.md)."""
    if ctx.lm is None or not ctx.settings.crosslingual:
        return (question,)
    target = target_language(question, corpus_languages(ctx.kb.db))
    if target is None:
        return (question,)
    translated = translate(ctx.lm, question, target)
    return (translated, question) if translated else (question,)
