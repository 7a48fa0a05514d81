from __future__ import annotations

import pytest

from ragclinic.config import Settings
from ragclinic.errors import LayerError
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker, chunk_document
from ragclinic.ingest.chunk.tokens import FakeTokenCounter
from ragclinic.types import ParsedDocument, make_chunk_id

from .docs import DocBuilder, small_settings, words

FAKE = FakeTokenCounter()


def run(doc: ParsedDocument, **overrides):
    return Chunker(small_settings(**overrides), FAKE).chunk(doc)


def check_basics(doc, chunks, max_tokens=40):
    for i, c in enumerate(chunks):
        assert doc.text[c.start:c.end] == c.text and c.text == c.text.strip() and c.text
        assert c.ordinal == i and c.doc_id == doc.doc_id
        assert FAKE.count(c.text) <= c.tokens <= max_tokens
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})


@pytest.mark.parametrize("text", ["", "   \n\n\t "])
def test_empty_documents_give_no_chunks(text):
    doc = ParsedDocument(doc_id="e", path="/e.txt", record_key="", title="", text=text)
    chunks, report = run(doc)
    assert chunks == ()
    stats = (report.chunks, report.tokens_min, report.tokens_max, report.tokens_mean, report.tokens_p90)
    assert stats == (0, 0, 0, 0, 0)
    assert report.warnings == ()


def test_fields_of_a_chunk():
    b = DocBuilder().heading(1, "Intro").para(words(6), words(5, "Bravo")).heading(2, "Detail")
    b.para("这是第一句中文。这是第二句。")
    doc = b.build(pages=2)
    chunks, report = run(doc)
    check_basics(doc, chunks)
    first = chunks[0]
    assert first.section == ("Intro",) and first.page == 1 and first.language == "en"
    assert first.id == make_chunk_id(doc.doc_id, first.text, 0)
    assert any(c.section == ("Intro", "Detail") or "中文" in c.text for c in chunks)
    assert report.chunks == len(chunks) and report.mid_sentence_ends == 0
    assert chunk_document(doc, small_settings(), FAKE) == (chunks, report)


def test_language_and_section_of_a_chinese_subsection():
    b = DocBuilder().heading(1, "Intro").para(words(30)).heading(2, "中文").para("这是第一句中文。" * 5)
    chunks, _ = run(b.build())
    zh = [c for c in chunks if c.text.startswith("这") or c.text.startswith("## 中文")]
    assert zh and zh[-1].language == "zh" and zh[-1].section == ("Intro", "中文")


def test_packs_up_to_the_limit_at_sentence_ends():
    b = DocBuilder().heading(1, "A").para(*[words(7, w) for w in ["One", "Two", "Three", "Four", "Five",
                                                                  "Six", "Seven", "Eight", "Nine", "Ten"]])
    doc = b.build()
    chunks, report = run(doc)
    check_basics(doc, chunks)
    assert len(chunks) >= 2 and all(c.end in b.ends for c in chunks)
    assert max(c.tokens for c in chunks) > 30  # packed, not one sentence each
    assert report.mid_sentence_ends == 0 and report.overlong_sentences == 0


def test_overlap_is_one_or_two_whole_sentences_within_bounds():
    sentences = [words(n, f"S{i}") for i, n in enumerate([9, 8, 3, 9, 9, 2, 3, 8, 9, 7, 3, 9])]
    b = DocBuilder().para(*sentences)
    doc = b.build()
    chunks, _ = run(doc)
    check_basics(doc, chunks)
    overlaps = 0
    for prev, cur in zip(chunks, chunks[1:]):
        own = cur.metadata["content_start"]
        if own == cur.start:
            continue
        overlaps += 1
        overlap = doc.text[cur.start:own].strip()
        assert prev.text.endswith(overlap) and cur.start in b.starts
        n_sent = sum(1 for s in b.starts if cur.start <= s < own)
        assert n_sent in (1, 2)
        assert 4 <= FAKE.count(overlap) == cur.metadata["overlap_tokens"] <= 12
        if n_sent == 2:  # a second sentence only when the last alone is under the minimum
            last = max(s for s in b.starts if s < own)
            assert FAKE.count(doc.text[last:own]) < 4
    assert overlaps >= 2


