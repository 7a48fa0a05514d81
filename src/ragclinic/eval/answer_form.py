"""Does an answer read like an answer? The form checks of issue 33, one function over an `ask --json` object.

An answer violates the form when it
- talks about its sources: passages, documents, sources, "the context", "the provided information", "according
  to the documents", "as stated in [1]", "[2] states"; 段落, 第4段, 这段, 文档, 资料, 上下文, 原文, "根据[3]", "根据文档",
  "如[2]所述" (``source_talk``);
- holds a citation mark whose number the answer does not list (``dangling_citation``: "[7]" with citations 1–3;
  a mark in an answer with an empty citation list, as the naive peer's) or a mark without a number ("[]", "【】",
  "[source]", "[2, ]", "Passage  (docs0)": ``malformed_citation``);
- names a file or chunk id in its prose: a 16+ hex-digit id, "(docs0)", a cited passage's file name, doc or
  chunk id (``id_in_prose``);
- has a note glued into its text: "Note:", "Warning:", "注意：", "警告：" (``note_in_text``).

Decisions:
- The refusal and clarification templates (pipeline/gate/templates.py: no_evidence, no_hits, one_side, clarify,
  false_premise; pipeline/generate/constraint_check.py: "The documents give 2020 for this; the question asks about
  2021.") and a few fixed sentences (the generate layer's refusal "文档中没有提到。" / "The documents do not
  say.", the naive peer's "insufficient information" / "信息不足", the conflict lead-in "The sources disagree:" /
  "文档之间存在分歧：") are taken out before the checks: a refusal has to say where it looked, in fixed words. A
  refusal worded freely ("The passages do not mention …") is a violation. The note templates (Note: …, Warning:
  …, "[n] is the newer source.", "The documents do not say more than this …") are not exempt: they are notes.
- "根据" and "according to" count only before a source ("根据文档", "根据[3]", "according to the passage"): "根据宪法"
  and "according to the 2020 census" are content. "段" counts as 段落, 第N段, 这段/该段/此段/两段… (not 阶段, 手段,
  这段时间). "passage of", "the source of", "in the context of" and a proper noun ("the Northwest Passage") are
  content.
- A source word that the question itself uses is the subject, not a source ("知识库为每个段落建立了哪些索引？").
- Code spans (`…`) and Markdown links are not read.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ragclinic.pipeline.gate import template_wordings
from ragclinic.pipeline.generate import constraint_wordings, subject_wordings

_REFUSAL_KEYS = ("no_evidence", "no_hits", "one_side", "clarify", "false_premise")
FIXED_REFUSALS = ("文档中没有提到。", "文档中没有提到", "The documents do not say.", "The documents do not say",
                  "insufficient information", "信息不足")
_LEAD_INS = re.compile(r"^\s*(?:the sources disagree:|文档之间存在分歧：)", re.I)

_CODE = re.compile(r"```.*?```|`[^`\n]*`|\[[^\]\n]+\]\([^)\s]+\)", re.S)
_CITE = re.compile(r"[\[【]\s*(\d+(?:\s*[,，、]\s*\d+)*)\s*[\]】]")
# a bracket that is a citation gone wrong: empty, with a number but not a citation's form ("[2, ]", "[1-2]"), a
# source word or a file-like id inside ("[source]", "[docs0]"), or alone; "[NO]" (an ion) and "【原作】" are content
_BRACKET = re.compile(r"[\[【]\s*[\]】]|[\[【][^\[\]【】\n]{0,40}?(?:\d|(?i:source|passage|document|doc|ref|cite|citation)|"
                      r"段|文档|来源|出处)[^\[\]【】\n]{0,40}?[\]】]")
_PAIR = re.compile(r"[\[【][^\[\]【】\n]{0,80}[\]】]")
_LONE = re.compile(r"[\[【\]】]")
_HEX_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{16,}(?![0-9A-Za-z])")
_PAREN_ID = re.compile(r"[(（]\s*(?:see |见)?([a-z_][a-z_-]*\d+(?:\.[a-z]{2,5})?)\s*[)）]")  # "(docs0)", not "(MI5)"
_LOST_NUMBER = re.compile(r"\b(?:passage|document|source)s?(?:\s*\(\s*[\w.-]+\s*\)|\s{2,}(?=[^\s\[【]))", re.I)
_NOTE = re.compile(r"(?:^|(?<=[\s。！？.!?；;（）()]))(?:(?i:notes?|warning|caution|disclaimer|n\.b\.)\s*:|"
                   r"(?:注意|注|警告|提示|备注)\s*[:：])")

_EN_SOURCE = re.compile(
    r"(?<!rite of )\b(?P<w>passages?)\b(?!\s+of\b)"
    r"|\b(?P<w2>documents?|excerpts?|snippets?)\b"
    r"|\b(?:the|these|those|both|all|provided|given|cited|above|retrieved|available|listed|following|other)\s+"
    r"(?P<w3>sources?)\b(?!\s+(?:of|code)\b)"
    r"|(?<!in )\b(?P<w4>the\s+(?:provided\s+|given\s+|above\s+|retrieved\s+)?context)\b(?!\s+of\b)"
    r"|\b(?P<w5>(?:provided|given|above|retrieved|supplied)\s+(?:text|information|material|data))\b"
    r"|\b(?P<w6>according\s+to\s+(?:the\s+)?(?:provided|given|above|retrieved|passage|document|source|context|"
    r"text|information|excerpt)s?)\b|\b(?P<w7>according\s+to\s+\[\d*\]?)"
    r"|\b(?P<w8>(?:stated|mentioned|noted|indicated|described|specified|shown|cited|written|said)\s+in\s+\[\d*\]?)"
    r"|(?P<w9>\[\d+\]\s+(?:states?|says|mentions?|notes?|indicates?|shows?|explains?|describes?)\b)",
    re.I)
_ZH_SOURCE = re.compile(
    r"(?P<w>文档|(?<!个人)资料|段落|上下文|(?<![语文])原文|文中|文本中|材料中|检索到的|"
    r"(?:所给|所提供|提供)的(?:信息|内容|文本|材料|段落|文档|资料))"
    r"|(?P<w2>第\s*[0-9一二三四五六七八九十]+\s*段)"
    r"|(?P<w3>(?:这|该|此|上述|上面|以上|两|各)段)(?!时间|时期|日子|路|距离|历史|经历|关系|旅程|期间|婚姻|感情)"
    r"|(?P<w4>根据\s*(?:[\[【]\d*[\]】]?|第\s*[0-9一二三四五六七八九十]+\s*段|这|该|此|上述|以上|上文|文|资料|段|上下文|所给|"
    r"提供|原文|材料|检索))"
    r"|(?P<w5>[\[【]\d+[\]】]\s*(?:中|里)?(?:提到|指出|所述|表明|显示|说明|写道|称))"
    r"|(?P<w6>如\s*[\[【]\d+[\]】]\s*所述)")


def form_violations(answer_json: dict[str, Any], question: str = "") -> list[str]:
    """The form violations of one answer (an `ask --json` object: ``answer``, and ``citations`` when known),
    each ``"kind: what was found"``, each once, in the order of the checks; [] for a clean answer."""
    text = str(answer_json.get("answer") or "")
    if not text.strip():
        return []
    body = _readable(text)
    cites = answer_json.get("citations")
    numbers = None if cites is None else {int(c["n"]) for c in cites if isinstance(c, dict) and "n" in c}
    found = _source_talk(body, question)
    found += _citation_marks(body, numbers)
    found += _ids(body, cites or ())
    found += [f"note_in_text: {m.group().strip()}" for m in _NOTE.finditer(body)]
    return list(dict.fromkeys(found))


def _readable(text: str) -> str:
    """The text the checks read: without code spans, Markdown links, exempt templates and fixed sentences."""
    body = _CODE.sub(" ", text)
    for pattern in _exempt_patterns():
        body = pattern.sub(" ", body)
    body = _LEAD_INS.sub(" ", body)
    stripped = body.strip().rstrip("。.!！ ").lower()
    return "" if stripped in {p.rstrip("。.").lower() for p in FIXED_REFUSALS} else body


@lru_cache(maxsize=1)
def _exempt_patterns() -> tuple[re.Pattern, ...]:
    """The refusal and clarification templates, in both languages, with their {placeholders} as wildcards (read
    from where the pipeline keeps them, so that a reworded template is not missed)."""
    texts = template_wordings(_REFUSAL_KEYS) + constraint_wordings() + subject_wordings()
    return tuple(re.compile(".+?".join(re.escape(p) for p in re.split(r"\{\w+\}", t)), re.S) for t in texts)


def _source_talk(body: str, question: str) -> list[str]:
    q = question.lower()
    out = []
    for pattern in (_EN_SOURCE, _ZH_SOURCE):
        for m in pattern.finditer(body):
            word = next(g for g in m.groups() if g)
            if (q and _stem(word) in q) or _place_name(body, m):
                continue  # the question's own subject; "the Drake Passage"
            out.append(f"source_talk: {word.strip()}")
    return out


_NOT_NAMES = {"the", "this", "that", "these", "those", "a", "an", "in", "see", "from", "per", "each", "every"}


def _place_name(body: str, m: re.Match) -> bool:
    """"Passage" capitalised right after a capitalised word that is not a determiner: a name ("Northwest
    Passage"), not "in Passage [1]"."""
    if not m.group().startswith("Passage"):
        return False
    before = re.search(r"([A-Z][\w'-]*)\s+$", body[:m.start()])
    return bool(before) and before.group(1).lower() not in _NOT_NAMES


def _stem(word: str) -> str:
    w = word.lower().strip()
    return w[:-1] if w.endswith("s") and w.isascii() else w


def _citation_marks(body: str, numbers: set[int] | None) -> list[str]:
    out = []
    for m in _CITE.finditer(body):
        for n in re.findall(r"\d+", m.group(1)):
            if numbers is not None and int(n) not in numbers:
                out.append(f"dangling_citation: [{n}]")
    rest = _CITE.sub(" ", body)
    out += [f"malformed_citation: {m.group()}" for m in _BRACKET.finditer(rest)]
    out += [f"malformed_citation: {m.group()}" for m in _LONE.finditer(_PAIR.sub(" ", rest))]
    out += [f"malformed_citation: {' '.join(m.group().split())}" for m in _LOST_NUMBER.finditer(body)]
    return out


def _ids(body: str, cites) -> list[str]:
    out = [f"id_in_prose: {m.group()}" for m in _HEX_ID.finditer(body)]
    out += [f"id_in_prose: {m.group(1)}" for m in _PAREN_ID.finditer(body)]
    for c in cites:
        if not isinstance(c, dict):
            continue
        path = str(c.get("path") or "")
        title = str(c.get("title") or "")
        names = {str(c.get("chunk_id") or ""), str(c.get("doc_id") or ""), path.rsplit("/", 1)[-1]}
        if re.fullmatch(r"[\w.-]*\d[\w.-]*|[\w-]+\.[A-Za-z]{2,5}", title):  # "docs0", "faq-07": a file's name
            names.add(title)
        for name in sorted(n for n in names if len(n) >= 3):
            if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", body):
                out.append(f"id_in_prose: {name}")
    return out
