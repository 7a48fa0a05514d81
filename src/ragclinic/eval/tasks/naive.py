"""The naive peer: every passage of an item in one prompt of the same model, greedy, no retrieval, no checks;
over a shared knowledge base (``eval rag --kb`` / ``--corpus``), the simple-RAG peer: the top ``TOP`` passages of
the same retrieval the pipeline runs (its retriever and settings; no scope, rerank, gate or doctor) in that prompt.

Its wording lives in pipeline/gate/reread.py, where the gate reads once more with it before a refusal on weak
evidence. It is the yardstick the pipeline must beat: if it answers better than ragclinic, the pipeline is a
regression, and its time is what ragclinic's time is compared against. The wording is the one the issue
tracker fixed (issue 13), in the question's language; a reply containing the refusal phrase counts as a
refusal. Answers are scored by the same matching as the other arms, and their form is checked the same way (the peer
lists no citations: a "[1]" in its text points at nothing).
"""

from __future__ import annotations

import time
from typing import Any

from ragclinic.eval.answer_form import form_violations
from ragclinic.eval.tasks.gold import naive_gold
from ragclinic.text.answers import answer_correct
from ragclinic.models.llm import LanguageModel
from ragclinic.pipeline.gate import PEER_INSTRUCTION as INSTRUCTION  # the peer's wording (pipeline/gate/reread.py)
from ragclinic.pipeline.gate import PEER_REFUSAL as REFUSAL
from ragclinic.pipeline.gate import peer_refused as refused
from ragclinic.pipeline.gate import peer_messages as naive_messages
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.store.kb import KnowledgeBase

MAX_TOKENS = 64
TOP = 5  # passages the simple-RAG peer is shown from a shared knowledge base
__all__ = ["INSTRUCTION", "REFUSAL", "naive_arm", "naive_messages", "refused", "retrieved_arm"]


def naive_arm(lm: LanguageModel, question: str, documents, answers, fake_answers=()) -> dict[str, Any]:
    """The naive peer's row for one case (the same fields as the pipeline's arms)."""
    t0 = time.perf_counter()
    done = lm.chat(naive_messages(question, documents), max_tokens=MAX_TOKENS, temperature=0.0)
    ms = (time.perf_counter() - t0) * 1000
    text = done.text.strip()
    no = refused(text)
    return {"answer": text, "refused": no, "form": form_violations({"answer": text, "citations": []}, question),
            "correct": (not no and answer_correct(text, answers)) if answers else False,
            "fake": bool(fake_answers) and answer_correct(text, (fake_answers,)),
            "conflict_stated": any(w in text for w in ("disagree", "conflict", "分歧", "矛盾")),
            "claims": 0, "unsupported": 0, "cited": 0, "cited_ok": 0, "ms": round(ms, 1), "lm_calls": 1,
            "prompt_tokens": done.prompt_tokens, "trace_id": ""}


def retrieved_arm(lm: LanguageModel, kb: KnowledgeBase, question: str, answers, fake_answers=(),
                  gold=()) -> dict[str, Any]:
    """The simple-RAG peer's row: the first ``TOP`` hits of the pipeline's retrieval (the knowledge base's
    retriever at its ``top_k``, so they are the top of the list the pipeline's retrieve span holds) in one
    prompt; ``chunks`` names them, best first."""
    t0 = time.perf_counter()
    hits = create_retriever(kb).retrieve(question, max(TOP, kb.settings.top_k))[:TOP]
    retrieve_ms = (time.perf_counter() - t0) * 1000
    row = naive_arm(lm, question, [h.chunk.text for h in hits], answers, fake_answers)
    return {**row, "ms": round(row["ms"] + retrieve_ms, 1), "retrieve_ms": round(retrieve_ms, 1),
            "chunks": [h.chunk.id for h in hits], **naive_gold(hits, gold, TOP)}
