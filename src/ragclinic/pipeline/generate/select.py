"""Context selection before generation: the generator reads each passage's answer-bearing sentences and their
neighbours, not the whole passage, and no off-topic passage.

The model reads ~100-150 prompt tokens a second here, so every token left out of the prompt is time saved.
What is kept, per passage: the sentence with most of the question's content terms (weighted by length, as the
verifier's features weigh them; a sentence holding something of the asked type — a date for "when" — wins a
tie), the sentences either side of it (pronouns and "it" point back one sentence), a second sentence when it
scores nearly as well, and any sentence holding a question term the kept ones lack; short passages whole.
Kept runs are copied from the passage as they stand; gaps are marked "…". Passages dropped: those a
(non-lexical) verifier scored below its own "answers" threshold *and* that hold none of the question's content
terms, beyond the best ``keep_top`` ones, unless a conflict names them (a low score alone is not enough: see
_ruled_out). Citations keep the passages' own numbers, so [n] still points at the chunk; the trace keeps the
full passages (the gate's span) beside what the generator was shown (the generate span's ``context``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.text.lang import is_cjk
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms, weighted_coverage
from ragclinic.types import Conflict, Passage
from ragclinic.verify.constraints import answer_type, has_answer_of_type

GAP = " … "


@dataclass(frozen=True)
class Selection:
    excerpts: tuple[tuple[int, str], ...]  # (passage number, text shown), in the passages' order
    dropped: tuple[int, ...]  # passages not shown (off-topic, see _ruled_out)
    chars_full: int
    chars_shown: int

    def to_json(self) -> dict:
        return {"shown": {str(n): t for n, t in self.excerpts}, "dropped": list(self.dropped),
                "chars_full": self.chars_full, "chars_shown": self.chars_shown,
                "kept": round(self.chars_shown / self.chars_full, 3) if self.chars_full else 1.0}


def select_context(question: str, passages: Sequence[Passage], *, threshold: float | None, keep_top: int = 2,
                   short_tokens: int = 40, conflicts: Sequence[Conflict] = (), floor: float = 0.02) -> Selection:
    """What the generator is shown of ``passages`` for ``question``; ``threshold`` is the verifier's "answers"
    probability (None: no passage is dropped for its score); ``floor``: a passage whose best sentence covers
    less of the question's terms is shown whole (the ``context_select_floor`` setting)."""
    q, atype = content_terms(question), answer_type(question)
    dropped = _ruled_out(passages, q, threshold, keep_top, conflicts)
    excerpts = tuple((p.n, excerpt(" ".join(p.chunk.text.split()), q, short_tokens, atype, floor))
                     for p in passages if p.n not in dropped)
    full = sum(len(" ".join(p.chunk.text.split())) for p in passages)
    return Selection(excerpts, dropped, full, sum(len(t) for _, t in excerpts))


def _ruled_out(passages: Sequence[Passage], q: frozenset[str], threshold: float | None, keep_top: int,
               conflicts: Sequence[Conflict]) -> tuple[int, ...]:
    """The passages not shown: off-topic ones — none of the question's content terms, scored by a verifier
    below ``threshold``, not among the best ``keep_top``, not named by a conflict. A low score alone is not
    enough: on RGB the verifier gave the one passage with the release date P = 0.02, and dropping by score cost
    accuracy (bench/RESULTS.md, "Answers in seconds")."""
    if threshold is None:
        return ()
    named = {c.chunk_a for c in conflicts} | {c.chunk_b for c in conflicts}
    ranked = sorted(passages, key=lambda p: -p.support)
    out = {p.n for p in ranked[keep_top:]
           if p.support_by not in ("", "lexical") and p.support < threshold and p.chunk.id not in named
           and not q & content_terms(p.chunk.text)}
    return tuple(p.n for p in passages if p.n in out)


def excerpt(text: str, q_terms: frozenset[str], short_tokens: int = 40, atype: str | None = None,
            floor: float = 0.02) -> str:
    """The answer-bearing sentences of ``text`` and their neighbours (``text`` itself when short, or when no
    sentence covers ``floor`` of the question's terms: a paraphrased question shares too few words with its
    answer for overlap to find it — the answering sentence was cut from 6 of 13 gold passages on Debian
    Reference's Chinese questions, bench/RESULTS.md "Issue 35")."""
    spans = [(a, b) for a, b in split_sentences(text) if text[a:b].strip()]
    if approx_tokens(text) <= short_tokens or len(spans) <= 2 or not q_terms:
        return text
    sents = [text[a:b].strip() for a, b in spans]
    scores = [weighted_coverage(q_terms, s) + (0.01 if atype and has_answer_of_type(atype, s) else 0.0)
              for s in sents]
    best = max(range(len(sents)), key=lambda i: (scores[i], -i))
    if scores[best] < max(floor, 0.02):
        return text  # too little of the question in any sentence: no basis to cut
    keep = {i for i in (best - 1, best, best + 1) if 0 <= i < len(sents)}
    second = max((i for i in range(len(sents)) if i not in keep), key=lambda i: (scores[i], -i), default=None)
    if second is not None and scores[second] >= 0.6 * scores[best]:
        keep.add(second)
    # every question term the passage has stays shown: "斯蒂夫·康拉德 编剧 …" scores below the sentence that
    # names the film, yet it is the one that says who wrote it
    covered = set().union(*(q_terms & content_terms(sents[i]) for i in keep))
    for i in sorted(range(len(sents)), key=lambda i: (-scores[i], i)):
        if i not in keep and (own := q_terms & content_terms(sents[i])) - covered:
            keep.add(i)
            covered |= own
    keep = sorted(keep)
    if len(keep) == len(sents):
        return text
    # contiguous kept sentences are copied from the passage as they stand (its own spaces and punctuation)
    runs: list[list[int]] = []
    for i in keep:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    out = GAP.join(text[spans[r[0]][0]:spans[r[-1]][1]].strip() for r in runs)
    out = ("…" if keep[0] > 0 else "") + out + ("…" if keep[-1] < len(sents) - 1 else "")
    return out if len(out) < len(text) else text


def approx_tokens(text: str) -> float:
    """The model's tokens, roughly: ~0.7 a CJK character, ~4 characters each otherwise (Qwen's tokenizer)."""
    cjk = sum(1 for c in text if is_cjk(c))
    return 0.7 * cjk + (len(text) - cjk) / 4
