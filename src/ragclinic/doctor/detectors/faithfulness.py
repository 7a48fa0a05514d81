"""Is a claim supported by its evidence? The tiered faithfulness check behind ``unsupported_claim`` (and the
evaluation harness's detection task).

Rules first, exact about what word overlap can prove: a number or a name the evidence lacks, or content
words it lacks, make a claim unsupported with confidence. What rules cannot see is a claim built from the
evidence's own words but wrong (the other entity of a two-entity passage, a negation): those are "unsure"
and go to the judge, whose P(yes) for "the passage states or implies this" may flip the rules' lean only
past a threshold calibrated per model (HaluEval QA for short answers, SciFact for paraphrased sentences;
bench/RESULTS.md, "Doctor"). On HaluEval the rules alone reach 0.93 balanced accuracy and the 1.5B judge
on the rules' unsure items only 0.55, so the judge may flag a word-covered claim only when it is confident.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.models.judge import Judge
from ragclinic.pipeline.gate import is_model_judge
from ragclinic.text.support import content_terms, numbers, stated_numbers
from ragclinic.verify.base import judge_text  # noqa: F401  (re-exported: the detection task uses it)

# Per language-model backend: (flag, clear). A claim whose every content word is in the evidence is
# unsupported when the judge's P(supported) ≤ flag; a long claim only partly covered (paraphrase) is
# supported when P ≥ clear. "flag" was chosen on half of 300 HaluEval QA pairs (bench/doctor_detection_bench.py),
# "clear" on SciFact claims (bench/doctor_scifact_bench.py). A backend without calibration is not asked:
# an uncalibrated judge's P(yes) does not mean what the threshold assumes.
CALIBRATED_SUPPORT: dict[str, tuple[float, float]] = {"local": (0.36, 0.8)}
SHORT_CLAIM = 6  # content terms; HaluEval answers (short) vs SciFact claims (paraphrased sentences)
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
    new_numbers = sorted(numbers(claim) - stated_numbers(evidence))
    if new_numbers:
        return Risk(0.95, True, "rules", f"number(s) {', '.join(new_numbers)} not in the evidence")
    haystack = (evidence + " " + question).lower()
    # capitalised words other than the first (a sentence's first word is capitalised anyway)
    new_names = [m.group() for m in _NAME.finditer(claim) if m.start() > 0
                 and m.group().lower().rstrip(".") not in haystack]
    missing = sorted(terms - ev_terms)
    cov = 1.0 - len(missing) / len(terms) if terms else 1.0
    if new_names and missing:
        return Risk(0.9, True, "rules", f"name(s) {', '.join(new_names[:3])} not in the evidence")
    if cov < 0.75:
        # short answers: a missing word is a wrong answer (HaluEval: all 36 such pairs were hallucinated);
        # long sentences paraphrase (SciFact: 18 of 20 supported claims cover < 75%), so the judge decides
        sure = cov < 0.4 or len(terms) <= SHORT_CLAIM
        return Risk(0.85 if sure else 0.6, sure, "rules", f"{len(missing)}/{len(terms)} content words not in the "
                                                          f"evidence: {', '.join(missing[:5])}")
    if missing:
        return Risk(0.7, False, "rules", f"word(s) {', '.join(missing[:5])} not in the evidence")
    if negated(claim) and not negated(evidence):
        return Risk(0.6, False, "rules", "the claim negates what the evidence states")
    return Risk(0.2, False, "rules", "every content word is in the evidence")


def claim_risk(claim: str, evidence: Sequence[str], question: str = "", *, judge: Judge | None = None,
               thresholds: tuple[float, float] | None = None) -> Risk:
    """Rules over the best evidence passage, then the judge when the rules are unsure and a judge is given."""
    if not evidence:
        return Risk(1.0, True, "rules", "no evidence to check against")
    risks = [(rule_risk(claim, e, question), e) for e in evidence]
    risk, best = min(risks, key=lambda t: t[0].score)
    cal = thresholds if thresholds is not None else support_thresholds(judge)
    if risk.sure or not is_model_judge(judge) or cal is None:
        return risk
    flag, clear = cal
    if risk.score >= 0.5 and clear > 1.0:
        return risk  # this judge cannot clear a doubtful claim (calibration): do not spend the call
    p = judge.judge("support", best, judge_text(claim, question))
    if risk.score >= 0.5:
        score, verdict = (0.3, "clears") if p >= clear else (0.8, "does not clear")
    else:
        score, verdict = (0.8, "flags") if p <= flag else (0.2, "does not flag")
    return Risk(score, True, "model", f"judge P(supported) {p:.2f} {verdict} it ({risk.why})")


def support_thresholds(judge: Judge | None) -> tuple[float, float] | None:
    # The learned verifier is not asked here: on HaluEval's held-out questions it lowers the rules' 0.937 balanced
    # accuracy to 0.708 (bench/RESULTS.md, "The learned verifier (issue 13)"); the rules decide, or the calibrated
    # language-model judge.
    lm = getattr(judge, "lm", None)
    return CALIBRATED_SUPPORT.get(lm.model_id.split(":", 1)[0]) if lm is not None else None


def negated(text: str) -> bool:
    return bool(_NEG_EN.search(text) or _NEG_ZH.search(text))
