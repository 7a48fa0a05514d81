"""What a question needs (issue 55): a fact (``specific``), the whole collection (``global``; ``mixed`` when it also
names something), a cause → effect chain (``causal``) — decided from the question's form *and* from what retrieval
found, not from cue words alone. The cue rules (gate/qtype.py, reason/graph.py) fit the questions they were built
beside; users ask "was it the heatwave that ruined the butter?" and "is there a pattern to the three incidents?".

- **causal**: the rules' causal type; or a question that asks for an explanation or an attribution in any form
  (a yes/no "was it X that…", "how did … end up", "what happened to … once …", 为啥, 怎么就, 算不算…原因, 是…的功劳吗)
  *and* a passage the search found states a cause → effect link about what it asks (the question's words cover
  half of one end of a stated link, or of its sentence). The form alone is too loose ("what made the list?"); the link alone is any question
  about an incident.
- **global**: the rules' global score over its threshold; or a question that asks about a set (a plural "which
  …s", each / every / the rest / which of, a count of documents or events, a pattern, a timeline, what they have
  in common; 哪些, 哪几, 各家, 其他, 分别, 共性, 规律) *and* whose evidence is spread: the search's strong hits come
  from ``SPREAD`` documents or more, or the question names a family of documents ("our contracts", 这三次事故), or
  the passages found would not answer it (the gate's refusal is not the first resort). ``mixed`` when it also
  names an entity.

Each decision records its signals (the gate span's ``need``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.pipeline.gate.qtype import explains
from ragclinic.pipeline.reason.causal import overlap
from ragclinic.text.lang import language_of

SPREAD = 3  # documents among the strong hits from which a set question's evidence counts as spread
STRONG = 0.75  # a hit is strong at this share of the best hit's score (retrieval scores, fused)
LINK_MATCH = 0.5  # the question's words cover this share of one end of a stated link

_SET_EN = re.compile(
    r"\b(which|what) (?!(does|this|plus|less|unless|has|was|is|its)\b)\w{3,}s\b|\b(each|every) (of )?(the|our|these|those|them)\b|"
    r"\bany (\w+ ){0,2}(more than|of the|of our)\b|\b(which|what|any|none|some) of (the|our|these|those|them)\b|"
    r"\bthe (rest|others|other ones)\b|\bin common\b|\bpattern\b|\bcommon\b|\brecurr\w*|"
    r"\bkeep (coming|turning|showing) up\b|\btimeline\b|\bacross\b|\bmore than (one|once)\b|"
    r"\b(two|three|four|five|six|several|multiple) \w+s\b|\boverall\b|\btrend\b|\bsummar\w+", re.I)
_SET_ZH = re.compile(r"哪些|哪几|各(家|份|个|次|自|项)|其他|其余|分别|共性|规律|共同|时间线|都(发生|出现|提到|有)|这[两三四五几](份|次|个|家)|"
                     r"[两三四五几]次|多次|不止一|汇总|总结")


@dataclass(frozen=True)
class Need:
    kind: str  # "specific", "global", "mixed", "causal"
    why: str
    spread: int = 0  # documents among the strong hits
    link: str = ""  # causal: the stated link that matched

    def to_json(self) -> dict:
        return {"kind": self.kind, "why": self.why, "spread": self.spread, **({"link": self.link} if self.link else {})}


def asks_set(question: str) -> str:
    """The phrase by which the question asks about a set of things or documents ("" when none)."""
    m = (_SET_ZH if language_of(question) == "zh" else _SET_EN).search(question)
    return m.group(0) if m else ""


def stated_link(question: str, links: Sequence[dict]) -> dict | None:
    """The stated link the question is about: its words cover ``LINK_MATCH`` of the link's cause or effect, or of
    its sentence (the rules' link ends are short and sometimes cut mid-phrase, in Chinese most)."""
    def fit(lk: dict) -> float:
        return max(overlap(question, lk["cause"]), overlap(question, lk["effect"]), overlap(question, lk["sentence"]))

    best = max(links, key=fit, default=None)
    return best if best is not None and fit(best) >= LINK_MATCH else None


def spread(hits: Sequence) -> int:
    """Distinct documents among the strong hits (score ≥ ``STRONG`` × the best; hits in rank order)."""
    if not hits:
        return 0
    best = max(h.score for h in hits)
    if best <= 0:
        return len({h.chunk.doc_id for h in hits[:5]})
    return len({h.chunk.doc_id for h in hits if h.score >= STRONG * best})


def causal_need(question: str, qtype: str, links: Sequence[dict]) -> Need | None:
    """``causal`` by the rules' type, or by an explanation's form and a stated link about it; else None."""
    if qtype == "causal":
        return Need("causal", "the question's type is causal")
    form = explains(question)
    if not form:
        return None
    lk = stated_link(question, links)
    if lk is None:
        return None
    return Need("causal", f"asks {form!r}, and a passage states a link about it",
                link=f"{lk['cause']} → {lk['effect']}")


def global_need(question: str, rules_kind: str, hits: Sequence, names: Sequence[str], family: int = 0,
                weak: bool = False) -> Need | None:
    """``global`` / ``mixed`` by the rules' score; or a set question whose evidence is spread (the strong hits come
    from ``SPREAD`` documents or more), that names a family of two documents or more (``family``: "our contracts"
    → the contracts, collection.py), or that the gate would refuse (``weak``: a global question is tried over the
    documents before it is refused); else None."""
    docs = spread(hits)
    if rules_kind in ("global", "mixed"):
        return Need(rules_kind, "the question's words ask about the collection", docs)
    form = asks_set(question)
    if not form:
        return None
    if docs >= SPREAD:
        why = f"the strong hits come from {docs} documents"
    elif family >= 2:
        why = f"it names a family of {family} documents"
    elif weak:
        why = "the passages found do not answer it alone"
    else:
        return None
    return Need("mixed" if names else "global", f"asks {form!r}, and {why}", docs)
