"""Fuzzing the parsers (issue 19, part 1): mutated real files of every format, random bytes, and inputs built
to exhaust a parser (a 10 MB line, HTML nested 100,000 deep, 10⁶ tiny paragraphs). Whatever comes in, a parser
yields documents and record errors or raises ParseError with a reason, in bounded time. The longer soak with
execution counts is bench/fuzz_bench.py; crashers it finds become fixtures in CRASHERS below."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragclinic.config import Settings
from ragclinic.ingest.parse.fuzz import check, mutate, seeds

SEEDS = seeds()
# Crashers the fuzzing found, kept as regression fixtures (suffix, bytes, what broke before the fix).
CRASHERS = [
    (".html", b'<html><head><title>T</title></\xb3e\x16d><body><article><h1>H]/h1><p>Text <b>bold</b>.W/p><!-- note -->'
              b'<table><tr><td>t<\x8et\xe2><td>b</td>\x8e/t\x01></table></article><Obody></html>',
     "ValueError from lxml: a control character in a text node could not be written back"),
    (".pdf", (Path(__file__).parent / "crashers" / "pdf-damaged-page-box.pdf").read_bytes(),
     "TypeError from pdfplumber's close() walking a damaged page tree, raised over the ParseError"),
    (".xlsx", (Path(__file__).parent / "crashers" / "xlsx-broken-sheet-xml.xlsx").read_bytes(),
     "xml.etree ParseError from openpyxl reading a sheet lazily, outside the corrupt-XLSX check"),
    (".jsonl", b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "RecursionError from json.loads on a record nested 100,000 deep"),
] + [(p.suffix, p.read_bytes(), f"zipfile/zlib error on a damaged archive ({p.stem})")
     for p in sorted((Path(__file__).parent / "crashers").glob("docx-*")) + sorted(
         (Path(__file__).parent / "crashers").glob("xlsx-zip*"))]
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@pytest.mark.parametrize("suffix,data,was", CRASHERS, ids=[c[2][:40] for c in CRASHERS])
def test_found_crashers_stay_fixed(suffix, data, was):
    assert check(suffix, data) is None


@pytest.mark.parametrize("suffix", sorted(SEEDS))
def test_the_seed_parses(suffix):
    assert check(suffix, SEEDS[suffix]) is None


@pytest.mark.parametrize("suffix", sorted(SEEDS))
@FAST
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_files_raise_only_parse_errors(suffix, seed):
    data = mutate(SEEDS[suffix], random.Random(seed))
    crash = check(suffix, data, time_limit=20)
    assert crash is None, crash.error


@pytest.mark.parametrize("suffix", sorted(SEEDS))
@FAST
@given(data=st.binary(max_size=2048))
def test_random_bytes_raise_only_parse_errors(suffix, data):
    crash = check(suffix, data, time_limit=20)
    assert crash is None, crash.error


@FAST
@given(text=st.text(max_size=400))
def test_any_unicode_text_in_the_text_formats(text):
    for suffix in (".txt", ".md", ".html", ".csv", ".jsonl"):
        crash = check(suffix, text.encode("utf-8", "surrogatepass"), time_limit=20)
        assert crash is None, (suffix, crash.error)


@pytest.mark.parametrize("suffix,data", [
    (".txt", b"x" * 10_000_000),  # one 10 MB line
    (".md", b"a\n\n" * 1_000_000),  # 10^6 tiny paragraphs
    (".html", b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000),  # nesting depth
    (".md", b">" * 100_000 + b" quote"),  # block-quote depth
    (".jsonl", b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"),  # JSON depth
    (".csv", b"a," * 500_000 + b"\n"),  # a 500,000-column row
], ids=["10MB-line", "1e6-paragraphs", "html-depth", "quote-depth", "json-depth", "wide-csv"])
def test_inputs_built_to_exhaust_a_parser(suffix, data):
    big = Settings(max_file_size=64 * 1024 * 1024)
    t0 = time.perf_counter()
    crash = check(suffix, data, big, time_limit=120)
    assert crash is None, crash.error
    assert time.perf_counter() - t0 < 120
