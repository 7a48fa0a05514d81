"""Answers that read like answers: a sentence opening with talk about its source ("According to passage [4],
...", "The passage [3] states that ...", "根据[3]和[4]两段，...", "根据第3段，...") becomes the claim itself with
its citations at the end ("... [4]."). Small models open most answers this way; the user asked a question,
not what the passages say, and the claim checks judge the claim better without the lead-in.

Only lead-ins that name passage numbers are rewritten (the numbers become the citations); anything else is
left as the model wrote it.
"""

from __future__ import annotations

import re

# English: bracketed references ("[2] and [3]", "[1], [2], and [3]") or one bare number ("passage 2").
_EN_REFS = r"(?:\[\d{1,2}\](?:\s*(?:,\s*and|,|and|&)\s*\[\d{1,2}\])*|\d{1,2}(?!\s*,\s*\d))"
_ZH_REFS = r"\[?\d{1,2}\]?(?:\s*(?:,|，|、|和|与|及)\s*(?:第\s*)?\[?\d{1,2}\]?)*"  # "[3]和[4]", "第1、2、3"
_EN_LEAD = re.compile(
    r"^(?:according to|based on|as (?:stated|mentioned|described) in|from)\s+(?:the\s+)?"
    r"(?:passages?|documents?|sources?)\s*" + _EN_REFS + r"\s*,\s*", re.I)
_EN_SAYS = re.compile(
    r"^(?:the\s+)?(?:passages?|documents?|sources?)\s*" + _EN_REFS + r"\s+"
    r"(?:states?|says?|mentions?|indicates?|explains?|notes?|shows?|confirms?)\s*(?:that\s+|:\s*)", re.I)
# No number at all ("Based on the passage, ...", "The passage states that ..."): the lead-in goes and the claim
# is cited afterwards by word overlap (citations.attribute_citations).
_EN_BARE = re.compile(
    r"^(?:(?:according to|based on)\s+(?:the\s+)?(?:provided\s+|given\s+)?(?:passages?|documents?|sources?|context)"
    r"(?:\s+provided)?\s*,\s*|the\s+(?:provided\s+)?(?:passages?|documents?|context)\s+"
    r"(?:states?|says?|mentions?|indicates?|shows?|confirms?|explains?|notes?)\s+that\s+)", re.I)
# Talk about reading rather than about the topic ("我们可以看到，…", "由此可见，…", "We can see that …").
_LOOK = re.compile(r"^(?:我们)?(?:可以看到|可以看出|可以发现|由此可见|可见)\s*[，,:：]\s*|^we can see that\s+", re.I)
_ZH_LEAD = re.compile(
    r"^(?:根据|依据|按照|从)\s*(?:第\s*)?(?:(?i:passages?|documents?)\s*|(?:段落|文档)\s*)?" + _ZH_REFS + r"\s*"
    r"(?:两|三|四|五|几)?\s*(?:段落|段文字|段|篇文档|篇|个文档|文档)?(?:的内容|中的信息|所述|的信息|的描述)?\s*[，,:：]\s*")
_CITES = re.compile(r"\d+")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _numbers(match: re.Match) -> list[int]:
    return [int(n) for n in _CITES.findall(match.group(0))]


def _attach(claim: str, ns: list[int]) -> str:
    from ragclinic.pipeline.generate.citations import parse_citations

    body = claim.rstrip()
    core = body.rstrip(".。!！?？")
    end = body[len(core):]
    existing = set(parse_citations(core))
    marks = "".join(f"[{n}]" for n in dict.fromkeys(ns) if n not in existing)
    if not marks or not core:
        return claim if not core else core + end
    return f"{core}{'' if _CJK.search(core) else ' '}{marks}{end}"


def _capitalised(rest: str) -> str:
    """The first letter upper-cased when the first word is all lower case ("the bond" → "The bond"; "iPhone",
    "eBay" and "pH" stay as they are)."""
    first = rest.split(maxsplit=1)[0] if rest.split() else ""
    return rest[0].upper() + rest[1:] if first.islower() and first[0].isalpha() else rest


def rewrite_sentence(sentence: str, valid: set[int] | None = None) -> str:
    """One sentence with its source-talk lead-ins turned into trailing citations (unchanged if it has none, or
    if a lead-in names a passage number not in ``valid``, the numbers of the passages given); lead-ins in a
    row ("根据[2]，我们可以看到，…") go one after the other."""
    for _ in range(3):
        new = _rewrite_once(sentence, valid)
        if new == sentence:
            return sentence
        sentence = new
    return sentence


def _rewrite_once(sentence: str, valid: set[int] | None) -> str:
    for pattern in (_EN_LEAD, _EN_SAYS, _EN_BARE, _LOOK, _ZH_LEAD):
        m = pattern.match(sentence)
        if m:
            rest = sentence[m.end():]
            if len(rest.strip()) < 2 or (valid is not None and not set(_numbers(m)) <= valid):
                return sentence
            if pattern is _EN_BARE and len(rest.split()) < 3:
                return sentence  # "According to the documents, nothing.": the lead-in carries the meaning
            if pattern is not _ZH_LEAD and not _CJK.match(rest):
                if rest[0].isdigit():
                    return sentence  # "According to passage 1, 2 and 4 are ...": which numbers cite is unclear
                rest = _capitalised(rest)
            return _attach(rest, _numbers(m))
    return sentence


def rewrite(answer: str, split, valid: set[int]) -> tuple[str, int]:
    """Every sentence of ``answer`` (``split``: text → sentence strings in order) rewritten; the count changed."""
    out, pos, changed = [], 0, 0
    for sent in split(answer):
        at = answer.find(sent, pos)
        if at < 0:
            return answer, 0
        new = rewrite_sentence(sent, valid)
        changed += new != sent
        out += [answer[pos:at], new]
        pos = at + len(sent)
    out.append(answer[pos:])
    return "".join(out), changed


_TRAILING = re.compile(r"(?<=[^.\s])\s*([.。!！?？])[ \t]*((?:\[\d+(?:\s*[,，、]\s*\d+)*\][ \t]*)+)(?=\s|$)")


def tidy_citations(answer: str) -> str:
    """Citations that trail a sentence's full stop ("索引。 [1]", "rose. [2]") moved before it ("索引[1]。",
    "rose [2].") — the [n] belongs to the sentence it cites, not to the next one. Left alone: an ellipsis, a
    numbered list item ("1. [1]"), an abbreviation ("U.S. [1]")."""
    def move(m: re.Match) -> str:
        line = answer[:m.start()].rsplit("\n", 1)[-1]
        if re.fullmatch(r"\s*\d+", line) or re.search(r"(?:^|[\s.])[A-Za-z]$", line):
            return m.group(0)
        marks = "".join(re.sub(r"\s+", "", x) for x in re.findall(r"\[[^\]]+\]", m.group(2)))
        cjk = bool(_CJK.search(line[-1:])) or m.group(1) in "。！？"
        tail = m.group(0)[len(m.group(0).rstrip()):]
        return f"{'' if cjk else ' '}{marks}{m.group(1)}{tail}"

    return _TRAILING.sub(move, answer)
