"""Structured answers: the model fills a schema, the system writes the sentence and the citation marks.

The model is asked for JSON (a grammar locally, ``response_format`` over an OpenAI-compatible server):

- ``short`` (factual and most questions): ``{"status", "answer", "evidence"}`` — the short answer (a name, date,
  number, term or one sentence) and the numbers of the passages that state it;
- ``points`` (how-to, causal, global questions, several parts, conflicts): ``{"status", "points": [{"text",
  "evidence"}]}``.

``status`` is ``answered``, ``not_in_documents`` or ``conflict``. The answer the user reads is rendered from the
structure ("Sundar Pichai [2]."), so it has nothing to say about passages, and its claims and citations are the
structure's items — nothing is split into sentences or re-cited by word overlap afterwards. A reply that is not
JSON (a server that refused the schema and a model that ignored the prompt) is read as one item: its text with
its ``[n]`` marks as the evidence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from ragclinic.pipeline.generate.base import Item
from ragclinic.pipeline.generate.citations import declines

STATUSES = ("answered", "not_in_documents", "conflict")
_EVIDENCE = {"type": "array", "items": {"type": "integer"}, "maxItems": 3}
SCHEMAS = {
    "short": {"type": "object", "additionalProperties": False, "required": ["status", "answer", "evidence"],
              "properties": {"status": {"type": "string", "enum": list(STATUSES)}, "answer": {"type": "string"},
                             "evidence": _EVIDENCE}},
    "points": {"type": "object", "additionalProperties": False, "required": ["status", "points"],
               "properties": {"status": {"type": "string", "enum": list(STATUSES)},
                              "points": {"type": "array", "items": {
                                  "type": "object", "additionalProperties": False, "required": ["text", "evidence"],
                                  "properties": {"text": {"type": "string"}, "evidence": _EVIDENCE}}}}},
}
_MARK = re.compile(r"\s*(?<![A-Za-z0-9_])\[(\d+(?:\s*[,，、]\s*\d+)*)\]")  # not "sys.argv[1]"
_END = ".。!！?？"


@dataclass(frozen=True)
class Reply:
    status: str  # one of STATUSES
    items: tuple[Item, ...]
    form: str  # "json" (the schema was followed) or "text" (a free-text reply, read as one item)

    def to_json(self) -> dict:
        return {"status": self.status, "form": self.form,
                "items": [{"text": i.text, "evidence": list(i.evidence)} for i in self.items]}


def schema_kind(question_type: str, path: str, parts: int, conflicts: int) -> str:
    """``points`` for answers that are several claims by nature, ``short`` for the rest."""
    if conflicts or parts > 1 or path in ("global", "mixed") or question_type in ("how-to", "causal"):
        return "points"
    return "short"


def parse_reply(raw: str, kind: str) -> Reply:
    """The model's reply read into a :class:`Reply`; never raises (a truncated JSON reply keeps what it has)."""
    data = _loads(raw)
    if not isinstance(data, dict):
        return _free_text(raw)
    status = data.get("status") if data.get("status") in STATUSES else "answered"
    if "points" in data or (kind == "points" and "answer" not in data):
        items = [_item(p.get("text", ""), p.get("evidence")) for p in data.get("points") or []
                 if isinstance(p, dict)]
    else:
        items = [_item(data.get("answer", ""), data.get("evidence"))]
    items = [i for i in items if i.text]
    if status != "not_in_documents" and (not items or all(declines(i.text) for i in items)):
        status = "not_in_documents"  # an empty answer, or one that only says the documents do not say
    return Reply(status, tuple(items), "json")


def _loads(raw: str):
    text = raw.strip()
    if text.startswith("```"):
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    if not text.startswith("{"):
        if "{" not in text or "}" not in text:
            return None
        text = text[text.index("{"):text.rindex("}") + 1]  # "Sure: {...}"
    try:
        return json.loads(text, strict=False)  # a raw newline inside a string, as servers without a grammar write
    except ValueError:
        from jiter import from_json  # on use: jiter, needed only to read a structured reply

        try:
            return from_json(text.encode("utf-8"), partial_mode="trailing-strings")
        except ValueError:
            return None