def test_no_overlap_when_the_last_sentence_is_over_the_overlap_max():
    b = DocBuilder().para(*[words(15, f"S{i}") for i in range(6)])
    doc = b.build()
    chunks, _ = run(doc)
    assert len(chunks) >= 3
    assert all(c.metadata["overlap_tokens"] == 0 and c.metadata["content_start"] == c.start for c in chunks)
    assert all(a.end < b.start for a, b in zip(chunks, chunks[1:]))


def test_overlong_sentence_is_cut_at_clauses_and_reported():
    long = ", ".join(words(6, f"Part{i}", last="") for i in range(20)) + "."
    b = DocBuilder().heading(1, "A").para(words(5), long, words(5, "After"))
    doc = b.build(path="/data/long.md")
    chunks, report = run(doc)
    check_basics(doc, chunks)
    assert report.overlong_sentences == 1
    start = doc.text.index("Part0")
    assert any("/data/long.md" in w and f"sentence at {start}-" in w for w in report.warnings)
    inside = [c for c in chunks if start < c.end < start + len(long)]
    assert inside and all(c.text.endswith(",") for c in inside)  # cut at clause ends only
    assert report.mid_sentence_ends == len(inside)
    assert all(c.end in b.ends for c in chunks if c not in inside)


def test_small_table_stays_whole():
    rows = [["name", "value"], ["alpha", "1"], ["beta", "2"]]
    b = DocBuilder().heading(1, "A").para(words(8), words(8, "Bravo")).table(rows).para(words(8, "Charlie"))
    doc = b.build()
    chunks, report = run(doc)
    check_basics(doc, chunks)
    t = doc.tables[0]
    table_text = doc.text[t.start:t.end].strip()
    assert any(table_text in c.text for c in chunks)
    assert not any(t.start < c.start < t.end or t.start < c.end < t.end - 1 for c in chunks)
    assert report.split_tables == 0 and report.mid_sentence_ends == 0


def test_huge_table_is_split_at_rows_and_reported():
    rows = [[f"cell{i}", "x y z", str(i)] for i in range(30)]
    b = DocBuilder().heading(1, "A").para(words(8)).table(rows).para(words(8, "After"))
    doc = b.build(path="/data/table.md")
    chunks, report = run(doc)
    check_basics(doc, chunks)
    assert report.split_tables == 1 and report.mid_sentence_ends == 0
    assert any("/data/table.md" in w and "table at" in w for w in report.warnings)
    assert all(c.end in b.ends for c in chunks)  # every cut at a row (or sentence) end
    t = doc.tables[0]
    assert sum(1 for c in chunks if c.start < t.end and c.end > t.start) >= 3


def test_chunks_never_cross_top_level_sections():
    b = DocBuilder().para(words(4, "Preface"))
    b.heading(1, "One").para(words(5)).heading(2, "One-a").para(words(5, "Sub"))
    b.heading(1, "Two").para(words(5, "Second"))
    doc = b.build()
    chunks, report = run(doc)
    check_basics(doc, chunks)
    tops = [s for s in doc.sections if s.level == 1]
    for c in chunks:
        assert not any(c.start < s.start < c.end for s in tops)
    # the preface, section One (with its subsection: they may share a chunk), section Two
    assert len(chunks) == 3
    assert "One-a" in chunks[1].text and chunks[1].section == ("One",)
    assert chunks[2].section == ("Two",)


def test_top_level_is_the_smallest_level_present():
    b = DocBuilder().heading(2, "A").para(words(5)).heading(2, "B").para(words(5, "Bravo"))
    doc = b.build()
    chunks, _ = run(doc)
    assert [c.section for c in chunks] == [("A",), ("B",)]


