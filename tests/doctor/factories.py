"""Hand-made pipeline objects for the doctor's tests: passages, answers, claims, states and exams."""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

from ragclinic.config import Settings
from ragclinic.doctor.symptoms import Exam
from ragclinic.types import AskRequest, AskState
from ragclinic.text.lang import detect_language
from ragclinic.types import Answer, Chunk, Citation, Claim, Conflict, DocInfo, GateDecision, Hit, Passage, SourceScore


def settings(tmp_path, **overrides: Any) -> Settings:
    overrides.setdefault("embedder", "fake")
    overrides.setdefault("llm", "none")
    return Settings.load(tmp_path / "kb", cache_dir=tmp_path / "cache", **overrides)


def make_passage(n: int, text: str, *, doc_id: str = "", title: str = "", support: float = 0.0,
                 retrievers: Sequence[str] = ("lexical",), tags: dict[str, str] | None = None) -> Passage:
    doc_id = doc_id or f"doc{n}"
    cid = hashlib.sha256(f"{doc_id}\0{text}".encode()).hexdigest()[:32]
    chunk = Chunk(cid, doc_id, text, 0, len(text), (), None, detect_language(text), len(text.split()), 0)
    hit = Hit(chunk, 1.0 / n, tuple(SourceScore(r, n, 1.0 / n) for r in retrievers), n)
    return Passage(n, hit, DocInfo(doc_id, f"/docs/{doc_id}.md", title or doc_id, tags or {}), support, "lexical")


def make_claim(text: str, cited: Sequence[int] = (1,), verdict: str = "supported", score: float = 1.0,
               checked_by: str = "lexical") -> Claim:
    return Claim(text, tuple(cited), verdict, score, "", checked_by)


def make_answer(text: str, claims: Sequence[Claim] = (), passages: Sequence[Passage] = (), *, route: str = "answer",
                question_type: str = "factual", generator: str = "extractive") -> Answer:
    by_n = {p.n: p for p in passages}
    cited = sorted({n for c in claims for n in c.cited if n in by_n})
    citations = tuple(Citation(n, by_n[n].chunk.id, by_n[n].chunk.doc_id, by_n[n].chunk.text) for n in cited)
    return Answer(text, route, question_type, route == "refuse", citations, tuple(claims), 0.5, generator)


def make_state(question: str, passages: Sequence[Passage] = (), answer: Answer | None = None, *,
               decision: GateDecision | None = None, conflicts: Sequence[Conflict] = (),
               sub_questions: Sequence[str] = (), search_queries: Sequence[str] = ()) -> AskState:
    req = AskRequest(question, sub_questions=tuple(sub_questions), search_queries=tuple(search_queries))
    if decision is None:
        route = answer.route if answer is not None else "answer"
        decision = GateDecision(route, "factual", max((p.support for p in passages), default=0.0), "test")
    return AskState(req, hits=tuple(p.hit for p in passages), passages=tuple(passages), conflicts=tuple(conflicts),
                    decision=decision, answer=answer)


def make_exam(state: AskState, settings: Settings, *, kb=None, judge=None, budget=None, tier: str = "rules",
              interactive: bool = False, symptoms=()) -> Exam:
    return Exam(state, None, kb, settings, judge, budget, tier, interactive, list(symptoms))
