"""An expected answer a user types is often a summary or a paraphrase of what the documents say, or a figure computed
from what they state. No document writes it verbatim, yet no layer lost it: the parse probe finds where each part of
it is said in other words, and the later probes judge those chunks. A parse fault stays for what no document says in
any words."""

from __future__ import annotations

import pytest
from helpers import build_kb

from ragclinic.debugger import Debugger, Expectation
from ragclinic.debugger.said import derived
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline

DOCS = {
    "labels.md": "# Label incident\n\nWhy nobody caught it\n\nIn June the quality team lost its second technician, so "
                 "label inspection went from every pallet to one pallet in three.\n",
    "zh-bag.md": "# 受潮事件\n\n为何没有及时发现\n\n7月起，来料检验组一名员工离职、一名员工调岗，来料检验由每批全检改为每5批抽检1批。\n",
    "acme.md": "# Acme supply agreement\n\nPayment terms\n\nAcme invoices are paid within 30 days of delivery.\n",
    "birch.md": "# Birch milling agreement\n\nPayment terms\n\nBirch Mills is paid 45 days after the end of the month.\n",
    "cobalt.md": "# Cobalt hosting agreement\n\nFees\n\nCobalt's hosting fee is paid monthly in advance.\n",
    "pricing.md": "# Plans\n\nThe Pro plan costs £149 a month. Paying for the year upfront costs ten months' fees.\n",
    "museum.md": "# Harbour Museum\n\nThe Harbour Museum opened in 1962 with 40 rooms. Its east wing was added in\n\n, after "
                 "the flood, and the single spent\n\nat number one on the city chart.\n",
    "butter.md": "# Price list\n\n| Product | Pack | Retail price | Wholesale price |\n|---|---|---|---|\n"
                 "| Unsalted butter | 10 kg case | £74.00 | £63.50 |\n",
    "bream.md": "# Blue-lined bream\n\nThe blue-lined bream is found around Fiji, Samoa, Tonga and Palau.\n",
    "canteen.md": "# Canteen\n\nThe canteen serves soup and sandwiches from noon until two.\n",
}
TAGS = {"labels.md": {"year": "2024"}, "zh-bag.md": {"year": "2024"}}


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = build_kb(tmp_path_factory.mktemp("said"), DOCS, TAGS, judge="learned")  # the default judge
    yield base
    base.close()


def _run(kb, answer, question, scope=None, lm=None, **settings):
    pipe = Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=settings) if settings else None)
    return Debugger(pipe).diagnose(Expectation(((answer,),)), question=question, scope=scope)


def test_a_paraphrased_answer_behind_a_scope_filter_is_the_scope_not_the_parser(kb):
    d = _run(kb, "label checks were cut to every third pallet after the technician left",
             "Why didn't anyone catch the wrongly printed labels?", scope={"year": "2023"})
    parse = d.layers["parse"]
    assert parse.status == "ok", parse
    said = parse.evidence["said"]
    assert [s["doc_id"] for s in said] and all(s["doc_id"] == said[0]["doc_id"] for s in said)
    assert "labels.md" in said[0]["path"]
    assert d.verdict == "scope" and "year=2023" in d.suggestion


def test_a_chinese_paraphrase_is_found_in_the_document_that_says_it(kb):
    d = _run(kb, "来料检验人手减少，改成了每5批抽检1批", "内袋材料换了，入库的时候为什么没人发现？", scope={"year": "2023"})
    parse = d.layers["parse"]
    assert parse.status == "ok" and {s["part"] for s in parse.evidence["said"]} == {"来料检验人手减少",
                                                                                     "改成了每5批抽检1批"}
    assert all("zh-bag.md" in s["path"] for s in parse.evidence["said"])
    assert d.verdict == "scope"


