"""Is a claim supported by its evidence? The tiered faithfulness check behind ``unsupported_claim`` (and the
evaluation harness's detection task).

Rules first, exact about what word overlap can prove: a number or a name the evidence lacks, or content
words it lacks, make a claim unsupported with confidence. What rules cannot see is a claim built from the
evidence's own words but wrong (the other entity of a two-entity passage, a negation): those are "unsure"
and go to the judge, whose P(yes) for "the passage states or implies this" is compared with a threshold
calibrated per model on HaluEval QA (bench/doctor_detection_bench.py; bench/RESULTS.md). On that data word
overlap alone reaches 0.92 balanced accuracy and the 1.5B judge alone 0.80, so neither decides alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.models.judge import Judge
from ragclinic.pipeline.gate.evidence import is_model_judge
from ragclinic.text.support import content_terms, numbers

# Judge P(yes) for "supported" below which an otherwise word-covered claim counts as unsupported, per
# language-model backend, chosen on half of HaluEval QA (bench/doctor_detection_bench.py).
CALIBRATED_SUPPORT = {"local": 0.5, "local-small": 0.5}
_YES_NO = frozenset("yes no ye 是 否 是的 不是 对 不对".split())
_NEG_EN = re.compile(r"\b(not|no|never|none|neither|nor|cannot)\b|n't\b", re.I)
_NEG_ZH = re.compile(r"不是|没有|并非|未|无|不")
_NAME = re.compile(r"\b[A-Z][\w'’.-]*[A-Za-z]")


@dataclass(frozen=True)
class Risk:
    score: float  # 0..1: how likely the claim is NOT supported
    sure: bool
    tier: str
    why: str


def rule_risk(claim: str, evidence: str, question: str = "") -> Risk:
    terms = content_terms(claim) - _YES_NO
    ev_terms = content_terms(evidence)
    new_numbers = sorted(numbers(claim) - numbers(evidence))
    if new_numbers:
        return Risk(0.95, True, "rules", f"number(s) {', '.join(new_numbers)} not in the evidence")
    haystack = (evidence + " " + question).lower()
    new_names = [w for w in _NAME.findall(claim) if w.lower().rstrip(".") not in haystack]
    missing = sorted(terms - ev_terms)
    cov = 1.0 - len(missing) / len(terms) if terms else 1.0
    if new_names and missing:
        return Risk(0.9, True, "rules", f"name(s) {', '.join(new_names[:3])} not in the evidence")
    if cov < 0.75:
        return Risk(0.85, True, "rules", f"{len(missing)}/{len(terms)} content words not in the evidence: "
                                         f"{', '.join(missing[:5])}")
    if missing:
        return Risk(0.7, False, "rules", f"word(s) {', '.join(missing[:5])} not in the evidence")
    if _negated(claim) and not _negated(evidence):
        return Risk(0.6, False, "rules", "the claim negates what the evidence states")
    return Risk(0.2, False, "rules", "every content word is in the evidence")


def claim_risk(claim: str, evidence: Sequence[str], question: str = "", *, judge: Judge | None = None,
               threshold: float | None = None) -> Risk:
    """Rules over the best evidence passage, then the judge when the rules are unsure and a judge is given."""
    if not evidence:
        return Risk(1.0, True, "rules", "no evidence to check against")
    risks = [(rule_risk(claim, e, question), e) for e in evidence]
    risk, best = min(risks, key=lambda t: t[0].score)
    if risk.sure or not is_model_judge(judge):
        return risk
    p = judge.judge("support", best, judge_text(claim, question))
    t = threshold if threshold is not None else support_threshold(judge)
    # Map P(yes) onto risk so that the calibrated threshold sits at 0.5.
    score = 0.5 + 0.5 * (t - p) / t if p < t else 0.5 * (1 - p) / max(1e-9, 1 - t)
    return Risk(max(0.0, min(1.0, score)), True, "model",
                f"judge P(supported) {p:.2f} vs {t:.2f} ({risk.why})")


def judge_text(claim: str, question: str) -> str:
    """A short answer ("Delhi") is judged as an answer to its question; a full sentence stands alone."""
    if question and len(content_terms(claim)) < 4:
        return f'The answer to "{question}" is: {claim}'
    return claim


def support_threshold(judge: Judge) -> float:
    lm = getattr(judge, "lm", None)
    return CALIBRATED_SUPPORT.get(lm.model_id.split(":", 1)[0] if lm is not None else "", 0.5)


def _negated(text: str) -> bool:
    return bool(_NEG_EN.search(text) or _NEG_ZH.search(text))
