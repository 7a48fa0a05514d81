"""Answers taken from program output printed in a manual (issue 35 item 5).

Manuals print what commands answer and what builds log: "$ createuser --interactive joe" followed by the questions
it asks, a server's "LOG:  database system is ready", "checking for gcc... yes". Such lines are examples of one
run on one machine, not what the manual states: an answer whose words come only from them (a size limit read off a
build log) is flagged, and the user is told where it came from, beside the answer.

What is output: text/printed.py. The answer part of a claim (its terms and numbers the question
lacks, verify/answer_check.py) comes from output when a number of it, or half its terms, are in the output lines
and not in the rest of the passage (its prose and the command lines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragclinic.types import Claim, Passage
from ragclinic.text.printed import output_spans
from ragclinic.text.support import content_terms, numbers
from ragclinic.verify.answer_check import answer_part


def from_output(question: str, claim: str, passage: str) -> bool:
    """The claim's answer part is in the passage's printed output and not in the rest of it."""
    spans = output_spans(passage)
    if not spans:
        return False
    terms, nums = answer_part(question, claim)
    if not terms and not nums:
        return False
    out_text = "\n".join(passage[a:b] for a, b in spans)
    rest, pos = [], 0
    for a, b in spans:  # the rest by position: the same words in the prose stay in it
        rest.append(passage[pos:a])
        pos = b
    rest_text = "\n".join(rest + [passage[pos:]])
    out_terms, out_nums = content_terms(out_text), numbers(out_text)
    rest_terms, rest_nums = content_terms(rest_text), numbers(rest_text)
    if (nums & out_nums) - rest_nums:  # a number only the output has: "128 MB" from a log line
        return True
    only_out = (terms & out_terms) - rest_terms
    return bool(only_out) and len(only_out) * 2 >= len(terms)


def printed_sources(question: str, claims: Sequence[Claim], by_n: Mapping[int, Passage]) -> list[Passage]:
    """The cited passages a supported claim was taken from printed output of (each once, in citation order)."""
    found: dict[int, Passage] = {}
    for c in claims:
        if c.verdict not in ("supported", "uncited"):
            continue
        for n in c.cited:
            p = by_n.get(n)
            if p is not None and n not in found and from_output(question, c.text, p.chunk.text):
                found[n] = p
    return list(found.values())
