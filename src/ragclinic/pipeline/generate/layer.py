"""The generate layer: ``(context, state) → (state, span outputs)`` — the answer drafted (draft.py), checked and,
when it cannot stand, repaired (retry.py), the causal and global paths' extras, and the Answer with its citations.
Streams what the user will read and ends the stream with exactly the answer returned."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.generate.base import Draft
from ragclinic.pipeline.generate.citations import check_claims, violations
from ragclinic.pipeline.generate.constraint_check import absent_names, absent_note, broken_constraints
from ragclinic.pipeline.generate.draft import claims_of, drafted, model_declined, selection
from ragclinic.pipeline.generate.structured import completion
from ragclinic.pipeline.generate.retry import constraint_retry, none_backed, retry_declined, retry_unsupported
from ragclinic.pipeline.reason import causal
from ragclinic.pipeline.reason import graph_steps
from ragclinic.pipeline.reason.planner import answer_with_tools, tables_in_scope
from ragclinic.pipeline.scope.instructions import removal_places
from ragclinic.types import AskState
from ragclinic.text.lang import language_of
from ragclinic.trace.codec import passage_to_dict
from ragclinic.types import Answer, Citation


def generate(ctx, state: AskState) -> tuple[AskState, dict[str, Any]]:
    stream = _Shown(ctx.on_token)
    if ctx.on_token is not None:
        ctx = replace(ctx, on_token=stream)
    q, d = state.request.question, state.decision
    flags: list[str] = list(ctx.flags)
    drafts: list[Draft] = []
    passages = state.passages
    tooled = _tools(ctx, state, flags) if d.route == "answer" and d.path == "tools" and state.draft is None else None
    if tooled is not None and tooled.text:
        return _tools_answer(ctx, state, tooled, flags)
    if d.route == "answer":
        text, generator = drafted(ctx, state, passages, flags, drafts)
    else:
        text = d.clarifying_question if d.route == "clarify" else _refusal(q, d)
        generator = "template"
        if ctx.on_token:
            ctx.on_token(text)
    claims, text = claims_of(ctx, state, drafts, text, passages, flags) if d.route == "answer" else ([], text)
    route, unbacked = d.route, {}
    if route == "answer" and none_backed(claims, ctx.judge):
        text, generator, route, claims, unbacked = retry_unsupported(ctx, state, text, generator, claims, drafts,
                                                                       flags)
    if route == "answer" and not claims and model_declined(drafts, text):
        text, generator, route, claims, declined = retry_declined(ctx, state, text, generator, drafts, flags)
        unbacked = declined or unbacked
    if route == "answer" and (broken := broken_constraints(q, claims, passages)):
        text, generator, route, claims = constraint_retry(ctx, state, broken, drafts, flags)
    if route == "answer" and d.question_type == "causal":
        text, claims = _causal_direction(ctx, state, text, claims, flags)
    if route == "answer" and d.path in ("global", "mixed") and generator != "extractive":
        text, claims = graph_steps.with_points(ctx, state, text, claims, flags)
    flags += [f"instruction_removed: {where}" for where in removal_places(state.excluded)]
    flags += [f"violation: {v}" for v in violations(text)]
    flags += [f"invalid_citation: {c.text[:60]}" for c in claims if c.verdict == "invalid_citation"]
    flags += [f"unsupported_citation: {c.text[:60]}" for c in claims if c.verdict in ("unsupported", "contradicted")]
    cited = sorted({n for c in claims for n in c.cited if c.verdict != "invalid_citation"})
    by_n = {p.n: p for p in state.passages}
    citations = tuple(_citation(by_n[n]) for n in cited if n in by_n)
    chain, notes = None, []
    if route == "answer" and (absent := absent_names(q, passages)):  # a note, not a refusal: see constraint_check
        notes.append(absent_note(q, absent))
        flags.append(f"name_not_in_passages: {', '.join(n.text for n in absent)}")
    if route == "answer" and d.question_type == "causal" and causal.enabled(ctx.kb):
        text, chain, citations, chain_notes = _with_chain(ctx, state, text, citations, by_n)
        notes += chain_notes
    stream.close(text, drafts)
    answer = Answer(text, route, d.question_type, route == "refuse", citations, tuple(claims),
                    _confidence(d, claims, route), generator, tuple(flags),
                    plan=tuple(tooled.plan) if tooled else (), tools=tuple(tooled.tools) if tooled else (),
                    causal_chain=tuple(chain.links) if chain else (),
                    evidence_strength=chain.strength if chain else "", notes=tuple(notes))
    if unbacked and len(drafts) > 1:
        unbacked["drafts"] = [x.text for x in drafts]  # every model draft, the retry's included
    out = {"answer": answer.to_json(), "prompt_tokens": sum(x.prompt_tokens for x in drafts),
           "completion_tokens": sum(x.completion_tokens for x in drafts)}
    if d.route == "answer" and (shown := selection(ctx, state, passages)) is not None:
        out["context"] = shown.to_json()  # what the generator was shown (the gate's span has the passages whole)
    if unbacked:
        out["unsupported_draft"] = unbacked
    return replace(state, answer=answer), out


class _Shown:
    """What the user has been shown of this layer's answer as it streamed; ``close`` completes it so that the stream
    ends with the final text: the rest of it (the citation marks) when the last draft's streamed text is its
    start, else the final text on a line of its own — unless the stream already ends with it."""

    def __init__(self, on_token) -> None:
        self.on_token, self.text = on_token, ""

    def __call__(self, piece: str) -> None:
        self.text += piece
        self.on_token(piece)

    def close(self, final: str, drafts: list[Draft]) -> None:
        if self.on_token is None or not final:
            return
        streamed = drafts[-1].streamed if drafts and drafts[-1].items is not None else ""
        shown = streamed if streamed and self.text.endswith(streamed) else self.text
        if rest := completion(shown, final):
            self(rest)


def _citation(p) -> Citation:
    return Citation(p.n, p.chunk.id, p.chunk.doc_id, p.chunk.text, p.doc.path, p.doc.title)


_CHAIN_NOTE = {
    ("en", "none"): "The documents state no causal link for this; the related facts are in {cites}.",
    ("zh", "none"): "文档没有说明其中的因果关系；相关内容见{cites}。",
    ("en", "limited"): "Evidence: limited ({why}).", ("zh", "limited"): "证据有限（{why}）。",
    ("en", "conflicting"): "Evidence: conflicting ({why}).", ("zh", "conflicting"): "证据相互矛盾（{why}）。",
}


def _causal_direction(ctx, state: AskState, text: str, claims, flags: list[str]):
    """A sentence of the answer that states a passage's cause → effect link backwards is replaced by the passage's
    own sentence, cited (reason/causal.py ``fix_direction``); the claims are checked again on the new text."""
    n_of = {p.chunk.id: p.n for p in state.passages}
    new, fixed = causal.fix_direction(text, causal.passage_links(ctx.kb, state.passages), n_of)
    if not fixed:
        return text, claims
    flags += [f"causal_direction_fixed: {f['said'].strip()[:60]}" for f in fixed]
    return new, check_claims(new, state.passages, ctx.judge, ctx.settings, state.request.question)


def _with_chain(ctx, state: AskState, text: str, citations, by_n):
    """A causal answer states the chain the passages give, cited; the evidence's strength, when not strong, is a note
    beside it (text, chain, citations, notes)."""
    lang = "zh" if language_of(state.request.question) == "zh" else "en"
    n_of = {p.chunk.id: p.n for p in state.passages}
    chain = causal.chain_for(ctx.kb, state.request.question, list(n_of))
    cites = "".join(f"[{n_of[c]}]" for c in chain.chunk_ids() if c in n_of)
    if chain.links:
        text = f"{text}\n{'因果链' if lang == 'zh' else 'Chain'}: {chain.text()} {cites}"
    related = "".join(f"[{c.n}]" for c in citations) or "".join(f"[{p.n}]" for p in state.passages[:2])
    notes = []
    if (lang, chain.strength) in _CHAIN_NOTE:
        notes.append(_CHAIN_NOTE[(lang, chain.strength)].format(why=chain.why, cites=related))
    have = {c.n for c in citations}
    extra = tuple(_citation(by_n[n]) for n in sorted({n_of[c] for c in chain.chunk_ids()} - have))
    return text, chain, tuple(sorted(citations + extra, key=lambda c: c.n)), notes


def _tools(ctx, state: AskState, flags: list[str]):
    tables = tables_in_scope(ctx.kb, state.passages, state.request.question)
    tooled = answer_with_tools(ctx, state, tables, ctx.settings.tools_max_calls)
    flags += tooled.flags
    return tooled


def _tools_answer(ctx, state: AskState, tooled, flags: list[str]) -> tuple[AskState, dict[str, Any]]:
    """The answer written from the tool outputs (planner.py checked its numbers and cited its sources)."""
    d = state.decision
    if ctx.on_token:
        ctx.on_token(tooled.text)
    by_n = {p.n: p for p in tooled.passages}
    cited = sorted({n for c in tooled.claims for n in c.cited if n in by_n})
    citations = tuple(_citation(by_n[n]) for n in cited)
    ok = sum(c.verdict == "supported" for c in tooled.claims) / max(1, len(tooled.claims))
    answer = Answer(tooled.text, "answer", d.question_type, False, citations, tuple(tooled.claims),
                    max(0.0, min(1.0, 0.5 + 0.5 * ok)), getattr(ctx.lm, "model_id", "llm"), tuple(flags),
                    plan=tuple(tooled.plan), tools=tuple(tooled.tools))
    out = {"answer": answer.to_json(), "prompt_tokens": tooled.prompt_tokens,
           "completion_tokens": tooled.completion_tokens, "plan": tooled.plan, "tools": tooled.tools,
           "passages": [passage_to_dict(p) for p in tooled.passages]}
    return replace(state, answer=answer, passages=tuple(tooled.passages)), out


def _refusal(question: str, d) -> str:
    if "no passage" in d.reason:
        return render("no_hits", question)
    if "side(s)" in d.reason:
        return render("one_side", question, found="one side", missing=d.reason.split("side(s) ")[1].split(" of")[0])
    return render("no_evidence", question)


def _confidence(d, claims, route: str) -> float:
    """Answers: half evidence score, half share of claims supported. Refusals: how clearly evidence is absent."""
    if route != "answer":
        return max(0.0, min(1.0, 1.0 - d.evidence_score))
    checkable = [c for c in claims if c.verdict != "uncited"]
    ok = sum(c.verdict == "supported" for c in checkable) / len(checkable) if checkable else 0.5
    return max(0.0, min(1.0, 0.5 * d.evidence_score + 0.5 * ok))
