"""The generate layer's drafting: one answer from the generator (or a treatment's text), its claims checked, and
another answer from chosen passages when the first one fails (retry.py decides when)."""

from __future__ import annotations

from dataclasses import replace

from ragclinic.pipeline.generate.base import Draft, GenerateInput
from ragclinic.pipeline.generate.citations import check_claims, check_items, declines
from ragclinic.pipeline.generate.select import select_context
from ragclinic.pipeline.generate.base import Item
from ragclinic.pipeline.generate.structured import Reply, schema_kind
from ragclinic.pipeline.generate.structured import render as render_reply
from ragclinic.pipeline.generate.points import point_excerpt
from ragclinic.types import AskState
from ragclinic.text.lang import language_of
from ragclinic.models.judge import relevance_threshold

READING = ":second-reading"  # a draft that is the gate's second reading, its words kept (reading())


def drafted(ctx, state: AskState, passages, flags: list[str], drafts: list[Draft]) -> tuple[str, str]:
    """The answer over ``passages`` (or the treatment's rewrite); a model's answer is rendered from the structure it
    filled (generate/structured.py), so nothing is rephrased or re-cited here."""
    q, d, r = state.request.question, state.decision, state.request
    if state.draft is not None:  # a treatment rewrote the answer: check it, do not generate
        draft = Draft(state.draft, "doctor")
        if ctx.on_token:
            ctx.on_token(state.draft)
    elif (said := reading(ctx, state, passages, drafts)) is not None:  # the model said it already: not asked again
        draft = said
        if ctx.on_token:
            ctx.on_token(draft.text)
    else:
        shown = selection(ctx, state, passages)
        draft = ctx.generator.generate(GenerateInput(q, tuple(passages), d, state.conflicts, r.sub_questions,
                                                     r.show_relevance, r.prompt_variant,
                                                     shown.excerpts if shown else None,
                                                     ctx.settings.answer_prompt), ctx.on_token)
    drafts.append(draft)
    if draft.reply_form == "text":
        flags.append("reply_not_structured: the model's reply was not the answer schema; read as one claim")
    if draft.finish_reason == "length":
        flags.append("truncated: the answer hit llm_max_tokens")
    return draft.text, draft.generator


def reading(ctx, state: AskState, passages, drafts: list[Draft]) -> Draft | None:
    """The second reading's reply as the answer (gate/reread.py), cited to the passage it was found whole in, when
    that passage is among ``passages``, it is not yet a draft, and the answer is one short fact (the ``short``
    schema). The structured answer asked for after such a reading took part of what the model had said ("8" for
    "6 到 8 个字符", issue 52) and cost one more call. A how-to or causal answer is asked for in its own form: the
    reading's short reply to "怎么查看系统版本？" was a version number, not the command."""
    d = state.decision
    if d is None or not d.reread_reply or d.reread not in {p.n for p in passages}:
        return None
    if schema_kind(d.question_type, d.path, len(state.request.sub_questions), len(state.conflicts)) != "short":
        return None
    if any(x.generator.endswith(READING) for x in drafts):
        return None
    item = Item(d.reread_reply, (d.reread,))
    zh = language_of(state.request.question) == "zh"
    return Draft(render_reply(Reply("answered", (item,), "json"), zh),
                 f"{getattr(ctx.lm, 'model_id', 'llm')}{READING}", items=(item,), reply_form="json")


def claims_of(ctx, state: AskState, drafts: list[Draft], text: str, passages, flags: list[str]) -> tuple[list, str]:
    """The answer's claims — a structured draft's items, else the sentences of the text the system wrote — and the
    text, re-rendered when the checks kept fewer of a claim's citations (only the passages that state it). A number
    no passage has is dropped from a structured item (and flagged) before the checks: the claim is checked against
    the passages it does name, or is uncited."""
    draft = drafts[-1] if drafts else None
    q = state.request.question
    if draft is None or draft.items is None:
        return check_claims(text, passages, ctx.judge, ctx.settings, q), text
    if draft.status == "not_in_documents":
        return [], text
    valid = {p.n for p in passages}
    items = tuple(Item(i.text, tuple(n for n in dict.fromkeys(i.evidence) if n in valid)) for i in draft.items)
    if bad := sorted({n for i in draft.items for n in i.evidence if n not in valid}):
        flags.append(f"invalid_citation: the model cited {bad}, which no passage has; dropped")
    claims = check_items(items, passages, ctx.judge, ctx.settings, q, recite=True)
    if [c.cited for c in claims] != [i.evidence for i in draft.items if i.text.strip()]:
        items = tuple(Item(c.text, c.cited) for c in claims)
        text = render_reply(Reply(draft.status, items, draft.reply_form), language_of(q) == "zh",
                      numbered=state.decision.question_type == "how-to", valid={p.n for p in passages})
    return claims, text


def model_declined(drafts: list[Draft], text: str) -> bool:
    """The model said the passages do not hold the answer (a structured draft's status, else its words)."""
    draft = drafts[-1] if drafts else None
    if draft is not None and draft.items is not None:
        return draft.status == "not_in_documents"
    return declines(text)


def selection(ctx, state: AskState, passages):
    """Context selection (generate/select.py) for a model generator, when on; None = the passages whole."""

    s = ctx.settings
    if not s.context_select or state.request.show_relevance or getattr(ctx.generator, "name", "") != "llm":
        return None
    threshold = relevance_threshold(ctx.judge, s.gate_threshold_judge) if ctx.judge is not None else None
    points = {p.n: t for p in passages if (t := point_excerpt(p)) is not None}
    if not points:
        return select_context(state.request.question, passages, threshold=threshold, conflicts=state.conflicts,
                              floor=s.context_select_floor)
    # a community passage shows the summary points it holds, and is never ruled out (the map step chose it)
    rest = select_context(state.request.question, [p for p in passages if p.n not in points], threshold=threshold,
                          conflicts=state.conflicts, floor=s.context_select_floor)
    shown = dict(rest.excerpts) | points
    excerpts = tuple((p.n, shown[p.n]) for p in passages if p.n in shown)
    full = rest.chars_full + sum(len(" ".join(p.chunk.text.split())) for p in passages if p.n in points)
    return replace(rest, excerpts=excerpts, chars_full=full, chars_shown=sum(len(t) for _, t in excerpts))


def answer_again(ctx, state: AskState, passages, drafts: list[Draft], variant: int, why: str):
    """One more answer from ``passages`` with prompt ``variant``: (text, generator, claims, flags) when a claim
    of it is supported, else None."""
    if ctx.on_token:
        ctx.on_token(f"\n[{why}: answering again from the verified passages]\n")
    extra: list[str] = []
    st = replace(state, request=replace(state.request, prompt_variant=variant)) if variant else state
    text, generator = drafted(ctx, st, passages, extra, drafts)
    claims, text = claims_of(ctx, st, drafts, text, passages, extra)
    if any(c.verdict in ("supported", "uncited") for c in claims) and not model_declined(drafts, text):
        return text, generator, claims, extra
    return None
