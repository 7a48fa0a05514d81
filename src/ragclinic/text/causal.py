"""Cause → effect links stated in a text (issue 17 §3), by cue patterns — EN ("X led to Y", "Y because of X",
"as a result of X, Y") and ZH ("X导致Y", "由于X，Y", "Y是因为X") — with a link whose cause is a pronoun ("This led
to ...", "这导致...", "其结果...") written in full from the sentence before it — its effect when it stated a link,
else the whole sentence (the seed's note on 这/其).

Rules, not the language model: a stated link has a cue word, and extraction is ~0.1 ms a sentence, so an
opt-in knowledge base (`ingest --causal`) pays no model calls. ``hedged`` marks a link stated with "may", "might",
"could", "possibly", 可能, 或许 (evidence "limited" rather than "strong").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_X = r"(?P<{}>[^.;:!?。；！？]{{3,200}}?)"
_EN_FORWARD = re.compile(
    _X.format("cause") + r",?\s+(?:which\s+|that\s+|and\s+(?:this\s+)?)?(?P<cue>(?:has\s+|have\s+|had\s+)?"
    r"(?:(?:may|might|could|can|will|would)\s+)?(?:led to|leads to|lead to|caused|causes|cause|resulted in|results in|"
    r"result in|triggered|triggers|trigger|drove|drives|drive|contributed to|contributes to|gave rise to|"
    r"brought about|produced|produces|made|damaged|destroyed|forced|forces|prevented|prevents))\s+(?!up\b)" + _X.format("effect") + r"(?=[.;:!?]|$)", re.I)
# "A cold spring reduced the number of bees": the verb is the effect's direction, so it stays in the effect
# ("reduced the number of bees"), which ends at the clause ("..., which led to ..." is the next link)
_EN_CHANGE = re.compile(
    r"^\s*(?P<cause>[^.;:!?,]{3,200}?)\s+(?P<cue>(?:reduced|reduces|raised|raises|lowered|lowers|boosted|boosts|"
    r"slowed|slows|weakened|weakens|halved|doubled|cut|cuts))\s+(?P<effect>[^.;:!?,]{3,200})", re.I)
_EN_BACKWARD = re.compile(
    _X.format("effect") + r",?\s+(?P<cue>because of|because|due to|owing to|as a result of|thanks to)\s+"
    + _X.format("cause") + r"(?=[.;:!?]|$)", re.I)
_EN_LEADING = re.compile(
    r"^\s*(?P<cue>because of|because|due to|owing to|as a result of|after)\s+" + _X.format("cause") + r",\s*"
    + _X.format("effect") + r"(?=[.;:!?]|$)", re.I)
_ZH_FORWARD = re.compile(r"(?P<cause>[^。；！？，,]{2,80}?)(?P<cue>(?:可能|或许|将|会|进而|从而|最终)?(?:导致|造成|引发|"
                         r"引起|使得|促使|带来|致使))(?P<effect>[^。；！？]{2,80})")
_ZH_BECAUSE = re.compile(r"(?P<cue>由于|因为)(?P<cause>[^。；！？]{2,80}?)[，,](?:所以|因此|因而|于是)?(?P<effect>[^。；！？]{2,80})")
_ZH_BACKWARD = re.compile(r"(?P<effect>[^。；！？，,]{2,80}?)(?:是)?(?P<cue>因为|由于|源于|归因于)(?P<cause>[^。；！？]{2,80})")
_HEDGE = re.compile(r"\b(may|might|could|possibly|perhaps|likely|suggests?)\b|可能|或许|也许|似乎", re.I)
_PRONOUN_START = re.compile(r"^\s*(?:(this|that|these|it|which|such)(?=\s|[^\w]|$)|(这一?|此|其|该|这些|这种))", re.I)
_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")  # "3.5" and "rail.md" stay whole


@dataclass(frozen=True)
class CausalLink:
    cause: str
    effect: str
    cue: str
    hedged: bool
    sentence: str


def _clean(s: str) -> str:
    s = re.sub(r"(进而|从而|最终|也|又)$", "", s.strip())
    s = re.sub(r"^\s*(?:and|but|so|then|however|thus|therefore|in turn|也|又|并|而)[,，\s]+", "", s.strip(), flags=re.I)
    return s.strip(" ,，、\"'“”").rstrip(".。")


def extract(text: str) -> list[CausalLink]:
    """The links each sentence of ``text`` states, a pronoun cause written as the sentence before it."""
    out: list[CausalLink] = []
    previous = ""
    for sent in (x.strip() for x in _SPLIT.split(text or "")):
        if not sent or sent.startswith("#"):
            continue
        for m in _matches(sent):
            cause, effect = _clean(m.group("cause")), _clean(m.group("effect"))
            if _PRONOUN_START.match(cause) and previous:
                # "This led to ...": what the sentence before stated last — its effect when it stated a link,
                # else the whole sentence
                cause = out[-1].effect if out and out[-1].sentence == previous else _clean(previous)
            if len(cause) < 2 or len(effect) < 2 or cause.lower() == effect.lower():
                continue
            out.append(CausalLink(cause, effect, m.group("cue").strip(), bool(_HEDGE.search(sent)), sent))
        previous = sent
    return out


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences that join back into it ("".join(sentences(t)) == t): the space after a full
    stop starts the next piece, so a replaced sentence keeps the layout around it."""
    return [s for s in re.split(r"(?<=[.!?])(?=\s)|(?<=[。！？\n])", text or "") if s]


def _matches(sent: str):
    for pattern in (_EN_LEADING, _EN_BACKWARD, _ZH_BECAUSE, _ZH_BACKWARD):
        if m := pattern.search(sent):
            yield m
            return
    if m := _EN_CHANGE.search(sent):
        yield _Change(m)
    for pattern in (_EN_FORWARD, _ZH_FORWARD):
        if m := pattern.search(sent):
            yield m
            return


class _Change:
    """A change-verb match whose effect keeps its verb ("reduced the number of bees")."""

    def __init__(self, m: re.Match) -> None:
        self.m = m

    def group(self, name: str) -> str:
        return f"{self.m.group('cue')} {self.m.group('effect')}" if name == "effect" else self.m.group(name)
