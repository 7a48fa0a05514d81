"""The generate layer: ``(context, state) → (state, GenerateOutput)`` — the answer drafted (draft.py), checked and,
when it cannot stand, repaired (retry.py), the causal and global paths' extras, and the Answer with its citations.
Streams what the user will read and ends the stream with exactly the answer returned."""

from __future__ import annotations

from dataclasses import asdict, replace

from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.gate.qtype import explains
from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.generate.active import look_again, wanted
from ragclinic.pipeline.generate.base import Draft
from ragclinic.pipeline.generate.citations import citation_of, violations
from ragclinic.pipeline.generate.constraint_check import absent_names, absent_note, broken_constraints
from ragclinic.pipeline.generate.draft import claims_of, drafted, model_declined, selection
from ragclinic.pipeline.generate.on_question import answered_on_question
from ragclinic.pipeline.generate.units import answered_with_unit
from ragclinic.pipeline.generate.printed_output import printed_sources
from ragclinic.pipeline.generate.structured import completion
from ragclinic.pipeline.generate.answer_kind import mistyped
from ragclinic.pipeline.generate.retry import (constraint_retry, none_backed, retry_declined, retry_unsupported,
                                               subject_retry, type_retry)
from ragclinic.pipeline.generate.subject_check import contrasts
from ragclinic.pipeline.scope.instructions import removal_places
from ragclinic.trace.views import GenerateOutput
from ragclinic.types import Answer, AskState
from ragclinic.verify.constraints import check_all
from ragclinic.verify.probe import Answerability


def generate(ctx: RunContext, state: AskState) -> tuple[AskState, GenerateOutput]:
    stream = _Shown(ctx.on_token)
    if ctx.on_token is not None:
        ctx = replace(ctx, on_token=stream)
    q, d = state.request.question, state.decision
    flags: list[str] = list(ctx.flags)
    drafts: list[Draft] = []
    passages = state.passages
    tooled = ctx.stage.tools(ctx, state, flags)
    if tooled is not None and tooled.text:
        return ctx.stage.tools_answer(ctx, state, tooled, flags)
    looked, gate_state = None, state
    if d.route == "answer" and wanted(ctx):  # the answer is held back until its confidence is read (active.py)
        state, text, generator, looked = _actively(ctx, state, flags, drafts)
        passages, d = state.passages, state.decision
    elif d.route == "answer":
        text, generator = drafted(ctx, state, passages, flags, drafts)
    else:
        text = d.clarifying_question if d.route == "clarify" else _refusal(q, d)
        generator = "template"
        if ctx.on_token:
            ctx.on_token(text)
    route, claims, text, generator, unbacked = _checked(ctx, state, text, generator, drafts, flags)
    flags += _flags(state, text, claims)
    cited = sorted({n for c in claims for n in c.cited if c.verdict != "invalid_citation"})
    by_n = {p.n: p for p in state.passages}
    citations = tuple(citation_of(by_n[n]) for n in cited if n in by_n)
    found, notes = None, _notes(q, passages, claims, by_n, flags) if route == "answer" else []
    if route == "answer":
        text, found, citations, chain_notes = ctx.stage.chain(ctx, state, text, citations)
        notes += chain_notes
    stream.close(text, drafts)
    answer = Answer(text, route, d.question_type, route == "refuse", citations, tuple(claims),
                    _confidence(d, claims, route), generator, tuple(flags),
                    plan=tuple(tooled.plan) if tooled else (), tools=tuple(tooled.tools) if tooled else (),
                    causal_chain=tuple(found.links) if found else (),
                    evidence_strength=found.strength if found else "", notes=tuple(notes))
    if unbacked and len(drafts) > 1:
        unbacked["drafts"] = [x.text for x in drafts]  # every model draft, the retry's included
    shown = selection(ctx, state, passages) if d.route == "answer" else None  # what the generator was shown
    judged = answerability(ctx, state, drafts[:1])  # the first draft's: the one the decision was made on
    out = GenerateOutput(answer, sum(x.prompt_tokens for x in drafts), sum(x.completion_tokens for x in drafts),
                         shown.to_json() if shown is not None else None, unbacked or None,
                         passages=state.passages if state is not gate_state else None,
                         answerability=judged.to_json() if judged is not None else None, active=looked)
    return replace(state, answer=answer), out


def _actively(ctx: RunContext, state: AskState, flags: list[str], drafts: list[Draft]):
    """The first draft written without streaming, then looked up again where it is unsure (active.py):
    (the state answered from, the kept draft's text and generator, the record)."""
    quiet = replace(ctx, on_token=None)
    extra: list[str] = []

    def regenerate(st: AskState) -> Draft:
        extra.clear()
        drafted(quiet, st, st.passages, extra, drafts)
        return drafts[-1]

    drafted(quiet, state, state.passages, flags, drafts)
    after, looked = look_again(quiet, state, drafts, regenerate)
    if after is not state:
        flags += extra
    return after, drafts[-1].text, drafts[-1].generator, looked


