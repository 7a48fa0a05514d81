"""The planner's plan: the prompt that asks the model for it and the strict parse of what it wrote.

A plan is a JSON list ``[{"step": 1, "tool": "sql", "input": "...", "depends_on": []}, ...]``: at most
``max_steps`` steps, tools from the list, each ``depends_on`` naming earlier steps only. ``{n}`` in an input stands
for step n's result. Anything else is a ``ToolError`` that goes back to the model once (re-plan).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragclinic.models.llm import Message
from ragclinic.tools import calculator, search, sql
from ragclinic.tools.calculator import ToolError

TOOLS = {"sql": sql.DESCRIPTION, "calculator": calculator.DESCRIPTION, "search": search.DESCRIPTION}

# The system turn is the same for every question (its KV state is reused between calls); what varies — the
# tables, the passages, the question — is in the user turn.
SYSTEM = (
    "You plan how to answer a question with tools. The tools:\n" + "\n".join(f"- {d}" for d in TOOLS.values())
    + "\nReply with the plan only: a JSON list of steps, no words before or after it. \"{1}\" in an input is the "
    "result of step 1. Most questions need one step; use at most 5. The last step's result is the answer. Take every "
    "number from the tables, the passages or an earlier step; do no arithmetic yourself.\n"
    "Examples (Table t_k2_0 (from \"orders.csv\"): item TEXT, unit_cost REAL, qty_jan INTEGER; passage [1] The shop "
    "paid 1,200 euros rent in January and 950 in February):\n"
    "Question: What did the January orders cost? Plan: [{\"step\": 1, \"tool\": \"sql\", \"input\": "
    "\"SELECT SUM(unit_cost * qty_jan) FROM t_k2_0\", \"depends_on\": []}]\n"
    "Question: How much rent was paid in January and February together? Plan: [{\"step\": 1, \"tool\": "
    "\"calculator\", \"input\": \"1,200 + 950\", \"depends_on\": []}]\n"
    "Question: How much more did the January orders cost than the January rent? Plan: [{\"step\": 1, \"tool\": "
    "\"sql\", \"input\": \"SELECT SUM(unit_cost * qty_jan) FROM t_k2_0\", \"depends_on\": []}, {\"step\": 2, "
    "\"tool\": \"calculator\", \"input\": \"{1} - 1,200\", \"depends_on\": [1]}]"
)


@dataclass(frozen=True)
class Step:
    step: int
    tool: str
    input: str
    depends_on: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {"step": self.step, "tool": self.tool, "input": self.input, "depends_on": list(self.depends_on)}


def describe_tables(tables: Sequence[dict], samples: dict[str, list[tuple]]) -> list[str]:
    lines = []
    for t in tables:
        cols = ", ".join(f"{c[0]} {c[1]}" for c in t["columns"])
        lines.append(f"Table {t['name']} (from \"{t['title']}\", {t['rows']} rows): {cols}")
        for row in samples.get(t["name"], [])[:2]:
            lines.append("  e.g. " + " | ".join(str(v) for v in row))
    return lines


def plan_messages(question: str, tables: Sequence[dict], samples: dict[str, list[tuple]],
                  passages: Sequence[tuple[int, str]], retry: tuple[str, str] | None = None) -> list[Message]:
    """``passages``: (n, text) shown; ``retry``: (the plan that failed, its error)."""
    lines = describe_tables(tables, samples) or ["(no tables)"]
    lines = ["Tables:"] + lines + ["", "Passages:"]
    lines += [f"[{n}] {text}" for n, text in passages] or ["(none)"]
    lines += ["", f"Question: {question}", "Plan:"]
    msgs = [Message("system", SYSTEM), Message("user", "\n".join(lines))]
    if retry:
        msgs += [Message("assistant", retry[0]),
                 Message("user", f"That plan failed: {retry[1]}\nWrite a corrected plan (JSON list only).")]
    return msgs + [Message("assistant", PREFILL if tables else PREFILL_NO_TABLES)]


# the reply's start, written for the model (models/llama.py continues a last assistant message): it writes JSON.
# With no table in scope the first step is the calculator: the 1.5B model otherwise queries the example's table.
PREFILL = '[{"step": 1, "tool": "'
PREFILL_NO_TABLES = '[{"step": 1, "tool": "calculator", "input": "'


def reply_of(messages: list[Message], text: str) -> str:
    """The whole plan text: the prefill the model continued plus what it wrote (a backend that cannot continue
    a message replies in full, starting with the list itself)."""
    last = messages[-1]
    if last.role == "assistant" and not text.lstrip().startswith("["):
        return last.content + text
    return text


def parse_plan(text: str, max_steps: int) -> list[Step]:
    raw = _json_list(text)
    if not raw:
        raise ToolError("planner: the plan is not a JSON list of steps")
    if len(raw) > max_steps:
        raise ToolError(f"planner: the plan has {len(raw)} steps; at most {max_steps} (tools_max_calls)")
    steps: list[Step] = []
    for i, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise ToolError(f"planner: step {i} is not an object with step, tool, input, depends_on")
        tool = str(item.get("tool", "")).strip().lower()
        if tool not in TOOLS:
            raise ToolError(f"planner: step {i} uses {tool or 'no tool'!r}; the tools are {', '.join(TOOLS)}")
        given = item.get("input", "")
        if isinstance(given, dict):  # {"query": "..."} / {"expression": "..."}: one field is the input
            given = next(iter(given.values()), "") if len(given) == 1 else ""
        inp = str(given).strip()
        if not inp:
            raise ToolError(f"planner: step {i} ({tool}) has no input")
        deps = item.get("depends_on") or []
        deps = tuple(int(d) for d in (deps if isinstance(deps, list) else [deps]) if str(d).strip().isdigit())
        refs = {int(r) for r in re.findall(r"\{(\d+)\}", inp)}
        if any(d >= i for d in set(deps) | refs):
            raise ToolError(f"planner: step {i} depends on a later step ({sorted(set(deps) | refs)})")
        steps.append(Step(i, tool, inp, tuple(sorted(set(deps) | refs))))
    return steps


def _json_list(text: str) -> list | None:
    """The first JSON list in the model's reply (it may wrap it in ```json fences or add words around it)."""
    start = text.find("[")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for j in range(start, len(text)):
            ch = text[j]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start:j + 1])
                    except json.JSONDecodeError:
                        break
                    return value if isinstance(value, list) else None
        start = text.find("[", start + 1)
    return None
