"""Bounded work on text nobody planned for: one unbroken run of characters (a 900 KB one-token file held a core
for minutes, issue 32). Work is counted (characters handed to the token counter), not timed, so the tests
cannot be flaky; one slow test times a 2 MB token through the real parser and e5 counter with a generous bound."""

from __future__ import annotations

import time

import pytest

from ragclinic.config import Settings
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker
from ragclinic.ingest.chunk import tokens as tokens_mod
from ragclinic.ingest.chunk.tokens import FakeTokenCounter
from ragclinic.text.sentences import LONG_RUN, split_clauses, split_sentences
from ragclinic.types import ParsedDocument

from .docs import small_settings

HANZI = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经"


class CountingCounter(FakeTokenCounter):
    """The fake counter, recording how many characters it was asked to count."""

    name = "counting"

    def __init__(self) -> None:
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return super().count(text)


def _run(n: int) -> str:
    return "".join(HANZI[(i * 7) % len(HANZI)] for i in range(n))  # one CJK run: the fake counts 1 a character


def _doc(text: str) -> ParsedDocument:
    return ParsedDocument(doc_id="d", path="/data/run.txt", record_key="", title="t", text=text)


def _check_cover(doc: ParsedDocument, chunks, max_tokens: int) -> None:
    assert chunks and chunks[0].start == 0 and chunks[-1].end == len(doc.text.rstrip())
    for a, b in zip(chunks, chunks[1:]):
        assert b.start == a.end  # no overlap is repeated from a cut run, nothing is lost
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text and FakeTokenCounter().count(c.text) <= c.tokens <= max_tokens


@pytest.mark.parametrize("n", [20_000, 80_000])
def test_chunking_one_huge_run_counts_each_character_a_bounded_number_of_times(n):
    counter = CountingCounter()
    doc = _doc(_run(n) + "\n")
    chunks, report = Chunker(small_settings(), counter).chunk(doc)
    _check_cover(doc, chunks, 40)
    assert counter.chars <= 4 * n  # was a binary search over the whole rest of the run per window: ~n²
    assert report.overlong_sentences == 1


def test_a_huge_latin_run_is_cut_even_where_the_counter_calls_it_one_token():
    """The fake counter calls any Latin word one token; a 50,000-character "word" must not become one chunk."""
    doc = _doc("Intro sentence here. " + "x" * 50_000 + " and a tail sentence.")
    chunks, _ = Chunker(small_settings(), FakeTokenCounter()).chunk(doc)
    assert max(len(c.text) for c in chunks) <= LONG_RUN
    assert "".join(doc.text[c.start:c.end] for c in chunks).replace(" ", "") == doc.text.replace(" ", "")


def test_split_clauses_on_a_long_word_counts_bounded_work():
    counter = CountingCounter()
    text = _run(30_000)
    spans = split_clauses(text, 0, 40, counter.count)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(counter.count(text[a:b]) <= 40 for a, b in spans[:5])
    counter.chars = 0
    split_clauses(text, 0, 40, counter.count)
    assert counter.chars <= 40 * len(text)  # the windows' searches stay near their window (was ~n² / 40)


def test_e5_counts_a_run_over_long_run_without_tokenizing_it(monkeypatch):
    seen: list[int] = []
    real = tokens_mod._word_tokens

    def spy(word: str) -> int:
        seen.append(len(word))
        return real(word)

    monkeypatch.setattr(tokens_mod, "_word_tokens", spy)
    e5 = TOKEN_COUNTERS.create("e5")
    assert e5.count("x" * (LONG_RUN + 1)) == LONG_RUN + 1  # an upper bound: a piece is at least a character
    assert e5.count("short words " + "y" * (3 * LONG_RUN)) == e5.count("short words") + 3 * LONG_RUN
    assert max(seen) <= LONG_RUN


@pytest.mark.slow
def test_a_two_megabyte_token_parses_and_chunks_with_e5_in_seconds(tmp_path):
    from ragclinic.ingest.discover import read_source
    from ragclinic.ingest.parse import parse_source

    settings = Settings()
    path = tmp_path / "token.txt"
    path.write_text("q" * 2_000_000)
    chunker = Chunker(settings, TOKEN_COUNTERS.create("e5"))
    t0 = time.perf_counter()
    (parsed,) = list(parse_source(read_source(path, settings.max_file_size), settings))
    chunks, _ = chunker.chunk(parsed.document)
    elapsed = time.perf_counter() - t0
    assert elapsed < 60, elapsed  # ~1 s here; it was hours (a binary search over the rest of the run per window)
    assert sum(len(c.text) for c in chunks) == 2_000_000
    assert all(c.tokens <= settings.chunk_max_tokens for c in chunks)


def test_pysbd_never_sees_more_than_pysbd_max_characters(monkeypatch):
    """Its alphabetical-list pass rewrites the whole text once per item: quadratic on one long paragraph."""
    from ragclinic.text import sentences

    seen: list[str] = []
    real = sentences._pysbd_sentences
    monkeypatch.setattr(sentences, "_pysbd_sentences", lambda t: seen.append(t) or real(t))
    text = "Items a) one b) two c) three. " * 400  # one paragraph of 12,000 characters, 1,200 list items
    spans = split_sentences(text)
    assert "".join(text[a:b] for a, b in spans) == text and len(spans) >= 400
    assert max(map(len, seen)) <= sentences.PYSBD_MAX
    assert max(len(sentences._LIST_MARK.findall(t)) for t in seen) <= sentences.LIST_MARKS_MAX


def test_a_long_run_is_a_sentence_of_its_own_and_never_goes_to_pysbd(monkeypatch):
    from ragclinic.text import sentences

    seen: list[int] = []
    real = sentences._pysbd_sentences
    monkeypatch.setattr(sentences, "_pysbd_sentences", lambda t: seen.append(len(t)) or real(t))
    run = "a.b!c?" * 2000
    text = f"First one. Second one. {run} Last one."
    got = [text[a:b].strip() for a, b in split_sentences(text)]
    assert got == ["First one.", "Second one.", run, "Last one."]
    assert max(seen) < len(run)


def test_a_long_chinese_paragraph_is_sentences_not_a_run():
    """CJK prose has no spaces: a paragraph over LONG_RUN characters is still split at 。, never cut by characters
    mid-sentence (the first long-run rule cut a 3,000-character paragraph into pieces ending anywhere)."""
    from ragclinic.text import sentences

    para = "检索增强生成先检索相关段落，再让语言模型作答。" * 130  # 3,120 characters, 130 sentences
    assert len(para) > sentences.LONG_RUN and sentences.long_runs(para) == []
    assert len(split_sentences(para, language="zh")) == 130
    mixed = "说明：" + "x" * 3000 + "。后面还有一句。"
    (a, b), = sentences.long_runs(mixed)  # a Latin run inside Chinese text is still one (with the words before
    assert "x" * 3000 in mixed[a:b] and "。" not in mixed[a:b]  # it up to the last sentence end)
    ideographs = "检索增强生成" * 1000  # no sentence end for 6,000 characters: a run all the same
    assert sentences.long_runs(ideographs) == [(0, 6000)]
