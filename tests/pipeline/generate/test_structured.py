"""The structured answer: schema choice, reading the model's JSON (whole, truncated, fenced, free text), rendering
the sentence and its marks, and streaming only the text the user will read."""

from __future__ import annotations

from ragclinic.pipeline.generate.base import Item
from ragclinic.pipeline.generate.structured import (SCHEMAS, FieldStream, Reply, completion, parse_reply, render,
                                                    schema_kind)


def test_schema_kind_short_for_facts_points_for_steps_causes_parts_and_conflicts():
    assert schema_kind("factual", "direct", 0, 0) == "short"
    assert schema_kind("other", "", 0, 0) == "short"
    assert schema_kind("how-to", "", 0, 0) == "points"
    assert schema_kind("causal", "", 0, 0) == "points"
    assert schema_kind("factual", "global", 0, 0) == "points"
    assert schema_kind("factual", "", 2, 0) == "points"
    assert schema_kind("factual", "", 0, 1) == "points"
    assert set(SCHEMAS["short"]["properties"]) == {"status", "answer", "evidence"}


def test_parse_a_short_answer_and_its_evidence():
    r = parse_reply('{"status": "answered", "answer": "Sundar Pichai", "evidence": [2]}', "short")
    assert r == Reply("answered", (Item("Sundar Pichai", (2,)),), "json")


def test_marks_the_model_put_in_the_text_become_evidence():
    r = parse_reply('{"status": "answered", "answer": "Sundar Pichai [2][3]", "evidence": [2]}', "short")
    assert r.items == (Item("Sundar Pichai", (2, 3)),)


def test_a_truncated_or_fenced_reply_keeps_what_it_has():
    r = parse_reply('{"status": "answered", "answer": "July 29, 20', "short")
    assert r.status == "answered" and r.items[0].text == "July 29, 20"
    r = parse_reply('```json\n{"status": "answered", "answer": "42", "evidence": [1]}\n```', "short")
    assert r.items == (Item("42", (1,)),)


def test_not_in_documents_and_an_empty_answer_are_refusals():
    assert parse_reply('{"status": "not_in_documents", "answer": "", "evidence": []}', "short").status == \
        "not_in_documents"
    assert parse_reply('{"status": "answered", "answer": "  ", "evidence": [1]}', "short").status == \
        "not_in_documents"
    assert parse_reply('{"status": "answered", "points": []}', "points").status == "not_in_documents"


def test_free_text_is_one_claim_or_a_decline():
    r = parse_reply("Google's CEO in 2021 was Sundar Pichai [2].", "short")
    assert r == Reply("answered", (Item("Google's CEO in 2021 was Sundar Pichai.", (2,)),), "text")
    assert parse_reply("The documents do not say.", "short").status == "not_in_documents"
    assert parse_reply("", "short").status == "not_in_documents"


def test_points_with_their_evidence():
    raw = ('{"status": "answered", "points": [{"text": "Unplug the router", "evidence": [1]}, '
           '{"text": "Wait ten seconds", "evidence": [1, 2]}]}')
    r = parse_reply(raw, "points")
    assert r.items == (Item("Unplug the router", (1,)), Item("Wait ten seconds", (1, 2)))
    assert render(r, zh=False, numbered=True) == "1. Unplug the router [1].\n2. Wait ten seconds [1][2]."
    assert render(r, zh=False) == "Unplug the router [1]. Wait ten seconds [1][2]."


def test_render_the_short_answer_first_in_both_languages():
    assert render(Reply("answered", (Item("Sundar Pichai", (2,)),), "json"), zh=False) == "Sundar Pichai [2]."
    assert render(Reply("answered", (Item("Google's CEO in 2021 was Sundar Pichai.", (2,)),), "json"),
                  zh=False) == "Google's CEO in 2021 was Sundar Pichai [2]."
    assert render(Reply("answered", (Item("桑达尔·皮查伊", (2,)),), "json"), zh=True) == "桑达尔·皮查伊[2]。"
    assert render(Reply("answered", (Item("他是谁？", (1,)),), "json"), zh=True) == "他是谁[1]？"


