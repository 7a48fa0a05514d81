"""The prompt for a structured answer: the question, the passages labelled [n], the answer schema's fields.

Passages are labelled by their number alone — no "Passage" word for a small model to imitate — and the model
fills fields (generate/structured.py), so the answer it gives is the answer, not talk about the sources. Worded
for the 1.5B model: "never add outside facts" / "write only: ..." make it decline answerable questions, and
notes on conflicts and false premises arrive in the user message only when the scope and gate layers found one.
"""

from __future__ import annotations

from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.base import GenerateInput, number_of
from pathlib import PurePath
from ragclinic.text.lang import language_of

YES_NO_WORDING = "yes or no and the fact that decides it"  # answer_prompt = 2 (how a replay tells the wordings apart)
_FIELDS = {
    "short": ('"answer": the answer itself, as short as the question allows — a name, date, number or term when '
              'it asks for one; yes or no and the fact that decides it when it asks whether; else one sentence; '
              '"evidence": the numbers of the sources that state it.'),
    # answer_prompt = 1: the wording before issue 35 (a bare "不是" to a yes/no question cannot be checked)
    "short_v1": ('"answer": the answer itself, as short as the question allows — a name, date, number or term when '
                 'it asks for one, else one sentence; '
                 '"evidence": the numbers of the sources that state it.'),
    "points": ('"points": the answer as short statements, each with "text" and "evidence" (the numbers of the sources '
               'that state it). One statement for each step, item, cause or side the question asks for.'),
}
SYSTEM = ("Answer the question from the numbered sources. Reply in JSON. \"status\": \"answered\" when the sources "
          "state the answer, \"not_in_documents\" when they do not, \"conflict\" when they disagree. {fields} "
          "Do not mention the sources in the text.")
SYSTEM_GLOBAL = ("The numbered sources come from different documents. Name each point of theirs that answers the "
                 "question.")
SYSTEM_ZH_HINT = "用中文回答（answer / text 字段用中文）。"

# Prompt variants: 1 and 2 the doctor's voting tries when an answer is weakly supported (0 is the standard prompt).
VARIANTS = {
    1: "Answer with the words of the source that states the answer.",
    2: "Read the sources from the most relevant one. Answer briefly.",
    # the answer held nothing of the kind the question asks for (generate/answer_kind.py)
    3: "The question asks for a number: the answer is that number as the source writes it.",
    4: "The question asks for a year or date: the answer is that year or date as the source writes it.",
}


def build_messages(inp: GenerateInput, kind: str = "short") -> list[Message]:
    # the question before the passages too: asked only after them (as the peer asks), the 1.5B model answered 2 of
    # 11 RGB zh noise-0.8 questions with another figure of the same passages ("100万亿元" for 经济增长了多少)
    lines = [f"Question: {inp.question}", ""]
    if inp.sub_questions:
        lines[1:1] = ["Answer each part, one statement or more for each:"] + [
            f"({i}) {q}" for i, q in enumerate(inp.sub_questions, start=1)] + [""]
    order = sorted(inp.passages, key=lambda p: -p.support) if inp.variant == 2 else inp.passages
    shown = dict(inp.excerpts) if inp.excerpts is not None else None
    for p in order:
        if shown is not None and p.n not in shown:
            continue  # ruled out by context selection
        title = f" ({p.doc.title})" if _named(p) else ""
        rel = f" relevance {p.support:.2f}" if inp.show_relevance else ""
        text = shown[p.n] if shown is not None else " ".join(p.chunk.text.split())
        lines += [f"[{p.n}]{title}{rel} {text}", ""]
    notes = []
    for c in inp.conflicts:
        a, b = number_of(inp.passages, c.chunk_a), number_of(inp.passages, c.chunk_b)
        notes.append(f"[{a}] and [{b}] disagree ({', '.join(c.values_a)} vs {', '.join(c.values_b)}): "
                     f"give both, status conflict.")
    notes += list(inp.decision.notes)
    if inp.decision.false_premise:
        notes.append(f"Warning: {inp.decision.reason}. Correct the premise instead of accepting it.")
    if notes:
        lines += ["Notes:"] + [f"- {n}" for n in notes] + [""]
    lines += [f"Question: {inp.question}"]
    system = SYSTEM.format(fields=_FIELDS["short_v1" if kind == "short" and inp.prompt_version == 1 else kind])
    if inp.decision.path in ("global", "mixed"):
        system += " " + SYSTEM_GLOBAL
    if inp.variant in VARIANTS:
        system += " " + VARIANTS[inp.variant]
    if is_zh(inp.question):
        system += "\n" + SYSTEM_ZH_HINT
    return [Message("system", system), Message("user", "\n".join(lines))]


def _named(p) -> bool:
    """A title worth its tokens: not the file name over again ("p2", "notes") nor the passage's own first words."""

    t = (p.doc.title or "").strip()
    if not t or t == PurePath(p.doc.path or "").stem:
        return False
    return not " ".join(p.chunk.text.split()).startswith(t)


def is_zh(text: str) -> bool:

    return language_of(text) == "zh"