def _checked(ctx: RunContext, state: AskState, text: str, generator: str, drafts: list[Draft], flags: list[str]):
    """The draft's claims checked, and the draft repaired when it cannot stand: no claim backed, the model
    declined, a constraint of the question broken; then the reasoning stage's revisions.
    → (route, claims, text, generator, the withdrawn draft's record)."""
    d, q, passages = state.decision, state.request.question, state.passages
    if d.route != "answer":
        return d.route, [], text, generator, {}
    claims, text = claims_of(ctx, state, drafts, text, passages, flags)
    route, unbacked = d.route, {}
    if (judged := answerability(ctx, state, drafts)) is not None and judged.unanswerable:
        flags.append(f"probe_unanswerable: {judged.describe()}; refused")
        return "refuse", [], render("no_evidence", q), "template", {"text": drafts[-1].text,
                                                                       "claims": [asdict(c) for c in claims]}
    if none_backed(claims, ctx.judge):
        text, generator, route, claims, unbacked = retry_unsupported(ctx, state, text, generator, claims, drafts,
                                                                       flags)
    if route == "answer" and not claims and model_declined(drafts, text):
        text, generator, route, claims, declined = retry_declined(ctx, state, text, generator, drafts, flags)
        unbacked = declined or unbacked
    if route == "answer" and (broken := broken_constraints(q, claims, passages)):
        text, generator, route, claims = constraint_retry(ctx, state, broken, drafts, flags)
    if route == "answer" and ctx.settings.subject_check and _one_subject(d, passages, q) and (
            found := contrasts(q, claims, passages)):
        text, generator, route, claims = subject_retry(ctx, state, found, drafts, flags)
    if route == "answer" and (typed := mistyped(q, claims, passages))[0]:
        text, generator, claims = type_retry(ctx, state, *typed, text, generator, claims, drafts, flags)
    if route == "answer" and drafts and drafts[-1].items is not None:
        text, claims = _replaced(answered_with_unit(ctx, q, claims, passages, flags), text, claims)
    if route == "answer" and d.question_type == "how-to" and drafts and drafts[-1].items is not None:
        text, claims = _on_question(ctx, state, text, claims, flags)
    if route == "answer":
        text, claims = ctx.stage.revise(ctx, state, text, claims, generator, flags)
    return route, claims, text, generator, unbacked


def _replaced(found, text: str, claims):
    """(text, claims) as a check that may rewrite the answer returned them: its (text, claims), or as they were."""
    again, checked = found
    return (again, checked) if again is not None else (text, claims)


def _on_question(ctx: RunContext, state: AskState, text: str, claims, flags: list[str]):
    """A how-to answer about something else than what was asked, replaced by the cited sentence that addresses
    it (generate/on_question.py)."""
    again, checked = answered_on_question(ctx, state.request.question, claims, state.passages, flags)
    return (again, checked) if again is not None else (text, claims)


def _one_subject(d, passages, question: str) -> bool:
    """The question asks about one thing (generate/subject_check.py): not a comparison or a causal chain (they name
    two things or more), nor an explanation asked in another form ("how did the rye labels end up on the spelt
    sacks?": how things relate, issue 55), not a global question answered over the graph's communities or the
    documents path (many documents' things)."""
    return d.question_type not in ("comparison", "causal") and not explains(question) and not any(
        m.startswith("community=") or m == "collection" for p in passages for m in p.marks)


_LEARNED = "learned-verifier:verifier-v1"  # the verifier the combiner was fitted with (verify/learned.py)


def answerability(ctx: RunContext, state: AskState, drafts: list[Draft]) -> Answerability | None:
    """The combiner's verdict on a short answer the model gave (verify/probe.py): the probe's reading of its state,
    the verifier's best evidence score over the passages, the question's constraints; None without a probe reading
    (no probe for this model, a points answer, a replayed trace recorded without one, passages not scored by the
    learned verifier) or when the model declined."""
    draft = drafts[-1] if drafts else None
    probe = getattr(ctx.generator, "probe", None)
    if draft is None or draft.probe is None or probe is None or draft.status != "answered":
        return None
    passages = state.passages
    if not passages or not all(p.support_by == _LEARNED for p in passages):
        return None  # the combiner was fitted on the learned verifier's scores of every passage (judge = learned)
    q = state.request.question
    verifier = max(p.support for p in passages)
    met = any(all(c.verdict == "found" for c in check_all(q, p.chunk.text)) for p in passages)
    best = max(passages, key=lambda p: p.support)
    missing = "" if met else "; ".join(c.describe() for c in check_all(q, best.chunk.text) if c.verdict != "found")
    return probe.combine(draft.probe, verifier, missing or ("no passage meets every constraint" if not met else ""))


def _notes(q: str, passages, claims, by_n, flags: list[str]) -> list[str]:
    """Notes shown beside an answer (never in its text): a name the question asks about that no passage has (a
    note, not a refusal: see constraint_check), an answer read off program output printed in a manual."""
    notes = []
    if absent := absent_names(q, passages):
        notes.append(absent_note(q, absent))
        flags.append(f"name_not_in_passages: {', '.join(n.text for n in absent)}")
    if printed := printed_sources(q, claims, by_n):
        notes.append(render("from_output", q, titles=", ".join(dict.fromkeys(p.doc.title or p.doc.path
                                                                              for p in printed))))
        flags.append(f"from_program_output: {', '.join(f'[{p.n}]' for p in printed)}")
    return notes


def _flags(state: AskState, text: str, claims) -> list[str]:
    return ([f"instruction_removed: {where}" for where in removal_places(state.excluded)]
            + [f"violation: {v}" for v in violations(text)]
            + [f"invalid_citation: {c.text[:60]}" for c in claims if c.verdict == "invalid_citation"]
            + [f"unsupported_citation: {c.text[:60]}" for c in claims if c.verdict in ("unsupported", "contradicted")])


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
