"""The debugger: each probe on a hand-made knowledge base where one layer is broken on purpose, the verdict
order, and the text locating the probes rely on."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BOND_DOCS, build_kb

from ragclinic.debugger import LAYERS, Debugger, Expectation, LayerReport
from ragclinic.debugger import debugger as dbg
from ragclinic.debugger.base import locate
from ragclinic.errors import RagclinicError
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.runner import Pipeline

POLICY_HTML = """<html><head><title>Returns policy</title></head><body><nav><a href='/'>Home</a></nav>
<article><h1>Returns policy</h1><p>We accept returns of unused items in their original packaging. Items must be
sent back with the receipt.</p><p>Refunds are paid to the original payment method after the item is inspected by
our warehouse team.</p></article><aside class="sidebar"><p>Important: the refund window is 45 days from delivery.</p>
</aside><footer><p>Copyright 2024 Shop Inc.</p></footer></body></html>"""
PROXY_Q = "What is the usual proxy for the risk-free rate?"
DURATION_Q = "What measures how much a bond price moves when interest rates change?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    docs = {**BOND_DOCS, "policy.html": POLICY_HTML,
            "tbills.md": "# Money markets\n\nT-bills serve as the benchmark for riskless returns in most markets.\n",
            "y2019.md": "# Pay 2019\n\nIn 2019 the bonus was paid in March.\n",
            "y2020.md": "# Pay 2020\n\nIn 2020 the salary review happened in June.\n"}
    docs.update({f"noise{i}.md": f"# Note {i}\n\nA proxy for the risk-free rate is discussed in note {i}, and the usual "
                                 "rate proxy debate continues.\n" for i in range(6)})
    base = build_kb(tmp_path_factory.mktemp("dbg"), docs, {"y2019.md": {"year": "2019"}, "y2020.md": {"year": "2020"}})
    yield base
    base.close()


def _run(kb, expect, question, scope=None, lm=None, **settings):
    pipe = Pipeline(kb, lm=lm, settings=kb.settings.model_copy(update=settings) if settings else None)
    return Debugger(pipe).diagnose(expect, question=question, scope=scope)


def _statuses(d):
    return {k: v.status for k, v in d.layers.items()}


def test_a_right_answer_gets_verdict_none(kb):
    d = _run(kb, Expectation((("duration",),)), DURATION_Q)
    assert d.answer_right and d.verdict == "none" and set(_statuses(d).values()) == {"ok"}
    assert d.layers["retrieve"].evidence["rank"] >= 1


def test_parse_fault_when_the_parser_drops_what_the_source_states(kb):
    d = _run(kb, Expectation((("45 days",),)), "How long is the refund window?")
    assert d.verdict == "parse" and not d.answer_right
    ev = d.layers["parse"].evidence
    assert "45 days" in ev["raw"] and "kb report" in d.suggestion


def test_parse_probe_names_a_hyphen_join(tmp_path):
    base = build_kb(tmp_path, {"flows.txt": "Valuation notes\n\nAnalysts discount the expected free cash-\nflow "
                                            "of the firm at the weighted cost of capital.\n"})
    try:
        d = _run(base, Expectation((("cash-flow",),)), "What do analysts discount?")
    finally:
        base.close()
    assert d.layers["parse"].status == "fault"
    assert "joins 'cash-' + 'flow'" in d.layers["parse"].suggestion
    assert d.verdict == "none"  # the normalised answer still matches: the hyphen does not make it wrong


def test_chunk_fault_when_a_boundary_cuts_the_answer(tmp_path):
    filler = " ".join(f"item{i}" for i in range(14))  # places the cut of a 24-token chunk inside the answer
    text = (f"# Long\n\nThe committee noted {filler} and then the final settlement amount was fixed at nine hundred "
            "thousand euros by the board with a long tail of words that follow it until the end of the sentence "
            "arrives.\n")
    base = build_kb(tmp_path, {"long.md": text}, chunk_max_tokens=24, chunk_min_tokens=4, overlap_min_tokens=0,
                    overlap_max_tokens=0)
    try:
        chunks = [t for (t,) in base.db.conn.execute("SELECT text FROM chunks")]
        answer = "nine hundred thousand euros"
        assert len(chunks) > 1 and not any(locate(answer, c) for c in chunks), "the fixture must split the answer"
        d = _run(base, Expectation(((answer,),)), "What was the final settlement amount fixed at?")
    finally:
        base.close()
    assert d.layers["parse"].status == "ok"
    assert d.verdict == "chunk" and "split between chunks" in d.suggestion
    assert "⟦|⟧" in d.layers["chunk"].evidence["boundary"]


def test_retrieve_fault_names_ranks_and_term_mismatch(kb):
    d = _run(kb, Expectation((("T-bills",),)), PROXY_Q, top_k=3, retriever="lexical")
    assert d.verdict == "retrieve"
    ev = d.layers["retrieve"].evidence
    assert ev["top_k"] == 3 and ev["ranks"]["lexical"] is None
    assert "term mismatch" in d.suggestion and "dense" in d.suggestion


def test_scope_fault_names_the_rule(kb):
    d = _run(kb, Expectation((("March",),)), "When was the bonus paid?", scope={"year": "2020"})
    assert d.verdict == "scope"
    assert d.layers["retrieve"].status == "ok"  # the retriever never saw it: not its fault
    assert "year=2020" in d.suggestion and "year=2019" in d.suggestion


def test_gate_fault_when_the_threshold_refuses_everything(kb):
    d = _run(kb, Expectation((("duration",),)), "Which measure tells how far a bond price moves when rates change?",
             gate_threshold_lexical=1.0)
    assert d.verdict == "gate" and "< 1.00 threshold" in d.suggestion
    assert d.layers["gate"].evidence["counterfactual_trace"]


def test_gate_fault_when_it_answers_without_evidence(kb):
    d = _run(kb, Expectation(expect_refusal=True), "What colour is the cat's collar?", gate_threshold_lexical=0.0)
    assert d.verdict == "gate" and "raise gate_threshold_lexical" in d.suggestion
    ok = _run(kb, Expectation(expect_refusal=True), "What colour is the cat's collar?")
    assert ok.answer_right and ok.verdict == "none"


def test_generate_fault_when_the_model_ignores_the_context(kb):
    lm = ScriptedLanguageModel(["The answer is 42 [1]."], yes_prob=0.9)
    d = _run(kb, Expectation((("duration",),)), DURATION_Q, lm=lm)
    assert d.verdict == "generate"
    assert [d.layers[k].status for k in LAYERS[:5]] == ["ok"] * 5
    assert "ignored passage [1]" in d.suggestion


def test_gold_doc_alone_is_an_expectation(kb, monkeypatch):
    [doc] = [d for d in kb.db.documents() if d["path"].endswith("duration.md")]
    d = _run(kb, Expectation(gold_doc=doc["doc_id"]), DURATION_Q)
    assert d.answer_right is None and d.verdict == "none"
    assert d.layers["retrieve"].status == "ok" and d.layers["generate"].status == "ok"
    monkeypatch.chdir(Path(doc["path"]).parent)  # a relative path names the document too
    assert _run(kb, Expectation(gold_doc="duration.md"), DURATION_Q).layers["parse"].status == "ok"
    with pytest.raises(RagclinicError, match="kb docs"):
        _run(kb, Expectation(gold_doc="no-such-doc"), PROXY_Q)
    with pytest.raises(RagclinicError, match="do not combine"):
        Expectation((("x",),), expect_refusal=True)


def test_verdict_is_the_first_fault_in_data_flow_order(kb, monkeypatch):
    reports = {"parse": "ok", "chunk": "ok", "retrieve": "fault", "scope": "ok", "gate": "fault", "generate": "fault"}
    fakes = {k: (lambda case, s=s, k=k: LayerReport(s, {"summary": k}, f"fix {k}")) for k, s in reports.items()}
    monkeypatch.setattr(dbg, "PROBES", fakes)
    d = Debugger(Pipeline(kb)).diagnose(Expectation((("no such answer",),)), question=PROXY_Q)
    assert d.verdict == "retrieve" and d.suggestion == "fix retrieve"
    assert [v.status for v in d.layers.values()] == list(reports.values())  # later layers still reported


def test_an_expectation_is_required_and_locate_ignores_form():
    with pytest.raises(RagclinicError, match="--expected"):
        Expectation()
    assert locate("risk-free", "the Risk-\nfree rate") is not None
    assert locate("risk-free", "the riskfree rate") is not None  # as eval matches answers: the hyphen does not matter
    assert locate("７０", "共有70个议席") == (2, 4)
    assert locate("Paris", "a Parisian café") is None and locate("70", "in 1970") is None
    assert locate("Paris", "in Paris, France") == (3, 8)


ZH_HTML = """<html><head><title>退货政策</title></head><body><nav><a href='/'>首页</a></nav><article><h1>退货政策</h1>
<p>我们接受未使用且包装完好的商品退货。退货时请附上购物小票。</p><p>退款会在仓库检查商品之后原路退回到付款账户。</p></article>
<aside class="sidebar"><p>重要提示：退款期限为收货后四十五天。</p></aside><footer><p>版权所有 2024</p></footer></body></html>"""


def test_chinese_parse_and_scope_faults(tmp_path):
    base = build_kb(tmp_path, {"policy.html": ZH_HTML, "a.md": "# 奖金\n\n2019年的奖金在三月发放。\n",
                               "b.md": "# 调薪\n\n2020年的调薪在六月进行。\n"},
                    {"a.md": {"year": "2019"}, "b.md": {"year": "2020"}})
    try:
        parse = _run(base, Expectation((("四十五天",),)), "退款期限是多久？")
        scope = _run(base, Expectation((("三月",),)), "奖金在什么时候发放？", scope={"year": "2020"})
        right = _run(base, Expectation((("三月",),)), "奖金在什么时候发放？")
    finally:
        base.close()
    assert parse.verdict == "parse" and "四十五天" in parse.layers["parse"].evidence["raw"]
    assert scope.verdict == "scope" and "year=2019" in scope.suggestion
    assert right.verdict == "none" and right.answer_right


def test_the_hyphen_fix_the_parse_probe_suggests_works(tmp_path):
    from ragclinic.ingest.runner import ingest

    text = "Valuation notes\n\nAnalysts discount the expected free cash-\nflow of the firm at the cost of capital.\n"
    base = build_kb(tmp_path, {"flows.txt": text})
    try:
        d = _run(base, Expectation((("cash-flow",),)), "What do analysts discount?")
        assert d.layers["parse"].evidence["compound"] == "cash-flow" and "--reparse" in d.layers["parse"].suggestion
        fixed = base.settings.model_copy(update={"keep_hyphens": ["cash-flow"]})
        base.settings = fixed
        base.lock()
        ingest(base, [tmp_path / "docs"], reparse=True)
        base.unlock()
        assert "cash-flow" in base.db.conn.execute("SELECT text FROM documents").fetchone()[0]
        assert _run(base, Expectation((("cash-flow",),)), "What do analysts discount?").layers["parse"].status == "ok"
    finally:
        base.close()


def test_an_answer_the_second_reading_let_through_is_fixed_by_turning_it_off(kb):
    """The threshold refused; the model, reading again, took a passage for an answer no document gives. Raising the
    threshold would change nothing (the refusal is read again), so the fix named is the second reading."""
    lm = ScriptedLanguageModel(["Duration measures how much a bond price moves when interest rates change",
                                "The cover is blue [1]."] * 3, yes_prob=0.9)
    d = _run(kb, Expectation(expect_refusal=True), "What colour is the cover of the duration report?", lm=lm,
             gate_threshold_lexical=1.0, gate_threshold_judge=1.0)
    gate = d.layers["gate"]
    assert d.verdict == "gate" and gate.evidence["decision"]["reread"] >= 1, gate
    assert "second reading" in gate.evidence["summary"] and "gate_reread" in d.suggestion
    assert [f.settings for f in d.fixes] == [{"gate_reread": False}]


def test_a_threshold_fix_also_comes_without_the_second_reading_when_a_model_reads_again(kb):
    lm = ScriptedLanguageModel(["The collar is red [1]."] * 4, yes_prob=0.9)
    d = _run(kb, Expectation(expect_refusal=True), "What colour is the cat's collar?", lm=lm,
             gate_threshold_lexical=0.0, gate_threshold_judge=0.0)
    assert d.verdict == "gate", d.layers["gate"]
    assert [set(f.settings) for f in d.fixes][-1] >= {"gate_reread"} and len(d.fixes) == 2
