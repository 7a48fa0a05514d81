"""The `calculator` tool: arithmetic the 1.5B model must not do in its head, evaluated safely (never ``eval``).

Input: an expression of numbers with + - * / (also × ÷ x), parentheses, percentages ("15%" = 0.15;
"200 * 15%"), thousands separators ("3,120"), ``round(x, n)``, ``sum(a, b, ...)``, ``min``, ``max``, ``abs`` —
and units as text: "3,120 parcels + 2,905 parcels" keeps "parcels". Chinese numerals with 万 / 亿 and
full-width digits are read too ("1.5万" = 15000). Output: ``Calculation(value, text, expression, unit)``; a bad
expression raises ``ToolError`` naming what is wrong.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from dataclasses import dataclass

from ragclinic.errors import RagclinicError

MAX_CHARS = 500
MAX_ABS = 1e18  # a result or operand beyond this is refused (2 ** 10 ** 9 must not hang the server)

DESCRIPTION = ("calculator: exact arithmetic on numbers taken from the documents or from other tools' outputs. "
               "Input: one expression, e.g. \"3,120 + 2,905\" or \"(1200 - 950) / 950 * 100\" or "
               "\"round(15% * 2,400, 1)\"; units as words are kept (\"3,120 parcels + 2,905 parcels\"). "
               "Output: the value and its text (\"6,025 parcels\"). Use it for every sum, difference, ratio or "
               "percentage in an answer.")


class ToolError(RagclinicError):
    """A tool could not run on this input (the message says why and what would work)."""


@dataclass(frozen=True)
class Calculation:
    value: int | float  # exact for integers (no float rounding past 2**53)
    text: str  # the value as an answer writes it: thousands separators, the unit when there was one
    expression: str  # what was evaluated, after normalisation
    unit: str = ""


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_FUNCS = {"round": round, "sum": lambda *xs: math.fsum(xs), "min": min, "max": max, "abs": abs}
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![A-Za-z0-9_])")
_CN_SCALE = {"万": 1e4, "亿": 1e8}


def calculate(expression: str) -> Calculation:
    if not expression or not expression.strip():
        raise ToolError("calculator: give an expression, e.g. \"3,120 + 2,905\"")
    if len(expression) > MAX_CHARS:
        raise ToolError(f"calculator: the expression is {len(expression)} characters; at most {MAX_CHARS}")
    text, unit = _normalise(expression)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ToolError(f"calculator: cannot read {expression!r} as arithmetic (numbers, + - * /, %, parentheses, "
                        "round/sum/min/max/abs)") from None
    value = _eval(tree.body, expression)
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError(f"calculator: {expression!r} has no finite value")
    return Calculation(value, _format(value) + (f" {unit}" if unit else ""), text, unit)


def _normalise(expression: str) -> tuple[str, str]:
    """Python arithmetic from the user's notation, and the one unit word the operands share ("" if none)."""
    s = unicodedata.normalize("NFKC", expression).replace("×", "*").replace("÷", "/").replace("−", "-")
    s = re.sub(r"(?<=\d)\s*[xX]\s*(?=\d)", "*", s)
    s = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])", lambda m: repr(float(m.group())), s)  # 1e5
    s = re.sub(r"(\d+(?:\.\d+)?)\s*([万亿])", lambda m: repr(float(m.group(1)) * _CN_SCALE[m.group(2)]), s)
    s = _NUMBER.sub(lambda m: m.group(1).replace(",", "") + (m.group(2) or ""), s)
    s = re.sub(r"(\d+(?:\.\d+)?)\s*%", r"(\1/100)", s)
    calls = [m.group(1) for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", s)]
    if any(c not in _FUNCS for c in calls) or re.search(r"[^\w\s+\-*/().,%]|_|[A-Za-z]\.|\.[A-Za-z]", s):
        raise ToolError(f"calculator: {expression!r} is not plain arithmetic (only numbers, + - * /, %, parentheses "
                        "and round/sum/min/max/abs are allowed)")
    words = re.findall(r"(?<![A-Za-z_])([A-Za-z\u4e00-\u9fff][A-Za-z\u4e00-\u9fff_-]*)", s)
    units = [w for w in words if w not in _FUNCS]
    unit = units[0] if units and len(set(units)) == 1 else ""
    if len(set(units)) > 1:
        raise ToolError(f"calculator: the operands carry different units ({', '.join(sorted(set(units)))}); "
                        "convert them first or leave the units out")
    for w in set(units):
        s = re.sub(rf"(?<![A-Za-z_]){re.escape(w)}(?![A-Za-z_])", "", s)
    return s.strip(), unit


def _eval(node, source: str):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return _bounded(node.value, source)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _eval(node.left, source), _eval(node.right, source)
        if isinstance(node.op, ast.Div) and b == 0:
            raise ToolError(f"calculator: {source!r} divides by zero")
        return _bounded(_OPS[type(node.op)](a, b), source)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, source)
        return -v if isinstance(node.op, ast.USub) else v
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
            and not node.keywords and node.args):
        args = [_eval(a, source) for a in node.args]
        if node.func.id in ("min", "max") and len(args) < 2:
            raise ToolError(f"calculator: {node.func.id}() of two or more numbers")
        if node.func.id == "round":
            if len(args) > 2 or (len(args) == 2 and (args[1] != int(args[1]) or not 0 <= args[1] <= 12)):
                raise ToolError("calculator: round(x) or round(x, digits) with 0..12 digits")
            return round(args[0], int(args[1])) if len(args) == 2 else round(args[0])
        return _bounded(_FUNCS[node.func.id](*args), source)
    raise ToolError(f"calculator: {source!r} is not plain arithmetic (only numbers, + - * /, %, parentheses and "
                    "round/sum/min/max/abs are allowed)")


def _bounded(v, source: str):
    if abs(v) > MAX_ABS:
        raise ToolError(f"calculator: a value in {source!r} is beyond ±{MAX_ABS:g}")
    return v


def _format(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.6f}".rstrip("0").rstrip(".")