def test_duplicate_texts_get_distinct_ids_and_are_reported():
    b = DocBuilder()
    for _ in range(3):
        b.heading(1, "Same").para(words(5))
    doc = b.build()
    chunks, report = run(doc)
    assert len(chunks) == 3 and len({c.text for c in chunks}) == 1
    assert len({c.id for c in chunks}) == 3
    assert [c.metadata["occurrence"] for c in chunks] == [0, 1, 2]
    assert report.duplicate_chunks == 2


def test_tiny_tail_is_merged_by_rebalancing():
    b = DocBuilder().para(*[words(10, f"S{i}") for i in range(4)], words(2, "Tail"))
    doc = b.build()
    chunks, report = run(doc, overlap_min_tokens=0, overlap_max_tokens=0)
    check_basics(doc, chunks)
    assert [c.tokens for c in chunks] == [20, 22]  # greedy gives 40 and 2; the pair is re-cut evenly
    assert report.tiny_chunks == 0


def test_tiny_chunk_in_the_middle_is_rebalanced_with_the_one_before():
    sizes = {"A": 10, "B": 10, "C": 10, "D": 10, "E": 3, "F": 38}  # greedy: 40, 3 (tiny), 38
    b = DocBuilder().para(*[words(n, first) for first, n in sizes.items()])
    doc = b.build()
    chunks, report = run(doc, overlap_min_tokens=0, overlap_max_tokens=0)
    assert [c.tokens for c in chunks] == [20, 23, 38]  # the first pair re-cut evenly
    assert report.tiny_chunks == 0


def test_heading_only_section_is_a_reported_tiny_chunk():
    b = DocBuilder().heading(1, "Empty").heading(1, "Full").para(words(10))
    doc = b.build(path="/data/h.md")
    chunks, report = run(doc)
    assert chunks[0].text == "# Empty" and report.tiny_chunks == 1
    assert any("/data/h.md" in w and "under chunk_min_tokens" in w for w in report.warnings)


def test_report_statistics():
    b = DocBuilder()
    for n in (5, 10, 20):
        b.heading(1, f"H{n}").para(words(n))
    chunks, report = run(b.build())
    sizes = sorted(c.tokens for c in chunks)
    assert (report.tokens_min, report.tokens_max) == (sizes[0], sizes[-1])
    assert report.tokens_p50 == sizes[1] and report.tokens_mean == pytest.approx(sum(sizes) / 3)
    assert report.to_dict()["chunks"] == 3


def test_failures_are_wrapped_with_the_layer_and_path():
    class Broken:
        name = "broken"

        def count(self, text):
            raise ValueError("boom")

    doc = DocBuilder().para(words(5)).build(path="/data/x.md")
    with pytest.raises(LayerError, match=r"chunk layer: /data/x.md: ValueError: boom"):
        Chunker(small_settings(), Broken()).chunk(doc)


@pytest.mark.slow
def test_real_e5_counter_on_english_and_chinese():
    e5 = TOKEN_COUNTERS.create("e5")
    b = DocBuilder().heading(1, "Background")
    b.para("Retrieval-augmented generation combines a retriever with a language model. "
           "The retriever finds passages; the model writes an answer from them. "
           "Dr. Smith tested it at 5 p.m. on 3,000 questions. It answered most of them correctly.")
    b.heading(1, "中文").para("检索增强生成把检索器和语言模型结合起来。检索器找到相关段落，模型根据它们写出答案。"
                            "他说：“效果很好。”然后离开了。")
    doc = b.build()
    settings = Settings(chunk_max_tokens=32, chunk_min_tokens=4, overlap_min_tokens=4, overlap_max_tokens=12)
    chunks, report = Chunker(settings, e5).chunk(doc)
    assert len(chunks) >= 4
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        assert e5.count(c.text) <= c.tokens <= 32
    assert {c.language for c in chunks} == {"en", "zh"}
    assert report.mid_sentence_ends == 0 and report.overlong_sentences == 0
