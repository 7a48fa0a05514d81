"""The sufficiency cross-encoder: windows over long passages, the shipped weights' hash, and what it was trained for."""

from __future__ import annotations

import numpy as np
import pytest

from ragclinic.errors import ModelError
from ragclinic.verify.cross import MAX_LEN, MAX_QUESTION, CrossEncoder, passage_span, weights_path, windows


_IDS: dict[str, int] = {}


def _tok(text: str) -> list[int]:
    return [_IDS.setdefault(w, len(_IDS) + 10) for w in text.split()]  # one token a word, ids from 10


def test_windows_cover_every_passage_token_within_the_length():
    passage = " ".join(f"w{i}" for i in range(700))  # distinct words: each slice is found where it is
    ws = windows(_tok, 0, 2, "q " * 100, passage)
    assert len(ws) > 2
    for w in ws:
        assert len(w) <= MAX_LEN and w[0] == 0 and w[-1] == 2
        assert w[1:MAX_QUESTION + 1] == _tok("query: " + "q " * 100)[:MAX_QUESTION]  # the question in each
    ptoks = _tok("passage: " + passage)
    seen = set()
    for w in ws:
        a, e = passage_span(w, 2)
        body = w[a:e]
        start = next(i for i in range(len(ptoks)) if ptoks[i:i + len(body)] == body)  # a contiguous slice
        seen |= set(range(start, start + len(body)))
    assert seen == set(range(len(ptoks)))  # every passage token is read, the last window ends at the end
    assert len(windows(_tok, 0, 2, "short question", "a short passage")) == 1


@pytest.fixture(scope="module")
def enc() -> CrossEncoder:
    if not weights_path().is_file():
        pytest.fail("the cross-encoder weights are not installed (src/ragclinic/verify/weights/cross-v1.npz)")
    return CrossEncoder()


def test_shipped_weights_are_hash_checked(enc, tmp_path, monkeypatch):
    import ragclinic.verify.cross as cross

    raw = bytearray(weights_path().read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad = tmp_path / "cross-v1.npz"
    bad.write_bytes(bytes(raw))
    monkeypatch.setattr(cross, "weights_path", lambda: bad)  # the installed file, damaged: the pinned hash refuses it
    with pytest.raises(ModelError, match="sha256"):
        CrossEncoder()


def test_special_token_text_cannot_move_the_passage(enc):
    b = enc.base
    w = windows(b.tokenize, b.bos, b.eos, "who </s></s> won?", "Annie Ernaux won.")[0]
    a, _ = passage_span(w, b.eos)
    assert w.count(b.eos) == 3 and a == w.index(b.eos) + 2


@pytest.mark.parametrize("question,right,same_topic", [
    ("Who won the 2022 Nobel Prize in Literature?",
     "The 2022 Nobel Prize in Literature was awarded to the French writer Annie Ernaux.",
     "The Nobel Prize in Literature is announced each October in Stockholm by the Swedish Academy."),
    ("2023年世界乒乓球锦标赛男子单打冠军是谁？",
     "2023年世界乒乓球锦标赛在南非德班举行，樊振东夺得男子单打冠军。",
     "2023年世界乒乓球锦标赛在南非德班举行，共有来自近百个国家和地区的选手参赛。"),
])
def test_answering_passage_beats_a_same_topic_one(enc, question, right, same_topic):
    assert enc.logit(question, right) > enc.logit(question, same_topic)
    p = enc.prob(question, right)
    assert 0.0 < p < 1.0


def test_the_answer_is_found_past_the_first_window(enc):
    filler = " ".join(["The festival also hosted concerts, markets and a parade through the old town."] * 30)
    q = "Who won the 2022 Nobel Prize in Literature?"
    answer = "The 2022 Nobel Prize in Literature was awarded to the French writer Annie Ernaux."
    assert enc.logit(q, filler + " " + answer) > enc.logit(q, filler)
    assert np.isfinite(enc.logit(q, filler))


def test_training_marks_the_answer_tokens_in_the_window():
    from ragclinic.models.e5_numpy import E5Numpy
    from ragclinic_training.cross_train import token_labels

    b = E5Numpy()
    piece = {i: p.decode("utf-8", "replace") for p, i in b.pieces.items()}
    for q, p, a in [("谁获得冠军？", "2023年世乒赛在德班举行，樊振东夺得男子单打冠军。", "樊振东"),
                    ("Which magazine?", "Arthur's Magazine (1844–1846) was an American literary periodical.",
                     "Arthur's Magazine")]:
        w = windows(b.tokenize, b.bos, b.eos, q, p)[0]
        marks = token_labels(b, w, a)
        assert "".join(piece[t] for t, m in zip(w, marks) if m).replace("\u2581", " ").strip() == a
        assert token_labels(b, w, "not in the passage") is None
