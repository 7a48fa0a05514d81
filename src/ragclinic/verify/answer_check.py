"""Answer-then-verify (issue 13's approach 3): is the model's answer in the passage it cites, about what was asked?

The answer part of a claim is what it adds to the question — its content terms and numbers that the question
lacks ("1361万", "武汉", "Annie Ernaux"). The claim is backed by a passage when the passage holds most of that
answer part and all its numbers, and the passage meets the question's constraints (verify/constraints.py): the
year, the ordinal, the number asked about — a passage about the 2022 election's 90 seats does not back "the
sixth Legislative Council has 90 seats"; a quoted pattern ("机器名.local") is met by its literal parts. Rules only, exact, ~1 ms; used beside the learned support head, which
is stricter about rewording than the model's answers are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragclinic.text.support import content_terms, numbers, stated_numbers
from ragclinic.verify.constraints import check_all, quoted_found


@dataclass(frozen=True)
class Backing:
    backed: bool
    reason: str
    answer_terms: tuple[str, ...] = ()


def answer_part(question: str, claim: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content terms, numbers) of the claim that the question does not have."""
    return content_terms(claim) - content_terms(question), numbers(claim) - numbers(question)


def backing(question: str, claim: str, passage: str, min_share: float = 0.5) -> Backing:
    terms, nums = answer_part(question, claim)
    if not terms and not nums:
        return Backing(False, "the claim adds nothing to the question")
    stated = stated_numbers(passage)
    missing_nums = sorted(nums - stated)
    if missing_nums:
        return Backing(False, f"the passage does not have {', '.join(missing_nums)}", tuple(sorted(terms)))
    have = terms & (content_terms(passage) | stated)  # "2" is had by "two Golden Globes"
    if terms and len(have) / len(terms) < min_share:
        return Backing(False, "the passage lacks " + ", ".join(repr(t) for t in sorted(terms - have)[:4]),
                       tuple(sorted(terms)))
    bad = [c for c in check_all(question, passage) if c.verdict != "found"
           and not (c.constraint.kind == "quoted" and quoted_found(c.constraint, passage))]
    if bad:
        return Backing(False, bad[0].describe(), tuple(sorted(terms)))
    return Backing(True, "the passage has the answer and what the question asks about", tuple(sorted(terms)))
