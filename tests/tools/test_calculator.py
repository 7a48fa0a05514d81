"""The calculator: exact arithmetic in the notations documents use, units kept, and nothing but arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragclinic.tools.calculator import ToolError, calculate


@pytest.mark.parametrize("expr, text", [
    ("3,120 + 2,905", "6,025"),
    ("3,120 parcels + 2,905 parcels", "6,025 parcels"),
    ("(1200 - 950) / 950 * 100", "26.315789"),
    ("round((1200 - 950) / 950 * 100, 1)", "26.3"),
    ("200 * 15%", "30"),
    ("round(15% * 2,400, 1)", "360"),
    ("12 × 3 ÷ 4", "9"),
    ("sum(1.5, 2.25, 3)", "6.75"),
    ("max(3, 7) - min(2, 9)", "5"),
    ("-5 + abs(-2)", "-3"),
    ("1.5万 + 5000", "20,000"),
    ("３，１２０ + １", "3,121"),
    ("3,120个包裹 + 2,905个包裹", "6,025 个包裹"),
    ("1e5 + 1", "100,001"),
    ("2.5E-3 * 1000", "2.5"),
])
def test_expressions(expr, text):
    assert calculate(expr).text == text


@pytest.mark.parametrize("expr, why", [
    ("__import__('os').system('id')", "not plain arithmetic"),
    ("2 ** 1000", "not plain arithmetic"),
    ("1 / 0", "divides by zero"),
    ("3 apples + 2 pears", "different units"),
    ("", "give an expression"),
    ("1 +", "cannot read"),
    ("9" * 30 + " * 9" * 3, "beyond"),
    ("x" * 600, "at most 500"),
    ("round(2.5, 40)", "digits"),
    ("max(1)", "two or more"),
])
def test_what_is_not_arithmetic_is_refused_with_the_reason(expr, why):
    with pytest.raises(ToolError, match=why):
        calculate(expr)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(-10**9, 10**9), b=st.integers(-10**9, 10**9), op=st.sampled_from(["+", "-", "*"]))
def test_agrees_with_integer_arithmetic(a, b, op):
    expected = {"+": a + b, "-": a - b, "*": a * b}[op]
    assert calculate(f"{a:,} {op} ({b:,})").value == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_gives_a_value_or_a_tool_error(text):
    try:
        calculate(text)
    except ToolError:
        pass