def test_render_never_prints_a_number_no_passage_has():
    r = Reply("answered", (Item("Sundar Pichai", (2, 9)),), "json")
    assert render(r, zh=False, valid={1, 2, 3}) == "Sundar Pichai [2]."
    assert render(Reply("answered", (Item("Sundar Pichai", (9,)),), "json"), zh=False, valid={1}) == "Sundar Pichai."


def test_render_a_conflict_as_both_sides():
    r = Reply("conflict", (Item("The rate is 3%", (1,)), Item("the rate is 4%", (2,))), "json")
    assert render(r, zh=False) == "The sources disagree: The rate is 3% [1]; but the rate is 4% [2]."
    assert render(r, zh=True).startswith("文档之间存在分歧：")


def test_the_stream_shows_the_answer_field_then_its_marks():
    pieces = []
    s = FieldStream(pieces.append, zh=False)
    for piece in ['{"', 'status', '": "', 'answered', '", "', 'answer', '": "', 'Sundar', ' Pich', 'ai', '", "',
                  'evidence', '": [', '2', ']}']:
        s(piece)
    assert "".join(pieces) == "Sundar Pichai"
    pieces.append(completion("".join(pieces), "Sundar Pichai [2]."))
    assert "".join(pieces) == "Sundar Pichai [2]."


def test_the_stream_shows_nothing_of_a_refusal_until_its_text():
    pieces = []
    s = FieldStream(pieces.append, zh=False)
    for piece in ['{"status": "not_in_documents", "answer": "I guess', ' not"', ', "evidence": []}']:
        s(piece)
    assert pieces == []
    pieces.append(completion("".join(pieces), "I can't answer this from the documents."))
    assert "".join(pieces) == "I can't answer this from the documents."


def test_the_stream_passes_free_text_through_and_corrects_at_the_end():
    pieces = []
    s = FieldStream(pieces.append, zh=False)
    for piece in ["Sundar", " Pichai", " [2]."]:
        s(piece)
    assert "".join(pieces) == "Sundar Pichai [2]"  # a closing full stop waits for what follows
    pieces.append(completion("".join(pieces), "Sundar Pichai [2]."))
    assert "".join(pieces) == "Sundar Pichai [2]."
    pieces.append(completion("".join(pieces), "Another answer."))  # the final text differs: it is shown on its own line
    assert "".join(pieces).endswith("\nAnother answer.")


def test_a_sentence_answer_streams_so_that_its_marks_land_before_its_full_stop():
    pieces = []
    s = FieldStream(pieces.append, zh=False)
    for piece in ['{"status": "answered", "answer": "Rates rose by 3.', '5 points', '.", "evidence": [1]}']:
        s(piece)
    assert "".join(pieces) == "Rates rose by 3.5 points"
    pieces.append(completion("".join(pieces), "Rates rose by 3.5 points [1]."))
    assert "".join(pieces) == "Rates rose by 3.5 points [1]."


def test_content_brackets_are_not_citations_and_lenient_json_is_read():
    r = parse_reply('{"status": "answered", "answer": "Read sys.argv[1] first", "evidence": [2]}', "short")
    assert r.items == (Item("Read sys.argv[1] first", (2,)),)
    r = parse_reply('Sure: {"status": "answered", "answer": "line one\nline two", "evidence": [1]}', "short")
    assert r.form == "json" and r.items[0].text == "line one line two"
    r = parse_reply('{"status": "answered", "answer": "Sundar Pichai", "evidence": [2]}', "points")
    assert r.items == (Item("Sundar Pichai", (2,)),)  # the short schema's field, whatever was asked
    assert parse_reply('{"status": "answered", "answer": "The documents do not say.", "evidence": []}',
                       "short").status == "not_in_documents"
