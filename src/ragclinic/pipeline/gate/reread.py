"""A second reading before a refusal on weak evidence (issue 52).

The evidence scores (the verifier's, or word overlap) miss paraphrases: "how often do I get my building pass
redone?" over "staff must renew their access badge every 18 months" scores 0.06, so the gate refused what the
simple peer — every passage in one prompt, "answer from the documents or say: insufficient information" —
answered. Before such a refusal the model reads the passages once with the peer's own wording (the same text
`eval`'s naive arm uses; a short greedy reply), and the gate answers instead only when the reply is not the
refusal phrase and is found in one of the passages (as ``eval`` matches answers, or nearly all of its content
words). Asked about a thing the passages do not cover ("how often do I renew my parking permit?" over the same
badge passages) the model says the phrase, and the refusal stands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dataclasses import replace

from ragclinic.models.llm import LanguageModel, Message
from ragclinic.text.answers import locate
from ragclinic.text.lang import detect_language
from ragclinic.text.support import content_terms, coverage
from ragclinic.types import GateDecision, Passage

MAX_TOKENS = 48
GROUNDED = 0.8  # share of the reply's content words one passage must hold, when the reply is not found whole
INSTRUCTION = {
    "en": "Answer the question using only the documents. If they do not contain the answer, reply exactly: "
          "insufficient information.",
    "zh": "请只根据文档回答问题。如果文档中没有答案，请只回答：信息不足。",
}
REFUSAL = ("insufficient information", "信息不足")


def peer_messages(question: str, documents: Sequence[str]) -> list[Message]:
    """The simple peer's prompt: every document numbered, the question, the fixed instruction in its language."""
    lang = "zh" if detect_language(question) == "zh" else "en"
    docs = "\n\n".join(f"Document {i}: {d}" if lang == "en" else f"文档{i}：{d}"
                       for i, d in enumerate(documents, start=1))
    asked = f"Documents:\n{docs}\n\nQuestion: {question}" if lang == "en" else f"文档：\n{docs}\n\n问题：{question}"
    return [Message("system", INSTRUCTION[lang]), Message("user", asked)]


def refused(text: str) -> bool:
    low = text.lower()
    return any(p in low for p in REFUSAL) or not text.strip()


@dataclass(frozen=True)
class Reread:
    reply: str
    passage: int  # the number of the passage that holds the reply; 0: none does (the refusal stands)
    words: str = ""  # the reply when it is found whole in that passage and was not cut off: usable as the answer

    @property
    def answers(self) -> bool:
        return self.passage > 0


def second_reading(question: str, decision: GateDecision, passages: Sequence[Passage],
                   lm: LanguageModel | None, weak: str) -> GateDecision:
    """``decision`` as it stands, or — when it refuses on weak evidence (its reason begins with ``weak``) and the
    model's second reading finds the answer in a passage — an answer whose ``reread`` names that passage."""
    if lm is None or decision.route != "refuse" or not decision.reason.startswith(weak) or not passages:
        return decision
    return read_again(question, decision, passages, lm)


def read_again(question: str, decision: GateDecision, passages: Sequence[Passage], lm: LanguageModel) -> GateDecision:
    """``decision`` after the model's second reading: answering from the passage that holds its reply (``reread``,
    and ``reread_reply`` when the reply is that passage's own words), or as it was, its reason saying the model
    found no answer. Also asked when the generator declines over passages the gate answered from
    (generate/retry.py)."""
    second = reread(question, passages, lm)
    if not second.answers:
        return replace(decision, reason=f"{decision.reason}; read again, the model found no answer "
                                        f"({second.reply[:60]!r})")
    return replace(decision, route="answer", reread=second.passage, reread_reply=second.words,
                   reason=f"{decision.reason}, but read again the passages answer it: {second.reply[:80]!r} is "
                          f"in [{second.passage}]")


def reread(question: str, passages: Sequence[Passage], lm: LanguageModel) -> Reread:
    """The model's reading of ``passages`` with the peer's wording, and the passage that holds its reply."""
    done = lm.chat(peer_messages(question, [" ".join(p.chunk.text.split()) for p in passages]),
                   max_tokens=MAX_TOKENS, temperature=0.0)
    reply = done.text.strip()
    if refused(reply):
        return Reread(reply, 0)
    cut = done.finish_reason == "length"
    n, whole = holder(reply, passages, cut)
    return Reread(reply, n, bare(reply) if whole and not cut else "")


# "在文档1中，", "根据文档2，", "According to Document 1,": the peer's wording names its documents
_LEAD = re.compile(r"^\s*(?:(?:在|根据|据|从)?\s*文档\s*\d*\s*(?:中|里|所述|的内容)?\s*[，,：:]|"
                   r"(?:according to|in|from) (?:the )?documents?\s*\d*\s*,)\s*", re.I)


def bare(reply: str) -> str:
    return _LEAD.sub("", reply.strip()).rstrip(".。!！").strip()


def holder(reply: str, passages: Sequence[Passage], cut: bool = False) -> tuple[int, bool]:
    """The number of the first passage that states ``reply`` — found whole (True), or nearly all of its content
    words, or (a Chinese reply) every command, path and name it writes in Latin letters (False) — and 0 when none
    does. ``cut``: the reply hit the token limit, so its last word may be a fragment and is not looked for."""
    words = bare(reply)
    for p in passages:
        if words and locate(words, p.chunk.text) is not None:
            return p.n, True
    share, n = max(((coverage(words, p.chunk.text), p.n) for p in passages), key=lambda t: t[0], default=(0.0, 0))
    if share >= GROUNDED:
        return n, False
    latin = _latin_terms(words, cut)
    if len(latin) >= 2:  # "在 `/etc/sudoers` 文件中添加 %admin ALL=…": the how-to's substance is its commands
        for p in passages:
            if latin <= content_terms(p.chunk.text):
                return p.n, False
    return 0, False


def _latin_terms(words: str, cut: bool) -> frozenset[str]:
    """The Latin-letter terms of a Chinese reply (none for another language); without the last one when cut."""
    if detect_language(words) != "zh":
        return frozenset()
    if cut:
        words = re.sub(r"[A-Za-z0-9_./=%-]+\W*$", "", words)
    return frozenset(t for t in content_terms(words) if t.isascii())
