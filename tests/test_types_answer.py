"""Answer's JSON form (the `ask --json` contract): every field survives to_json → from_json, notes included."""

from __future__ import annotations

from ragclinic.types import Answer, Citation, Claim


def test_answer_round_trips_with_its_notes():
    a = Answer("Sundar Pichai [1].", "answer", "factual", False, (Citation(1, "c1", "d1", "text", "/p", "T"),),
               (Claim("Sundar Pichai", (1,), "supported", 0.9, "c1", "judge"),), 0.8, "m", ("f",), "t1",
               causal_chain=({"cause": "a"},), evidence_strength="strong",
               notes=("[1] is the more recent source.", "这个问题涉及整个文档集。"))
    d = a.to_json()
    assert d["notes"] == ["[1] is the more recent source.", "这个问题涉及整个文档集。"]
    assert d["answer"] == "Sundar Pichai [1]."  # the notes are beside the text, not in it
    back = Answer.from_json(d)
    assert back.notes == a.notes and back.to_json() == d
    assert Answer.from_json({k: v for k, v in d.items() if k != "notes"}).notes == ()  # an older cached answer
