"""The structured prompt: answer only from the numbered passages, cite [n], say so on conflict or absence."""

from __future__ import annotations

from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.base import GenerateInput, number_of

# Worded for small models (compared on both local models, see docs/architecture.md "Generate"): an example
# sentence gets copied verbatim by the 0.5B model, a list of numbered rules makes it echo the passage
# numbers, and "never add outside facts" / "write only: ..." make the 1.5B model decline answerable
# questions. Conflicts and false premises arrive as notes in the user
# message, only when the scope and gate layers found one. Sentences left uncited are attributed afterwards.
SYSTEM = (
    "Answer the question using only the passages. Answer in one or two sentences and cite the passage "
    "numbers in square brackets. If the answer is not in the passages, say that the documents do not say."
)
# Global and mixed questions (reason/graph.py): the passages are the map step's points from several documents.
SYSTEM_GLOBAL = (
    "Answer the question using only the passages, which come from different documents. Name each point of the "
    "passages that answers it in one short sentence, citing the passage number in square brackets. If none does, "
    "say that the documents do not say."
)
SYSTEM_ZH_HINT = "请用中文回答，并在每句话后注明出处编号，例如 [1]。如果段落中没有答案，只回答：文档中没有提到。"


# Prompt variants the doctor's voting tries when an answer is weakly supported (0 is the standard prompt).
VARIANTS = {
    1: "Answer with the words of the passage that states the answer, and cite it.",
    2: "Read the passages from the most relevant one. Answer briefly and cite the passage numbers.",
}


def build_messages(inp: GenerateInput) -> list[Message]:
    lines = [f"Question: {inp.question}", ""]
    if inp.sub_questions:
        lines[1:1] = ["Answer each part separately, citing passages for each:"] + [
            f"({i}) {q}" for i, q in enumerate(inp.sub_questions, start=1)] + [""]
    order = sorted(inp.passages, key=lambda p: -p.support) if inp.variant == 2 else inp.passages
    shown = dict(inp.excerpts) if inp.excerpts is not None else None
    for p in order:
        if shown is not None and p.n not in shown:
            continue  # ruled out by context selection
        title = f" ({p.doc.title})" if p.doc.title else ""
        rel = f" relevance {p.support:.2f}" if inp.show_relevance else ""
        text = shown[p.n] if shown is not None else " ".join(p.chunk.text.split())
        lines += [f"Passage [{p.n}]{title}{rel}:", text, ""]
    notes = []
    for c in inp.conflicts:
        a, b = number_of(inp.passages, c.chunk_a), number_of(inp.passages, c.chunk_b)
        notes.append(f"Passages [{a}] and [{b}] disagree ({', '.join(c.values_a)} vs {', '.join(c.values_b)}): "
                     f"state both.")
    if inp.decision.false_premise:
        notes.append(f"Warning: {inp.decision.reason}. Correct the premise instead of accepting it.")
    if notes:
        lines += ["Notes:"] + [f"- {n}" for n in notes] + [""]
    lines += [f"Question: {inp.question}"]
    base = SYSTEM_GLOBAL if inp.decision.path in ("global", "mixed") else SYSTEM
    system = base + (" " + VARIANTS[inp.variant] if inp.variant in VARIANTS else "")
    system += "\n" + SYSTEM_ZH_HINT if _is_zh(inp.question) else ""
    return [Message("system", system), Message("user", "\n".join(lines))]


def _is_zh(text: str) -> bool:
    from ragclinic.text.lang import language_of

    return language_of(text) == "zh"
