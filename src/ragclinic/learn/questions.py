"""The prompt that asks the language model for a chunk's questions and keywords, and the reading of its reply.

Worded for users' words, not the chunk's: doc2query-style questions copied from the passage teach retrieval
nothing a lexical index does not already know. The reply is JSON under a schema (a grammar locally), so a 1.5B
model cannot wander; a reply cut short keeps its complete questions.
"""

from __future__ import annotations

import json
import re

from ragclinic.models.llm import Message

SCHEMA = {"type": "object", "properties": {
    "questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
    "keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 8}},
    "required": ["questions", "keywords"]}
SYSTEM = ("You write the questions real users would type into a search box that the given passage answers. "
          "Write {n} different questions, each answered by the passage, in the user's own everyday words — do not "
          "copy the passage's phrases, name the thing the user wants. Then give up to 6 keywords or synonyms a user "
          "might search for. Reply in JSON: {{\"questions\": [...], \"keywords\": [...]}}.")
SYSTEM_ZH = "问题和关键词都用中文写。"
_WORDS = re.compile(r"\w+", re.UNICODE)
MAX_QUESTION = 160  # characters: longer is a pasted passage, not a question a user types
MAX_CHARS = 2400  # a chunk's text shown to the model, at most (the time budget is per chunk's tokens)


def messages(text: str, language: str, n: int) -> list[Message]:
    system = SYSTEM.format(n=n) + ("\n" + SYSTEM_ZH if language == "zh" else "")
    return [Message("system", system), Message("user", "Passage: " + " ".join(text.split())[:MAX_CHARS])]


def parse(reply: str, n: int) -> tuple[list[str], list[str]]:
    """(questions, keywords) from the model's reply: de-duplicated, trimmed, empty and over-long ones dropped; a
    reply cut off mid-way keeps the complete strings it had."""
    try:
        data = json.loads(reply)
    except json.JSONDecodeError:
        head = reply.split('"keywords"')[0]  # the complete strings of the list, not a key, not one cut off
        data = {"questions": re.findall(r'"([^"\\]{6,160})"\s*[,\]]', head), "keywords": []}
    if not isinstance(data, dict):
        return [], []
    return _clean(data.get("questions"), n, 6, MAX_QUESTION), _clean(data.get("keywords"), 8, 2, 60)


def copied(question: str, text: str, n: int = 8, share: float = 0.5) -> bool:
    """A "question" that copies the passage (the 0.5B model pastes sentences): over half of its 8-character
    pieces are in the passage. A user's question shares terms with it, not runs of them."""
    q, t = " ".join(question.split()), " ".join(text.split())
    grams = {q[i:i + n] for i in range(max(0, len(q) - n + 1))}
    return bool(grams) and sum(g in t for g in grams) / len(grams) > share


def _clean(values, limit: int, min_chars: int, max_chars: int) -> list[str]:
    out: dict[str, str] = {}
    for v in values if isinstance(values, list) else []:
        if not isinstance(v, str):
            continue
        v = " ".join(v.split())
        key = " ".join(_WORDS.findall(v.lower()))
        if min_chars <= len(v) <= max_chars and key and key not in out:
            out[key] = v
    return list(out.values())[:limit]
