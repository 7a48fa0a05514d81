from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ragclinic.ingest.parse.dehyphen import dehyphenate, gather_evidence


@pytest.mark.parametrize("text, expected, joins, kept", [
    ("retrie-\nval", "retrieval", 1, 0),
    ("retrie-  \n   val works", "retrieval works", 1, 0),
    ("risk-\nfree", "risk-free", 0, 1),  # known compound
    ("well-\nknown", "well-known", 0, 1),
    ("self-\nattention", "self-attention", 0, 1),  # compound prefix
    ("model-\nbased", "model-based", 0, 1),  # compound suffix
    ("state-of-the-\nart", "state-of-the-art", 0, 1),  # already hyphenated
    ("end-to-\nend", "end-to-end", 0, 1),
    ("COVID-\n19", "COVID-19", 0, 1),  # digit after the hyphen
    ("pre-\nBERT", "pre-BERT", 0, 1),  # uppercase after the hyphen
    ("multi-\nple", "multiple", 1, 0),  # a word ending, not a compound
    ("high-\nlight", "highlight", 1, 0),  # closed compound
    ("inter-\naction", "interaction", 1, 0),
    ("e-\nmail", "e-mail", 0, 1),  # one letter before a break is never a typesetting break (TeX lefthyphenmin=2)
    ("x-\nray", "x-ray", 0, 1),
    ("anti-\ninflammatory", "anti-inflammatory", 0, 1),
    ("so-\ncalled", "so-called", 0, 1),
    ("soft\u00ad\nhyphen", "softhyphen", 1, 0),
    ("a list -\nitem", "a list -\nitem", 0, 0),  # a dash after a space is not a word hyphen
    ("no break here", "no break here", 0, 0),
])
def test_line_break_hyphens(text, expected, joins, kept):
    result = dehyphenate(text)
    assert (result.text, result.joins, result.kept) == (expected, joins, kept)


def test_document_evidence_decides():
    # "data-\nbase" alone would be joined, but the document writes "data-base" elsewhere.
    doc = "We store it in a data-base.\nThe data-\nbase is small."
    assert dehyphenate(doc).text == "We store it in a data-base.\nThe data-base is small."
    # "cross-\nover" would be kept by the prefix rule, but the document writes "crossover".
    assert dehyphenate("cross-\nover and crossover").text == "crossover and crossover"


def test_evidence_can_come_from_other_blocks():
    evidence = gather_evidence(["Our co-\nlearning method.", "We call it co-learning."])
    assert dehyphenate("Our co-\nlearning method.", evidence).text == "Our co-learning method."
    assert dehyphenate("Our co-\nlearning method.").text == "Our colearning method."


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab-\n Z1 "), max_size=60))
def test_only_line_break_hyphens_change(text):
    result = dehyphenate(text)
    # Removing exactly the hyphens/newlines that were joined or kept accounts for the length change.
    assert len(result.text) <= len(text)
    assert result.text.replace("-", "").replace("\n", "").replace(" ", "") == \
        text.replace("-", "").replace("\n", "").replace(" ", "")
    assert result.joins + result.kept <= text.count("\n")


def test_long_runs_of_letters_stay_linear():
    import time

    from ragclinic.ingest.parse import quality

    text = "retrie-\nval " + "a" * 40_000 + " risk-\nfree"
    t0 = time.perf_counter()
    dehyphenate(text)
    quality._LINE_BREAK_WORD.sub(" ", "g" * 40_000 + "-\nx")
    # A hang guard, not a speed goal: quadratic regexes took ~30 s here; linear ones take ~10 ms.
    assert time.perf_counter() - t0 < 10.0


def test_keep_hyphens_keeps_a_compound_the_rules_would_join():
    text = "the expected free cash-\nflow of the firm"
    assert dehyphenate(text).text == "the expected free cashflow of the firm"
    kept = dehyphenate(text, gather_evidence([text], keep=["cash-flow"]))
    assert kept.text == "the expected free cash-flow of the firm" and kept.kept == 1
