"""Active retrieval while answering (FLARE, Jiang et al., EMNLP 2023): a claim written with low confidence is looked
up again before the user sees it.

With the ``active_retrieval`` setting above 0, the model's answer is generated with each token's log-probability
(models/llm.py ``logprobs``) and held back from the stream. A claim — the short answer, or a point of a points
answer — with a token below that probability is uncertain. For each uncertain claim (at most ``MAX_QUERIES``) the
question and the claim with its uncertain words masked (FLARE's masked query: the words the model was unsure of
would only pull in passages that repeat the guess) are searched; the new hits go through the scope and gate layers
as any hits do, and the answer is generated again from the passages they give. The second answer is kept when it is
no less confident than the first (its least certain token no less likely) and does not decline where the first
answered; either way the user is shown only the answer kept. What happened is the run's ``active_retrieval`` span.

A backend that reports no log-probabilities (a server without ``logprobs``) is held back and looks nothing up; the
extractive generator, and a re-run that starts after retrieve (its context was changed on purpose), are not
touched. A kept second answer's passages and gate decision are the generate span's output (GenerateOutput), so the
trace's state after generate is the one the answer was written from, and a replay from generate starts there.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace

from ragclinic.pipeline.generate.base import Draft
from ragclinic.types import AskState

CALIBRATED = 0.4  # the threshold chosen on dev data (bench/RESULTS.md, "Issue 37: active retrieval"); the eval's arm
MAX_QUERIES = 3  # uncertain claims looked up in one answer (FLARE: one retrieval per sentence)


def wanted(ctx) -> bool:
    """Active retrieval applies to this run: the setting is on, the generator is the language model's, and the run
    started at retrieve — a re-run from the gate or generate carries a context changed on purpose (the debugger's
    gold passage, a doctor's treatment) that a new search would undo."""
    return (ctx.settings.active_retrieval > 0 and getattr(ctx.generator, "name", "") == "llm" and ctx.lm is not None
            and ctx.retriever is not None and ctx.search is not None)


def look_again(ctx, state: AskState, drafts: list[Draft], regenerate) -> tuple[AskState, dict | None]:
    """After the first draft: (the state to answer from, the span's record; None when the draft carries no token
    confidences). ``regenerate(state)`` drafts the answer again from a state's passages (appending to ``drafts``)."""
    first = drafts[-1] if drafts else None
    if first is None or not first.confidence or first.status != "answered":
        return state, None
    threshold = ctx.settings.active_retrieval
    t0 = time.perf_counter()
    record = {"threshold": threshold, "claims": [{"lowest": c.lowest, "masked": c.masked, "tokens": c.tokens}
                                                 for c in first.confidence], "triggered": False}
    unsure = [c for c in first.confidence if c.lowest < threshold][:MAX_QUERIES]
    if not unsure:
        return state, record
    q = state.request.question
    queries = tuple(dict.fromkeys(" ".join(f"{q} {c.masked}".split()) for c in unsure))
    found = _search(ctx, state, queries)
    record.update(triggered=True, queries=list(queries))
    if found.decision.route != "answer" or not found.passages:
        record.update(kept="first", why=f"the new search's gate chose {found.decision.route!r}",
                      ms=_ms(t0))
        return state, record
    old = {p.chunk.id for p in state.passages}
    record["new_passages"] = [p.chunk.id for p in found.passages if p.chunk.id not in old]
    second = regenerate(found)
    better = (second.status == "answered" and second.confidence
              and min(c.lowest for c in second.confidence) >= min(c.lowest for c in first.confidence))
    record.update(second_lowest=min((c.lowest for c in second.confidence), default=None),
                  second_status=second.status, ms=_ms(t0))
    if better:
        record.update(kept="second", decision=_decision(found.decision))  # what a replay from generate starts from
        return found, record
    drafts.append(drafts.pop(-2))  # the first draft stands: it is the last again, for the checks that read it
    record.update(kept="first", why="the second answer was no more confident" if second.status == "answered"
                  else "the second answer declined")
    return state, record


def _search(ctx, state: AskState, queries: tuple[str, ...]) -> AskState:
    """The retrieve, scope and gate layers again, for ``queries`` instead of the question (the runner's second
    search, ``RunContext.search``: generate never imports the layers before it)."""
    st = replace(state, request=replace(state.request, search_queries=queries, sub_questions=()))
    st = ctx.search(ctx, st)
    return replace(st, request=state.request)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)


def _decision(decision) -> dict:
    """The decision as its JSON reads back (issue 55's ``notes`` only when there are some, as a list)."""
    out = asdict(decision)
    notes = out.pop("notes", ())
    return {**out, "notes": list(notes)} if notes else out
