"""Properties over random documents: random sentences (English words, Chinese characters, some
over the limit), headings at random levels, blank-line paragraphs and tables."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragclinic.ingest.chunk import Chunker
from ragclinic.ingest.chunk.tokens import FakeTokenCounter
from ragclinic.text.sentences import split_clauses, split_sentences

from .docs import DocBuilder, small_settings

FAKE = FakeTokenCounter()
SETTINGS = small_settings()  # max 40, min 5, overlap 4..12
VOCAB = ["river", "stone", "lamp", "cloud", "quiet", "music", "paper", "bread", "winter", "garden"]
HANZI = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经"

english = st.builds(
    lambda first, rest, commas, end: " ".join(
        [first.capitalize()] + [w + ("," if i in commas else "") for i, w in enumerate(rest)]) + end,
    st.sampled_from(VOCAB), st.lists(st.sampled_from(VOCAB), max_size=55),
    st.sets(st.integers(0, 55), max_size=6), st.sampled_from([".", "?", "!"]))
chinese = st.builds(lambda body, end, quote: body + end + quote,
                    st.text(HANZI, min_size=1, max_size=50), st.sampled_from(["。", "！", "？", "……"]),
                    st.sampled_from(["", "”", "」"]))
sentence = st.one_of(english, english, chinese)
paragraph = st.tuples(st.lists(sentence, min_size=1, max_size=6), st.sampled_from([" ", "", "\n"]))
cell = st.sampled_from(VOCAB + ["1", "2.5"])
table = st.lists(st.lists(cell, min_size=2, max_size=4), min_size=1, max_size=14)
section = st.tuples(st.integers(1, 3), st.sampled_from(VOCAB),
                    st.lists(st.one_of(paragraph, paragraph, paragraph, table), max_size=4))
document = st.tuples(st.lists(paragraph, max_size=2), st.lists(section, max_size=5))


def build(spec) -> DocBuilder:
    preface, sections = spec
    b = DocBuilder()
    for sentences, joiner in preface:
        b.para(*sentences, joiner=" " if joiner == "\n" else joiner)
    for level, title, blocks in sections:
        b.heading(level, title.capitalize())
        for block in blocks:
            if isinstance(block, tuple):
                b.para(*block[0], joiner=block[1])
            else:
                b.table(block)
    return b


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document)
def test_chunking_properties(spec):
    b = build(spec)
    doc = b.build()
    chunks, report = Chunker(SETTINGS, FAKE).chunk(doc)
    text = doc.text

    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert text[c.start:c.end] == c.text and c.text == c.text.strip() != ""
        assert c.ordinal == i
        assert FAKE.count(c.text) <= c.tokens <= SETTINGS.chunk_max_tokens
        covered[c.start:c.end] = b"\1" * (c.end - c.start)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))

    starts = [c.start for c in chunks]
    assert starts == sorted(set(starts))
    assert len({c.id for c in chunks}) == len(chunks)

    # Cuts only where the builder ended a sentence, heading or table row, unless a sentence
    # was over the limit (and then it was reported).
    off = [c for c in chunks if c.end not in b.ends]
    assert not off or report.overlong_sentences > 0
    assert report.mid_sentence_ends == 0 or report.overlong_sentences > 0

    if doc.sections:
        top = min(s.level for s in doc.sections)
        edges = {x for s in doc.sections if s.level == top for x in (s.start, s.end)}
        assert not any(c.start < e < c.end for c in chunks for e in edges)

    sentence_starts = {s for a, e in b.paragraphs for s, _ in split_sentences(text[a:e], a)}
    # Overlap: a suffix of the previous chunk, at most two whole sentences, within overlap_max.
    for prev, cur in zip(chunks, chunks[1:]):
        own = cur.metadata["content_start"]
        if own > cur.start:
            assert cur.start in b.starts and prev.start < cur.start < prev.end
            assert prev.text.endswith(text[cur.start:own].strip())
            # Count the splitter's sentences (pysbd reads the builder's "一…… River." as one),
            # split per paragraph as the chunker does.
            assert sum(1 for s in sentence_starts if cur.start <= s < own) <= 2
            overlap_tokens = cur.metadata["overlap_tokens"]
            assert FAKE.count(text[cur.start:own]) <= overlap_tokens <= SETTINGS.overlap_max_tokens

    assert report.chunks == len(chunks)
    assert report.tiny_chunks == sum(c.tokens < SETTINGS.chunk_min_tokens for c in chunks)
    assert report.duplicate_chunks == len(chunks) - len({c.text for c in chunks})


alphabet = st.sampled_from([*"ab .!?,;:\n\r\t\u00a0\u3000()“”。！你好", "Dr.", "p.m.", "e.g.", "1.", "a)",
                            "∯", "&ᓴ&", "ȸ"])  # the last three are pysbd's internal placeholders


@settings(max_examples=150, deadline=None)
@given(st.lists(alphabet, max_size=60).map("".join), st.integers(0, 50))
def test_sentence_and_clause_spans_cover_any_text(text, start):
    for spans in (split_sentences(text, start), split_clauses(text, start, 3, FAKE.count)):
        if not text.strip():
            assert spans == []
            continue
        assert spans[0][0] == start and spans[-1][1] == start + len(text)
        assert all(a < b for a, b in spans) and all(x[1] == y[0] for x, y in zip(spans, spans[1:]))
