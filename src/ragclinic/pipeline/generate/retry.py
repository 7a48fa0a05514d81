"""When the first answer cannot stand: none of its claims is in the passages (answered again from the passages the
verifier found sufficient, else refused), the model declined over a passage the verifier is sure of or that the
model's second reading finds the answer in (asked once more), or it breaks a year or ordinal the question asks
about (answered again from passages that have it, else refused with the reason), or it holds nothing of the kind
asked for (answered again, asked for that kind)."""

from __future__ import annotations

from dataclasses import asdict, replace

from ragclinic.pipeline.gate.reread import read_again
from ragclinic.pipeline.gate.templates import render
from ragclinic.pipeline.generate import answer_kind, subject_check
from ragclinic.pipeline.generate.base import Draft
from ragclinic.pipeline.generate.constraint_check import broken_constraints, matching_passages
from ragclinic.pipeline.generate.constraint_check import refusal_reason as constraint_refusal
from ragclinic.pipeline.generate.draft import answer_again
from ragclinic.types import AskState
from ragclinic.types import Passage
from ragclinic.verify import cheap
from ragclinic.models.judge import relevance_threshold


def retry_unsupported(ctx, state: AskState, text: str, generator: str, claims, drafts: list[Draft],
                       flags: list[str]):
    """Answer-then-verify: the verifier finds none of the answer's claims in the passages — the model answered
    from a passage that does not say it (same topic, another event) or from memory. Answer once more from the
    passages the verifier found sufficient (not the ones that answer cited); else say so, do not guess.
    (text, generator, route, claims, the withdrawn draft)."""
    q = state.request.question
    best = max(c.score for c in claims)
    unbacked = {"text": text, "claims": [asdict(c) for c in claims]}
    note = f"no passage states the model's answer (best support P={best:.2f}, {ctx.judge.model_id})"
    retry = _verified_passages(ctx, state, claims) if state.draft is None else ()
    again = answer_again(ctx, state, retry, drafts, 0, "not in the documents") if retry else None
    if again:
        text, generator, claims, extra = again
        flags += extra + [f"answer_regenerated: {note}; answered again from passage(s) "
                          f"{', '.join(f'[{p.n}]' for p in retry)}"]
        return text, generator, "answer", claims, unbacked
    text = render("no_evidence", q)
    flags.append(f"answer_unsupported: {note}; refused")
    if ctx.on_token:  # the draft was streamed: the user must see that it was withdrawn
        ctx.on_token(f"\n[not in the documents: the answer above is withdrawn]\n{text}")
    return text, "template", "refuse", [], unbacked


def retry_declined(ctx, state: AskState, text: str, generator: str, drafts: list[Draft], flags: list[str]):
    """The model said the documents do not say. When the verifier is sure a passage answers, ask once more from
    the verified passages, most sufficient first (the 1.5B model declines multi-hop questions that the same
    passages answer) or the model's second reading finds the answer in one; else it is the refusal it says.
    (text, generator, route, claims, the declined draft)."""
    retry = _declined_retry(ctx, state)
    if not retry and (read := _read_again(ctx, state)) is not None:
        state, retry = read
    again = answer_again(ctx, state, retry, drafts, 2, "the documents do say") if retry else None
    if again:
        declined, (text, generator, claims, extra) = text, again
        why = ("a second reading found the answer in" if state.decision and state.decision.reread else
               "the verifier gave")
        flags += extra + [f"answer_regenerated: the model said the documents do not say, {why} "
                          f"[{retry[0].n}] P={retry[0].support:.2f}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in retry)}"]
        return text, generator, "answer", claims, {"text": declined, "claims": []}
    flags.append("generator_declined: the model found no answer in the passages")
    if retry and ctx.on_token:
        ctx.on_token(f"\n[no answer from the verified passages either]\n{text}")
    return text, generator, "refuse", [], {}


def constraint_retry(ctx, state: AskState, broken, drafts: list[Draft], flags: list[str]):
    """The answer breaks a year or ordinal the question asks about (generate/constraint_check.py): answer again from
    the passages that have the asked value, else refuse and say which value the documents give.
    (text, generator, route, claims)."""
    q = state.request.question
    note = "; ".join(dict.fromkeys(b.describe() for b in broken))
    good = matching_passages(q, state.passages, broken) if state.draft is None else ()
    again = answer_again(ctx, state, good, drafts, 0, "the question asks about another year") if good else None
    if again and not broken_constraints(q, again[2], good):
        text, generator, claims, extra = again
        flags += extra + [f"constraint_regenerated: {note}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in good)}"]
        return text, generator, "answer", claims
    text = constraint_refusal(q, broken)
    flags.append(f"constraint_refused: {note}")
    if ctx.on_token:  # the draft was streamed: the user must see that it was withdrawn
        ctx.on_token(f"\n{text}")
    return text, "template", "refuse", []