def test_a_summary_over_several_documents_names_the_parts_the_search_missed(kb):
    d = _run(kb, "30 days for Acme, 45 days for Birch, monthly in advance for Cobalt",
             "What payment terms did we agree with each supplier?", top_k=1, context_k=1)
    parse = d.layers["parse"]
    assert parse.status == "ok" and len(parse.evidence["said"]) == 3
    assert {s["path"].rsplit("/", 1)[-1] for s in parse.evidence["said"]} == {"acme.md", "birch.md", "cobalt.md"}
    assert d.layers["chunk"].status == "ok"
    retrieve = d.layers["retrieve"]
    assert d.verdict == "retrieve" and retrieve.status == "fault", retrieve
    assert len(retrieve.evidence["missed_parts"]) == 2 and "2 of 3" in retrieve.evidence["summary"]
    assert any(f.settings.get("top_k", 0) > 1 for f in retrieve.fixes)


def test_a_computed_figure_is_placed_on_the_chunk_it_is_computed_from(kb):
    d = _run(kb, "£1,490", "What does the Pro plan cost if we pay for the whole year upfront?")
    parse = d.layers["parse"]
    assert parse.status == "ok" and parse.evidence["computed"] == ["1490"]
    assert "pricing.md" in parse.evidence["said"][0]["path"]
    assert d.verdict != "parse"


def test_what_no_document_says_in_any_words_is_still_a_parse_fault(kb):
    d = _run(kb, "the warehouse roof leaked onto the pallets", "Why did the pallets get wet?")
    assert d.verdict == "parse" and "in these or other words" in d.layers["parse"].evidence["summary"]
    assert d.layers["parse"].evidence["said"] == []


def test_a_figure_lost_from_the_document_is_not_taken_for_a_computed_one(kb):
    # 1991 is no single step from 1962 and 40: the year was lost (drawn as a picture), not computed
    d = _run(kb, "1991", "When was the Harbour Museum's east wing added?")
    assert d.verdict == "parse", d.layers["parse"]


def test_a_count_written_in_words_is_not_said_in_other_words_where_the_chunk_lacks_it(kb):
    d = _run(kb, "ten weeks", "How many weeks did the Harbour Museum's single spend at number one?")
    assert d.verdict == "parse", d.layers["parse"]


def test_names_in_a_chunk_about_something_else_do_not_say_the_answer(kb):
    d = _run(kb, "Fiji, Samoa and Tonga", "Where is the yellowfin parrotfish found?")
    assert d.verdict == "parse", d.layers["parse"]
    assert "bream.md" not in " ".join(s["path"] for s in d.layers["parse"].evidence["said"])


def test_a_computed_figure_is_one_step_from_two_stated_ones_as_written():
    assert derived("290", frozenset({"3480", "12"})) and derived("33.3", frozenset({"100", "3"}))
    assert derived("1490", frozenset({"149", "10"})) and derived("15", frozenset({"300", "5"}))  # 5% of 300
    assert not derived("1979", frozenset({"1976", "14", "10", "1"}))  # "Formula One" is no step
    assert not derived("69670", frozenset({"1.41", "9.89", "2008", "20"}))


def test_a_price_gap_is_computed_from_the_two_prices_of_one_row(kb):
    d = _run(kb, "£10.50", "what's the gap between the retail and wholesale price on a 10kg case of butter?")
    parse = d.layers["parse"]
    assert parse.status == "ok" and parse.evidence["computed"] == ["10.5"], parse
    assert "butter.md" in parse.evidence["said"][0]["path"]


def test_a_summary_that_leaves_parts_out_names_them_when_every_part_was_given(kb):
    lm = ScriptedLanguageModel(["Acme invoices are paid within 30 days of delivery [1]."] * 6, yes_prob=0.9)
    d = _run(kb, "30 days for Acme, 45 days for Birch, monthly in advance for Cobalt",
             "What payment terms did we agree with each supplier?", lm=lm, top_k=10, context_k=10)
    generate = d.layers["generate"]
    assert d.verdict == "generate" and generate.status == "fault", d.layers
    assert [p["part"] for p in generate.evidence["left_out"]] == ["45 days for Birch", "monthly in advance for Cobalt"]
    assert "leaves out 2" in generate.evidence["summary"] and "1 of 3 parts" in d.suggestion
