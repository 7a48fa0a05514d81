"""Question type by rules (English and Chinese), the language model only when the rules are unsure."""

from __future__ import annotations

import re

from ragclinic.models.llm import LanguageModel, Message
from ragclinic.text.lang import language_of

QUESTION_TYPES = ("factual", "how-to", "comparison", "causal", "opinion", "other")

# Order matters only for reporting; a question matching patterns of two types is "unsure".
_RULES: dict[str, list[str]] = {
    "comparison": [r"\bcompar", r"\bdifferen(ce|t)\b", r"\b(vs\.?|versus)\b", r"\bwhich is (better|worse|faster|"
                   r"cheaper|larger|smaller|more|less)\b", r"\bbetter than\b", r"比较", r"区别", r"不同", r"差异",
                   r"哪个更", r"相比", r"对比"],  # 比较 before an adjective is "fairly": see _ADVERB
    "causal": [r"^\s*why\b", r"\bwhat (causes|caused|leads to|led to)\b", r"\breason(s)? (for|why)\b",
               r"\bhow come\b", r"\bdue to what\b", r"\bhow (did|does|do|could|can|would|has|have)\b.*\b(lead|led|"
               r"contribute|result|cause)", r"\b(impact|effects?|consequences?|results?) (of|on)\b",
               r"\bwhat (did|does|will|would) .* (lead to|cause|result in)\b", r"\bif .* had not\b",
               r"为什么", r"为何", r"原因", r"导致", r"怎么会", r"影响", r"造成", r"后果", r"引起", r"如果.*没有"],
    "how-to": [r"^\s*how (do|can|should|would|to)\b", r"\bhow to\b", r"\bsteps? (to|for)\b", r"\bprocedure\b",
               r"\binstructions?\b", r"如何", r"怎样", r"步骤", r"方法",
               # 怎么 before a verb asks for a way ("怎么查看/确认/配置"); not 怎么会 (causal), 怎么样 (opinion),
               # 怎么回事, 怎么了, 怎么这么 (a complaint)
               r"(?<!为)怎么(?!会|样|回事|了|这么|那么|可能)"],
    "opinion": [r"\b(do|would) you (think|recommend|prefer)\b", r"\byour (opinion|view)\b", r"\bshould i\b",
                r"\bis it (good|bad|worth)\b", r"你(认为|觉得|建议)", r"值得吗", r"好不好"],
    "factual": [r"^\s*(what|who|whom|whose|when|where|which|how (many|much|long|old|far|often))\b",
                r"^\s*(is|are|was|were|does|do|did|can|has|have)\b", r"\?$",
                r"什么", r"谁", r"何时", r"哪里", r"哪(一|个|些|年|天|种|类|款|位|家|条|项|份)", r"多少", r"多(长|久|大|高|远|重|宽|深)", r"几",
                r"是否", r"吗[？?]?$"],
}
_COMPILED = {t: [re.compile(p, re.I) for p in ps] for t, ps in _RULES.items()}
# 比较 as an adverb ("比较合适", "fairly suitable") compares nothing
_ADVERB = re.compile(r"比较(?=合适|好|多|少|大|小|高|低|快|慢|长|短|容易|难|常见|常用|重要|简单|复杂|安全|方便|适合|稳妥|推荐)")


def classify_rules(question: str) -> tuple[str, bool]:
    """(type, sure). Sure when exactly one specific type matches (factual yields to any specific type)."""
    asked = _ADVERB.sub("", question)
    hits = [t for t, ps in _COMPILED.items() if any(p.search(asked) for p in ps)]
    specific = [t for t in hits if t != "factual"]
    if len(specific) == 1:
        return specific[0], True
    if len(specific) > 1:
        return specific[0], False
    if hits:
        return "factual", True
    return "other", False


def classify_llm(lm: LanguageModel, question: str) -> str | None:
    msgs = [Message("system", "Classify the user's question. Reply with exactly one label from: "
                              + ", ".join(QUESTION_TYPES) + "."),
            Message("user", question)]
    reply = lm.chat(msgs, max_tokens=6, temperature=0.0).text.strip().lower()
    return next((t for t in QUESTION_TYPES if reply.startswith(t) or t in reply.split()), None)


# issue 55: an explanation or an attribution asked in any form — "was it the frost that…", "how did … end up",
# 为啥, 怎么就, 算不算…原因, 是…的功劳吗 — not only with "why" (reason/need.py decides causal with a stated link;
# the subject check leaves such questions alone: they ask how things relate, not a fact of one thing)
_EXPLAIN_EN = re.compile(
    r"\b(reasons?|because|caus(e|ed|es|ing)|end(ed)? up|lead|led|result(ed|s)?|effects?|impacts?|affect(ed)?|"
    r"happened (to|with|after|when)|once (we|they|the|it)|push(ed)?|drove|driven|ruin(ed)?|blame[ds]?|thanks to|"
    r"due to|behind|trigger(ed|s)?|contribut\w*|responsible|how come|explain)\b|^\s*(was|is) it\b", re.I)
_EXPLAIN_ZH = re.compile(r"为啥|为什么|为何|怎么就|怎么会|怎么[^？?，,]{0,8}了|有没有关系|有关系吗|什么关系|算不算|功劳|是不是因为|"
                         r"因为什么|由于什么|后果|影响|结果|导致|造成|引起|带来了|归因|怪")


def explains(question: str) -> str:
    """The phrase by which the question asks for an explanation or an attribution ("" when none)."""
    m = (_EXPLAIN_ZH if language_of(question) == "zh" else _EXPLAIN_EN).search(question)
    return m.group(0) if m else ""
