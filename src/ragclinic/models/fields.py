"""Field-by-field decoding of a flat JSON schema with llama.cpp: the keys and punctuation are not decoded.

A grammar over the whole schema makes the model decode every forced token one at a time — ``{"status": "``,
``", "answer": "``, ``", "evidence": [`` — about 17 of a short answer's ~25 output tokens, ~65 ms each here.
For a flat object whose values are an enum of strings, a string or an array of integers, the forced text is
instead appended to the prompt side and evaluated in one batch with what precedes it, and only the values are
sampled, each under a small grammar of its own; a value's end (its closing quote or bracket) is its stop string.
A ``not_in_documents`` status ends the reply at once (the other fields empty): a refusal costs one sampled token.

The result is the same JSON text a whole-schema grammar would produce, with single spaces, so the caller parses
one form; ``completion_tokens`` counts the sampled tokens. Determinism holds as for any call (llama.py
``_fresh_state``): each phase continues from the state the previous one left, which depends on the prompt only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

# Each value's grammar lets the closer be followed by what comes next in JSON ("," or "}"): the model's natural
# closing tokens are '",' and ']}', and a grammar that forbids them makes it write on inside the value. The stop
# string cuts the text at the closer; the forced text that follows is the caller's.
_NEXT = ' [,}]?'
# A string may hold JSON escapes (\" \\ \n …); its closing quote must be followed by "," or "}", and those two
# characters are its stop strings, so an escaped quote inside ('Select \"Save As\"') does not end it.
_STRING = r'root ::= ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F]{4})* "\"" [,}]'
_STRING_STOPS = ('",', '"}')
_NUM = r'[1-9] [0-9]? [0-9]?'


def _ints(max_items: int) -> str:
    """An array of at most ``max_items`` integers after its "[" (a small model otherwise lists numbers forever)."""
    more = f' (", " {_NUM}){{0,{max_items - 1}}}' if max_items > 1 else ""
    return f'root ::= ("]" | {_NUM}{more} "]")' + _NEXT
EMPTY = {"string": '""', "enum": '""', "ints": "[]"}
STOP_STATUS = "not_in_documents"  # an enum value after which the other fields are left empty


@dataclass(frozen=True)
class Field:
    key: str
    kind: str  # "enum", "string", "ints"
    grammar: str
    opens: str  # the forced text that opens the value ('"' or '[')
    closes: str  # what ends it (appended after the value)
    stops: tuple[str, ...] = ()  # the stop strings (default: ``closes``)


def plan(schema: dict | None) -> tuple[Field, ...] | None:
    """The fields of a flat object schema in order, or None when it is not one this decoder handles."""
    if not schema or schema.get("type") != "object":
        return None
    props = schema.get("properties") or {}
    order = list(schema.get("required") or [])
    if sorted(order) != sorted(props):
        return None
    fields = []
    for key in order:
        p = props[key]
        if p.get("enum") and all(isinstance(v, str) and '"' not in v and "\\" not in v for v in p["enum"]):
            alts = " | ".join(json.dumps(v) for v in p["enum"])
            fields.append(Field(key, "enum", f'root ::= ({alts}) "\\""' + _NEXT, '"', '"'))
        elif p.get("type") == "string" and "enum" not in p:
            fields.append(Field(key, "string", _STRING, '"', '"', _STRING_STOPS))
        elif p.get("type") == "array" and (p.get("items") or {}).get("type") == "integer":
            fields.append(Field(key, "ints", _ints(int(p.get("maxItems", 5))), "[", "]"))
        else:
            return None
    return tuple(fields)


Sample = Callable[[str, str, tuple[str, ...], int, Callable[[str], None] | None], tuple[str, int, str]]
"""(text so far after the prompt, grammar, stop strings, max tokens, on_token) → (value text before the stop, tokens
sampled, finish reason "stop" | "length"); the value's pieces go to on_token as they are sampled."""


def decode(fields: tuple[Field, ...], sample: Sample, max_tokens: int, on_token=None) -> tuple[str, int, str]:
    """The JSON reply, field by field: (text, sampled tokens, finish reason)."""
    text, used, finish = "{", 0, "stop"
    stopped = False
    if on_token:
        on_token("{")
    for i, f in enumerate(fields):
        forced = ("" if i == 0 else ", ") + json.dumps(f.key) + ": "
        if stopped:
            text += forced + EMPTY[f.kind]
            if on_token:
                on_token(forced + EMPTY[f.kind])
            continue
        text += forced + f.opens
        if on_token:
            on_token(forced + f.opens)
        stops = f.stops or (f.closes,)
        value, n, finish = sample(text, f.grammar, stops, max(1, max_tokens - used), on_token)
        used += n
        for stop in stops:
            value = value.split(stop, 1)[0]
        text += value
        if finish == "length":
            return text, used, finish
        text += f.closes
        if on_token:
            on_token(f.closes)
        stopped = f.kind == "enum" and value == STOP_STATUS
    if on_token:
        on_token("}")
    return text + "}", used, finish
