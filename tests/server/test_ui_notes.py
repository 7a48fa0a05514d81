"""The answer fragment shows Answer.notes under the answer, muted and escaped — never inside the answer's text."""

from __future__ import annotations

from ragclinic.clinic import Consultation
from ragclinic.server import ui, ui_parts
from ragclinic.types import Answer


def _render(answer: Answer) -> str:
    seen = Consultation(answer)
    return ui.templates.get_template("_answer.html").render(ui_parts.answer_context(seen, ui.answer_html))


def test_notes_are_shown_under_the_answer_muted_and_escaped():
    a = Answer("Short-dated bills.", "answer", "factual", False, (), (), 0.8, "extractive", trace_id="t1",
               notes=("Instructions were found in <b>Rates</b>; they were removed.", "文档没有证实这个回答的每一部分。"))
    html = _render(a)
    answer_end = html.index("</div>")
    assert html.index("Short-dated bills.") < answer_end < html.index('class="notes muted small"')
    assert "&lt;b&gt;Rates&lt;/b&gt;" in html and "<b>Rates" not in html
    assert "文档没有证实这个回答的每一部分。" in html
    assert "Instructions" not in html[:answer_end]


def test_no_notes_no_list():
    a = Answer("Short-dated bills.", "answer", "factual", False, (), (), 0.8, "extractive", trace_id="t1")
    assert 'class="notes' not in _render(a)