def _item(text, evidence) -> Item:
    text = str(text or "")
    marks = [int(n) for m in _MARK.finditer(text) for n in re.split(r"\s*[,，、]\s*", m.group(1))]
    ns = [n for n in (evidence if isinstance(evidence, list) else []) if isinstance(n, int) and not isinstance(n, bool)]
    return Item(" ".join(_MARK.sub("", text).split()), tuple(dict.fromkeys(ns + marks)))


def _free_text(raw: str) -> Reply:
    text = raw.strip()
    if not text or declines(text):
        return Reply("not_in_documents", (), "text")
    return Reply("answered", (_item(text, []),), "text")


def render(reply: Reply, zh: bool, numbered: bool = False, valid: set[int] | None = None) -> str:
    """The answer the user reads: each item as a sentence with its citation marks (only numbers in ``valid``);
    ``numbered``: one item a line, numbered (steps)."""
    lines = [cite(i.text, [n for n in i.evidence if valid is None or n in valid], zh) for i in reply.items]
    if reply.status == "conflict" and len(lines) > 1:
        lead = "文档之间存在分歧：" if zh else "The sources disagree: "
        return lead + ("；而" if zh else "; but ").join(x.rstrip(_END) for x in lines) + ("。" if zh else ".")
    if numbered and len(lines) > 1:
        return "\n".join(f"{k}. {x}" for k, x in enumerate(lines, start=1))
    return ("" if zh else " ").join(lines)


def cite(text: str, ns, zh: bool) -> str:
    """``text`` as a sentence ending with its marks: "Sundar Pichai [2].", "桑达尔·皮查伊[2]。"."""
    core = text.rstrip(" " + _END)
    end = text[len(core):].strip()[:1] or ("。" if zh else ".")
    marks = "".join(f"[{n}]" for n in dict.fromkeys(ns))
    if not marks:
        return core + end
    return f"{core}{'' if zh or not core else ' '}{marks}{end}"


class FieldStream:
    """Streams the text the user will read while the model writes JSON: the ``answer`` field as it grows, parsed
    incrementally, written as the answer will be (marks out, spaces single); a ``points`` answer is shown whole once
    checked (its rendered form — numbered, each point with its marks — is not its texts run together); a reply
    that does not open with ``{`` streams as it is."""

    def __init__(self, on_token: Callable[[str], None], zh: bool) -> None:
        self.on_token, self.zh = on_token, zh
        self.raw, self.sent, self.plain = "", "", None

    def __call__(self, piece: str) -> None:
        self.raw += piece
        if self.plain is None and self.raw.strip():
            self.plain = not self.raw.lstrip().startswith(("{", "`"))
        if self.plain:
            self._emit(self.raw)
        elif self.plain is False:
            self._emit(self._visible())

    def _visible(self) -> str:
        data = _loads(self.raw)
        if not isinstance(data, dict) or data.get("status") == "not_in_documents":
            return self.sent
        if "points" in data:  # shown whole once checked: numbered, each with its marks (generate/layer.py)
            return self.sent
        return " ".join(_MARK.sub("", str(data.get("answer", ""))).split())  # as _item writes it

    def _emit(self, text: str) -> None:
        text = text.rstrip(" " + _END)  # held back until more follows: the marks go before a closing full stop
        if text.startswith(self.sent) and len(text) > len(self.sent):
            self.on_token(text[len(self.sent):])
            self.sent = text


def completion(shown: str, final: str) -> str:
    """What a stream that has shown ``shown`` must still show so that it ends with ``final``: nothing when it does,
    the rest of ``final`` when ``shown`` is its start (the citation marks), else ``final`` on a line of its own."""
    if shown.rstrip().endswith(final.strip()):
        return ""
    if final.startswith(shown):
        return final[len(shown):]
    return ("\n" if shown.strip() else "") + final


def dumps(reply: Reply) -> str:
    return json.dumps(reply.to_json(), ensure_ascii=False)