def subject_retry(ctx, state: AskState, found, drafts: list[Draft], flags: list[str]):
    """The answer is about another thing than the question's (generate/subject_check.py: "annual leave" stated,
    "bereavement leave" asked): answer again from the passages that have the asked thing, else refuse and say what
    the documents do give. (text, generator, route, claims)."""
    q = state.request.question
    note = "; ".join(dict.fromkeys(c.describe() for c in found))
    good = subject_check.matching_passages(found, state.passages) if state.draft is None else ()
    again = answer_again(ctx, state, good, drafts, 0, "the question asks about another thing") if good else None
    if again and not subject_check.contrasts(q, again[2], good):
        text, generator, claims, extra = again
        flags += extra + [f"subject_regenerated: {note}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in good)}"]
        return text, generator, "answer", claims
    text = subject_check.refusal_reason(q, found)
    flags.append(f"subject_refused: {note}")
    if ctx.on_token:  # the draft was streamed: the user must see that it was withdrawn
        ctx.on_token(f"\n{text}")
    return text, "template", "refuse", []


def type_retry(ctx, state: AskState, kind: str, passages, text: str, generator: str, claims, drafts: list[Draft],
               flags: list[str]):
    """The answer holds nothing of the kind the question asks for (a number, a year) while ``passages`` do
    (generate/answer_kind.py): answer once more from them with the prompt that names the kind; kept when it holds
    that kind and a claim of it is backed, else the first answer stands, flagged. (text, generator, claims)"""
    first = text.strip().replace("\n", " ")[:80]
    why = f"the question asks for {answer_kind.WORDS[kind]}; the answer '{first}' has none"
    again = None if state.draft is not None else answer_again(ctx, state, passages, drafts, answer_kind.VARIANT[kind],
                                                              f"the question asks for {answer_kind.WORDS[kind]}")
    if again and answer_kind.holds(kind, again[2]):
        text, generator, claims, extra = again
        flags += extra + [f"type_regenerated: {why}; answered again from "
                          f"{', '.join(f'[{p.n}]' for p in passages)}"]
        return text, generator, claims
    flags.append(f"type_mismatch: {why}" + ("; answering again gave none either" if state.draft is None else ""))
    return text, generator, claims


def _read_again(ctx, state: AskState):
    """The gate answered, the structured answer declined, and the verifier is not sure enough to ask again: read
    the passages once more with the peer's wording, as before a refusal on weak evidence (gate/reread.py). The
    simple peer answered "how long does a wifi password have to be?" ("8 and 63 characters long") where the
    schema's ``status`` came out ``not_in_documents``. (the state with the reading recorded, its passage) when the
    reply is in a passage, else None."""
    d = state.decision
    if (state.draft is not None or d is None or d.reread or not ctx.settings.gate_reread or ctx.lm is None
            or not state.passages):
        return None
    d = read_again(state.request.question, d, state.passages, ctx.lm)
    if not d.reread:
        return None
    return replace(state, decision=d), tuple(p for p in state.passages if p.n == d.reread)


def _declined_retry(ctx, state: AskState) -> tuple[Passage, ...]:
    """The passages to answer again from after a decline, unless a treatment wrote the answer: the one the gate's
    second reading found the answer in (gate/reread.py), else the verified ones when the best reaches
    ``decline_retry_evidence`` by a cheap verifier."""
    if state.draft is not None:
        return ()
    if state.decision is not None and state.decision.reread:  # the gate's second reading found it there
        return tuple(p for p in state.passages if p.n == state.decision.reread)
    if not cheap(ctx.judge):
        return ()
    good = _verified_passages(ctx, state, [])
    return good if good and good[0].support >= ctx.settings.decline_retry_evidence else ()


def _verified_passages(ctx, state: AskState, failed_claims) -> tuple[Passage, ...]:
    """The passages the verifier found sufficient, best first (at most 3), without those the failed answer cited."""

    need = relevance_threshold(ctx.judge, ctx.settings.gate_threshold_judge)
    used = {n for c in failed_claims for n in c.cited}
    good = sorted((p for p in state.passages if p.support >= need and p.n not in used and p.support_by != "lexical"),
                  key=lambda p: -p.support)
    return tuple(good[:3])


def none_backed(claims, judge) -> bool:
    """Every checkable claim of the answer unsupported or contradicted, by a cheap verifier (the 1.5B judge is not
    trusted with this: it is asked only about claims word overlap doubts)."""
    checked = [c for c in claims if c.verdict != "invalid_citation"]
    return cheap(judge) and bool(checked) and all(c.verdict in ("unsupported", "contradicted") for c in checked)
