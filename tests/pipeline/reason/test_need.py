"""Routing by what the question needs (pipeline/reason/need.py, collection.py; issue 55): the question's form and
what the search found decide global / mixed / causal, not cue words alone. The phrasings here are written for these
tests, in users' words; none is a question of bench/shapes55."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.reason import need
from ragclinic.pipeline.reason.collection import shared_names

from graph.helpers import graph_clinic


@pytest.mark.parametrize("q", [
    "Was it the late frost that killed the seedlings?",
    "How did the invoices end up going to the wrong address?",
    "what happened to sign-ups once we dropped the free tier?",
    "Did the road closure push deliveries back a week?",
    "Is the new supplier to blame for the mouldy crates?",
    "发票怎么就寄错地址了？",
    "新系统上线跟投诉变多有没有关系？",
    "人手不够算不算延误的原因？",
    "销量上涨是促销的功劳吗？",
])
def test_an_explanation_asked_in_any_form_is_seen(q):
    assert need.explains(q)


@pytest.mark.parametrize("q", [
    "What time does the depot open on Saturdays?",
    "How much is a 10 kg box of oats?",
    "Who signs off overtime requests?",
    "仓库周六几点开门？",
    "十公斤装燕麦多少钱？",
])
def test_a_plain_fact_question_asks_no_explanation_and_no_set(q):
    assert not need.explains(q) and not need.asks_set(q)


@pytest.mark.parametrize("q", [
    "Which vendors show up in several of our agreements?",
    "Is there anything the two audits have in common?",
    "Give me a timeline of the outages.",
    "What did each of the audits find?",
    "Which of our leases can be ended early, and what do the rest require?",
    "这两份审计报告有什么共同点？",
    "各家供应商的交货期分别是多久？",
    "哪几份租约可以提前解除？",
])
def test_a_question_about_a_set_is_seen_in_any_phrasing(q):
    assert need.asks_set(q)


LINKS = [{"cause": "the late frost in April", "effect": "half of the seedlings died",
          "sentence": "The late frost in April killed half of the seedlings.", "chunk_id": "c1", "doc_id": "d1",
          "hedged": False}]


def test_an_explanation_over_a_stated_link_is_causal():
    got = need.causal_need("Was it the late frost that killed the seedlings?", "factual", LINKS)
    assert got is not None and got.kind == "causal" and "frost" in got.link


def test_the_form_alone_is_not_causal_without_a_link_about_it():
    assert need.causal_need("Was it the new pricing that lost us the Harlow account?", "factual", LINKS) is None
    assert need.causal_need("How many seedlings were planted in April?", "factual", LINKS) is None


def test_the_rules_causal_type_stays_causal():
    assert need.causal_need("Why did the seedlings die?", "causal", []).kind == "causal"


def _hits(*docs_scores):
    return [SimpleNamespace(chunk=SimpleNamespace(doc_id=d, id=f"{d}-{i}"), score=s)
            for i, (d, s) in enumerate(docs_scores)]


def test_a_set_question_is_global_when_its_evidence_spans_documents():
    spread = _hits(("a", 1.0), ("b", 0.9), ("c", 0.8), ("a", 0.5))
    one = _hits(("a", 1.0), ("a", 0.9), ("b", 0.3))
    q = "Which vendors show up in several of our agreements?"
    assert need.global_need(q, "specific", spread, []).kind == "global"
    assert need.global_need(q, "specific", one, []) is None
    assert need.global_need(q, "specific", one, [], family=3).kind == "global"  # "our agreements": a family
    assert need.global_need(q, "specific", one, [], weak=True).kind == "global"  # tried before a refusal
    assert need.global_need(q, "specific", spread, ["Harlow Ltd"]).kind == "mixed"
    assert need.global_need("How much is a 10 kg box of oats?", "specific", spread, []) is None


def _passage(n: int, doc_id: str, text: str):
    return SimpleNamespace(n=n, chunk=SimpleNamespace(doc_id=doc_id, text=text, language="en"))


def test_shared_names_lists_what_several_documents_name_but_not_the_owner_named_everywhere():
    ps = [_passage(1, "d1", "Acme Farms signed with Tolley Haulage in May."),
          _passage(2, "d2", "Acme Farms buys oats from Merrow Mills. Tolley Haulage collects them."),
          _passage(3, "d3", "Acme Farms rents the Bexley depot.")]
    note = shared_names(ps, "en")
    assert "Tolley Haulage [1][2]" in note and "Acme" not in note and "Merrow" not in note


DOCS = {
    "lease-riverside.md": "# Lease: Riverside Unit\n\nThe Riverside Unit lease runs to 2027. Hollin Estates is the "
                          "landlord. The tenant may end the lease early with six months' notice.\n",
    "lease-canal.md": "# Lease: Canal Yard\n\nThe Canal Yard lease runs to 2026. Hollin Estates is the landlord. "
                      "The lease cannot be ended early.\n",
    "lease-mill.md": "# Lease: Mill Street\n\nThe Mill Street lease runs to 2029. Parr & Sons is the landlord. "
                     "The tenant may end the lease early with three months' notice.\n",
    "canteen.md": "# Canteen\n\nThe canteen opens at 8am on weekdays.\n",
    "parking.md": "# Parking\n\nVisitors park in bays 1 to 6.\n",
    "fire.md": "# Fire drills\n\nThe next fire drill is on 3 May at 2pm.\n",
    "it.md": "# IT help\n\nPasswords are changed every 90 days.\n",
}


def test_a_set_question_without_cue_words_takes_the_documents_path_and_sees_each_document(tmp_path):
    with graph_clinic(tmp_path, mode="", docs=DOCS, top_k=2, context_k=2) as c:
        res = c.consult("Which of our leases can we get out of early?", doctor=False, cache=False)
        gate = res.trace.span("gate").outputs
        g = gate["graph"]
        assert g["need"]["kind"] == "global" and g["path"] == "documents"
        assert "lease".startswith(g["collection"]["family"]) and g["collection"]["family_docs"] == 3
        docs = {p["hit"]["chunk"]["doc_id"] for p in gate["passages"]}
        titles = {r[0] for r in c.kb.db.conn.execute(
            f"SELECT title FROM documents WHERE doc_id IN ({','.join('?' * len(docs))})", list(docs))}
        assert {"Lease: Riverside Unit", "Lease: Canal Yard", "Lease: Mill Street"} <= titles
        assert gate["decision"]["route"] == "answer" and gate["decision"]["path"] == "global"
        assert "Hollin Estates" in g["shared_names"]  # two leases name it


def test_the_model_reads_each_document_and_the_names_they_share(tmp_path):
    model = ScriptedLanguageModel(['{"status": "answered", "points": [{"text": "The Riverside Unit lease can be '
                                   'ended early with six months\' notice.", "evidence": [1]}]}'], yes_prob=0.9)
    with graph_clinic(tmp_path, mode="", docs=DOCS, top_k=2, context_k=2, model=model) as c:
        c.consult("Which of our leases can we get out of early?", doctor=False, cache=False)
    prompt = next(m.content for kind, msgs in model.calls if kind == "chat" for m in msgs if m.role == "user")
    for unit in ("Riverside Unit", "Canal Yard", "Mill Street"):
        assert unit in prompt
    assert "Named in more than one document: Hollin Estates" in prompt


def test_need_routing_off_keeps_the_cue_rules(tmp_path):
    with graph_clinic(tmp_path, mode="", docs=DOCS, top_k=2, context_k=2, need_routing=False) as c:
        res = c.consult("Which of our leases can we get out of early?", doctor=False, cache=False)
        g = res.trace.span("gate").outputs["graph"]
        assert g["kind"] == "specific" and "need" not in g and g["path"] == "chunks"


def test_a_documents_path_answer_replays_frozen(tmp_path):
    with graph_clinic(tmp_path, mode="", docs=DOCS) as c:
        res = c.consult("Which of our leases can we get out of early?", doctor=False, cache=False)
        assert c.replay(res.trace.id).text == res.answer.text
        assert c.rerun(res.trace.id, "gate").text == res.answer.text


FROST = ("A late frost on 12 April killed half of the seedlings in the north field. The frost may have contributed to "
         "the poor apple harvest in September.")
FARM = "The farm shop opens at 9am and sells apples, honey and cider from the orchard."


def _causal_clinic(tmp_path, reply, yes_prob=0.9, **settings):
    from ragclinic import Clinic

    root = tmp_path / "docs"
    root.mkdir(parents=True, exist_ok=True)
    for name, text in {"frost.md": FROST, "shop.md": FARM}.items():
        (root / name).write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel([reply], yes_prob=yes_prob), embedder="fake",
                    judge="llm", cache_dir=tmp_path / "cache", causal_links=True, **settings)
    c.ingest([root])
    return c


def test_an_attribution_asked_without_why_gets_the_typed_chain(tmp_path):
    q = "Was it the frost that ruined the apple harvest?"
    with _causal_clinic(tmp_path, "The frost may have contributed to the poor harvest [1].") as c:
        res = c.consult(q, doctor=False, cache=False)
    p = res.payload
    gate = res.trace.span("gate").outputs
    assert gate["decision"]["question_type"] == "causal" and gate["decision"]["type_by"] == "need"
    assert gate["graph"]["need"]["kind"] == "causal" and "frost" in gate["graph"]["need"]["link"].lower()
    assert p["causal_chain"] and p["evidence_strength"] in ("limited", "strong")
    assert "causal_ranking" in res.trace.span("scope").outputs


def test_without_need_routing_the_same_question_is_factual(tmp_path):
    q = "Was it the frost that ruined the apple harvest?"
    with _causal_clinic(tmp_path, "The frost may have contributed to the poor harvest [1].",
                        need_routing=False) as c:
        res = c.consult(q, doctor=False, cache=False)
    assert res.trace.span("gate").outputs["decision"]["question_type"] != "causal" and not res.payload["causal_chain"]


def test_a_question_with_an_explanation_form_but_no_stated_link_is_not_causal(tmp_path):
    with _causal_clinic(tmp_path, "The shop opens at 9am [1].") as c:
        res = c.consult("Did the new opening hours push sales up at the farm shop?", doctor=False, cache=False)
    assert res.trace.span("gate").outputs["decision"]["question_type"] != "causal"


def test_a_weak_score_does_not_refuse_an_attribution_a_passage_states(tmp_path):
    q = "Was it the frost that ruined the apple harvest?"
    reply = "The frost may have contributed to the poor harvest [1]."
    with _causal_clinic(tmp_path / "off", reply, yes_prob=0.05, need_routing=False, gate_reread=False) as c:
        assert c.consult(q, doctor=False, cache=False).answer.refused
    with _causal_clinic(tmp_path / "on", reply, yes_prob=0.05, gate_reread=False) as c:
        res = c.consult(q, doctor=False, cache=False)
    decision = res.trace.span("gate").outputs["decision"]
    assert decision["route"] == "answer" and "states the link it asks about" in decision["reason"]
    assert not res.answer.refused


def test_the_subject_check_leaves_an_explanation_asked_in_another_form_alone():
    from ragclinic.pipeline.generate.layer import _one_subject

    d = SimpleNamespace(question_type="factual")
    assert not _one_subject(d, [], "How did the invoices end up going to the wrong address?")
    assert not _one_subject(d, [], "发票怎么就寄错地址了？")
    assert _one_subject(d, [], "How many days of bereavement leave do we get?")
    documents = [SimpleNamespace(marks=("collection",))]
    assert not _one_subject(d, documents, "Which of our leases can we get out of early?")


def test_the_documents_path_reads_and_counts_only_the_tenants_own_documents(tmp_path):
    from ragclinic import Clinic

    from graph.helpers import write_docs

    c = Clinic.open(tmp_path / "kb", model=None, embedder="fake", judge="lexical", cache_dir=tmp_path / "cache",
                    llm="none")
    c.ingest([write_docs(tmp_path / "acme", {n: DOCS[n] for n in DOCS if n != "lease-mill.md"})],
             tags={"tenant": "acme"})
    c.ingest([write_docs(tmp_path / "globex", {"lease-mill.md": DOCS["lease-mill.md"]})], tags={"tenant": "globex"})
    with c:
        acme = {d for d, in c.kb.db.conn.execute("SELECT doc_id FROM documents WHERE json_extract(tags, '$.tenant') "
                                                  "= 'acme'")}
        res = c.consult("Which of our leases can we get out of early?", doctor=False, cache=False,
                        enforced={"tenant": "acme"})
        g = res.trace.span("gate").outputs["graph"]
        assert g["collection"]["family_docs"] == 2  # acme's two leases; globex's Mill Street lease never counts
        assert set(g["collection"]["documents"]) <= acme
        assert {p["hit"]["chunk"]["doc_id"] for p in res.trace.span("gate").outputs["passages"]} <= acme
        assert "Mill Street" not in str(res.trace.span("gate").outputs) and "Parr" not in res.answer.text
