"""The doctor counts words in the documents the question's tenant may read (issue 32, doctor/lexicon.py): the term
check ("term(s) … never occur in the corpus") and the idf of the key terms a rewrite picks. Counted over the whole
index they told a tenant's key whether another tenant's documents use a word. A key without a tenant counts over
the whole knowledge base, as before."""

from __future__ import annotations

import pytest

from helpers import build_kb
from ragclinic.doctor.detectors.query import TermMismatch
from ragclinic.doctor.lexicon import Lexicon
from ragclinic.doctor.symptoms import Exam
from ragclinic.doctor.treatments.query import key_terms
from ragclinic.pipeline.runner import Pipeline

ACME = {"tenant": "acme"}
ACME_TEXT = ("# Refunds\n\nThe acme refund window is 45 days. Claims go through the harbour office, which keeps the "
             "refund ledger and sends a courier with each approved claim.\n")
# globex's document, in two versions of as many words: with "zorblax" and acme's words, or with neither
GLOBEX = {True: "# Vault\n\nThe zorblax is kept in the harbour vault. The harbour ledger names the courier who "
                "carries the zorblax.\n",
          False: "# Vault\n\nThe quimbly is kept in the meadow vault. The meadow almanac names the gardener who "
                 "carries the quimbly.\n"}
Q = "What is the zorblax refund ledger?"


@pytest.fixture(scope="module")
def kbs(tmp_path_factory):
    made = {}
    for shared in (True, False):
        made[shared] = build_kb(tmp_path_factory.mktemp(f"words_{shared}"),
                                {"acme.md": ACME_TEXT, "globex.md": GLOBEX[shared]},
                                {"acme.md": ACME, "globex.md": {"tenant": "globex"}})
    yield made
    for kb in made.values():
        kb.close()


def _exam(kb, enforced=None) -> Exam:
    state, trace = Pipeline(kb).ask(Q, enforced=enforced, save=False)
    return Exam(state, trace, kb, kb.settings)


def test_the_term_check_counts_a_tenants_words_in_its_own_documents(kbs):
    for shared in (True, False):
        sym = TermMismatch().detect(_exam(kbs[shared], ACME))
        assert sym.data["unknown"] == ["zorblax"] and "never occur in the corpus" in sym.evidence, sym
    tenant = [TermMismatch().detect(_exam(kbs[s], ACME)) for s in (True, False)]
    assert tenant[0] == tenant[1]  # the same whether or not globex's document uses the word


def test_the_admin_still_counts_over_the_whole_knowledge_base(kbs):
    assert TermMismatch().detect(_exam(kbs[True])).data == {}  # globex's document uses it: no unknown term
    assert TermMismatch().detect(_exam(kbs[False])).data["unknown"] == ["zorblax"]


def test_key_terms_weigh_words_by_the_tenants_documents_only(kbs):
    texts = [ACME_TEXT]
    picked = {s: key_terms(_exam(kbs[s], ACME), texts, 20) for s in (True, False)}
    assert picked[True] == picked[False] and picked[True]
    admin = {s: key_terms(_exam(kbs[s]), texts, 20) for s in (True, False)}
    assert admin[True] != admin[False]  # the admin's idf still sees globex's harbour, ledger and courier


def test_a_lexicon_over_some_chunks_counts_only_those(kbs):
    kb = kbs[True]
    rows = {r[0] for r in kb.db.conn.execute("SELECT c.rowid FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
                                             "WHERE d.tags LIKE '%acme%'")}
    whole, acme, none = Lexicon(kb.lexical()), Lexicon(kb.lexical(), rows), Lexicon(kb.lexical(), set())
    assert whole.doc_freq("harbour") == 2 and acme.doc_freq("harbour") == 1 and none.doc_freq("harbour") == 0
    assert whole.doc_freq("zorblax") == 1 and acme.doc_freq("zorblax") == 0 == none.doc_freq("zorblax")
    # acme's one chunk: fewer admitted rows than chunks using "harbour" (the pre-filtered count); with a row that
    # no chunk has, as many (every chunk using it, kept if admitted)
    wider = Lexicon(kb.lexical(), rows | {10**9})
    assert len(rows) == 1 and wider.doc_freq("harbour") == 1 and wider.doc_freq("zorblax") == 0
    assert len(acme) == len(rows) and len(whole) == 2 and len(none) == 0
