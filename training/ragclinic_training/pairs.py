"""Labelled (task, passage, text) pairs from licensed QA data, with the hard negatives the gate meets.

Sufficiency (does the passage answer the question):
- positive: the chunk of the article that holds the answer; the answering paragraph of a HotpotQA context alone;
  the answer sentence alone when it holds at least half of the question's terms;
- negatives, all same-topic: the article's other chunks (CMRC2018) or the other paragraph of a two-paragraph
  HotpotQA context (HaluEval), the answer chunk with its answer sentence removed, the answer chunk with the
  question's year / number / ordinal changed (so it is about another event), and the most word-similar chunk of
  another article.
Support (does the passage state the sentence) and contradiction (does it contradict it): the answer sentence
(supported), HaluEval's right vs hallucinated answers, the answer sentence with its answer swapped for another
value of the same kind or its number changed (contradicted), and an unrelated sentence (neither).

Every pair carries its source and split; the split is a hash of the article (CMRC2018) or question (HaluEval)
id, so a question, its article and all their negatives land in the same split.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ragclinic.text.lang import is_cjk
from ragclinic.text.sentences import split_sentences
from ragclinic.text.support import content_terms
from ragclinic.verify.base import judge_text
from ragclinic.verify.constraints import constraints

SPLITS = (("train", 0.6), ("val", 0.2), ("test", 0.2))


@dataclass(frozen=True)
class Pair:
    task: str  # relevance | support | contradiction
    passage: str
    text: str
    label: int
    kind: str  # positive | other_chunk | other_paragraph | removed | swapped | other_article | ...
    source: str  # cmrc2018 | halueval
    group: str  # the article / question id the split is drawn from
    split: str
    answer: str = ""  # sufficiency positives: the answer as the passage writes it (the cross-encoder's token labels)


def split_of(key: str) -> str:
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    acc = 0.0
    for name, share in SPLITS:
        acc += share
        if h <= acc:
            return name
    return SPLITS[-1][0]


def _sents(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text) if text[a:b].strip()]


def _join(parts: list[str]) -> str:
    out = ""
    for s in parts:
        out += s if (not out or is_cjk(out[-1]) or out.endswith((" ", "\n"))) else " " + s
    return out.strip()


def chunks(text: str, max_chars: int) -> list[str]:
    out, cur = [], []
    for s in _sents(text):
        if cur and len(_join(cur + [s])) > max_chars:
            out.append(_join(cur))
            cur = []
        cur.append(s)
    if cur:
        out.append(_join(cur))
    return out


def _remove_answer(chunk: str, answer: str) -> str | None:
    kept = [s for s in _sents(chunk) if answer not in s]
    out = _join(kept)
    return out if kept and answer not in out and len(out) > 20 else None


def _answer_sentence(passage: str, answer: str, question: str) -> str | None:
    """The sentence holding the answer, alone, when it also holds at least half of the question's content terms
    (so it answers by itself): teaches that a short passage can answer — without it every English positive is a
    two-paragraph context and every single paragraph a negative, and a one-line answer scores as a negative."""
    sent = next((s.strip() for s in _sents(passage) if answer.lower() in s.lower()), None)
    if sent is None or sent == passage.strip():
        return None
    q = content_terms(question)
    return sent if q and len(q & content_terms(sent)) >= 0.5 * len(q) else None


def _swap_constraint(question: str, chunk: str, rng: random.Random) -> str | None:
    """The chunk with one of the question's year / number / ordinal values changed everywhere it occurs."""
    for c in constraints(question):
        if c.kind in ("year", "number") and re.search(rf"(?<!\d){re.escape(c.value)}(?!\d)", chunk):
            new = str(int(float(c.value)) + rng.choice([-3, -2, -1, 1, 2, 3]))
            return re.sub(rf"(?<!\d){re.escape(c.value)}(?!\d)", new, chunk)
        if c.kind == "ordinal" and c.text in chunk:
            digits = re.sub(r"\D", "", c.value)
            if digits:
                n = int(digits) + rng.choice([-1, 1, 2])
                return chunk.replace(c.text, c.text.replace(digits, str(max(n, 1))) if digits in c.text else
                                     f"第{max(n, 1)}{c.value[len(digits):]}")
    return None


def _change_number(sentence: str, rng: random.Random) -> str | None:
    nums = list(re.finditer(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.])", sentence))
    if not nums:
        return None
    m = rng.choice(nums)
    v = m.group()
    new = str(int(v) + rng.choice([-3, -1, 1, 2, 10])) if v.isdigit() else f"{float(v) * 1.5:g}"
    return sentence[:m.start()] + new + sentence[m.end():] if new != v else None


_CLAUSE = re.compile(r"(?<=[,，;；])\s*|\s+(?:and|but|while|which)\s+")
_CAPS = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def _drop_clause(sentence: str, rng: random.Random) -> str | None:
    """The sentence with one of its clauses left out: what it says, said in part (a supported claim)."""
    parts = [p for p in _CLAUSE.split(sentence) if p and p.strip()]
    if len(parts) < 2:
        return None
    keep = parts[:]
    del keep[rng.randrange(1, len(parts))]
    out = (" " if not is_cjk(sentence[0]) else "").join(p.strip().rstrip(",，;；") for p in keep).strip()
    return out if len(content_terms(out)) >= 3 else None


_FILLERS = {"en": ("reportedly", "notably", "indeed", "officially", "in fact", "famously", "eventually", "widely"),
            "zh": ("据悉", "实际上", "正式", "其实", "最终", "据报道")}


def _reworded(sentence: str, rng: random.Random) -> str | None:
    """The sentence with a word of no factual weight added (a supported claim that word overlap does not fully
    cover, as the model's own wording does): teaches the heads that a missing word is not a changed fact."""
    words = sentence.split(" ")
    if is_cjk(sentence[0]):
        cut = max(2, min(len(sentence) - 2, len(sentence) // 3 + rng.randrange(3)))
        return sentence[:cut] + rng.choice(_FILLERS["zh"]) + sentence[cut:]
    if len(words) < 4:
        return None
    at = rng.randrange(1, len(words) - 1)
    return " ".join(words[:at] + [rng.choice(_FILLERS["en"])] + words[at:])


def _swap_name(sentence: str, names: list[str], rng: random.Random) -> str | None:
    """The sentence with one capitalised name replaced by a name from elsewhere (one atomic fact changed)."""
    mine = [m for m in _CAPS.finditer(sentence) if m.start() > 0]
    others = [n for n in names if n not in sentence]
    if not mine or not others:
        return None
    m = rng.choice(mine)
    return sentence[:m.start()] + rng.choice(others) + sentence[m.end():]


def _across(passage: str, sents: list[str], rng: random.Random, mk) -> Iterator[Pair]:
    """A claim drawn from two adjacent sentences (the subject in one, the fact in the next), with and without one
    of its numbers changed."""
    pairs = [(a, b) for a, b in zip(sents, sents[1:]) if len(content_terms(a + b)) >= 5]
    if not pairs:
        return
    a, b = rng.choice(pairs)
    joined = a + b if is_cjk(a[-1]) else f"{a} {b}"
    claim = _drop_clause(joined, rng) or joined
    yield mk("support", passage, claim, 1, "across")
    if (c := _change_number(claim, rng)) is not None:
        yield mk("support", passage, c, 0, "number_changed")


def _nearest(query: str, pool: list[tuple[str, str]], exclude: str) -> str | None:
    """The most word-similar chunk of another article (pool: (group, chunk))."""
    q = content_terms(query)
    best, best_s = None, 0.0
    for g, c in pool:
        if g != exclude:
            s = len(q & content_terms(c)) / (len(q) or 1)
            if s > best_s:
                best, best_s = c, s
    return best


def cmrc_pairs(path: Path, seed: int = 13, max_chars: int = 220) -> Iterator[Pair]:
    rng = random.Random(seed)
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    pool = [(a["id"], c) for a in data for p in a["paragraphs"] for c in chunks(p["context"], max_chars)]
    by_group: dict[str, list[str]] = {}
    for g, c in pool:
        by_group.setdefault(g, []).append(c)
    answers = {a["id"]: [x["answers"][0]["text"] for p in a["paragraphs"] for x in p["qas"]] for a in data}
    for art in data:
        g, split = art["id"], split_of("cmrc:" + art["id"])
        mine = by_group[g]
        for para in art["paragraphs"]:
            for qa in para["qas"]:
                q, ans = qa["question"], qa["answers"][0]["text"].strip()
                if not ans:
                    continue
                holding = [c for c in mine if ans in c]
                if not holding:
                    continue
                pos = holding[0]
                mk = lambda task, passage, text, label, kind: Pair(task, passage, text, label, kind,  # noqa: E731
                                                                   "cmrc2018", g, split)
                yield replace(mk("relevance", pos, q, 1, "positive"), answer=ans)
                if (short := _answer_sentence(pos, ans, q)) is not None:
                    yield replace(mk("relevance", short, q, 1, "answer_sentence"), answer=ans)
                others = [c for c in mine if ans not in c]
                for c in rng.sample(others, min(2, len(others))):
                    yield mk("relevance", c, q, 0, "other_chunk")
                if (r := _remove_answer(pos, ans)) is not None:
                    yield mk("relevance", r, q, 0, "removed")
                if (s := _swap_constraint(q, pos, rng)) is not None:
                    yield mk("relevance", s, q, 0, "swapped")
                if (n := _nearest(q, pool, g)) is not None and ans not in n:
                    yield mk("relevance", n, q, 0, "other_article")
                sent = next((s for s in _sents(pos) if ans in s), None)
                if sent is None:
                    continue
                yield mk("support", pos, sent.strip(), 1, "positive")
                yield mk("contradiction", pos, sent.strip(), 0, "positive")
                if (rw := _reworded(sent.strip(), rng)) is not None:
                    yield mk("support", pos, rw, 1, "reworded")
                    yield mk("contradiction", pos, rw, 0, "reworded")
                yield from _across(pos, [x.strip() for x in _sents(pos)], rng, mk)
                if (part := _drop_clause(sent.strip(), rng)) is not None:
                    yield mk("support", pos, part, 1, "partial")
                    yield mk("contradiction", pos, part, 0, "partial")
                alts = [a for a in answers[rng.choice(list(answers))] if a and a not in sent and
                        bool(re.search(r"\d", a)) == bool(re.search(r"\d", ans))]
                if alts:
                    fake = sent.replace(ans, rng.choice(alts)).strip()
                    yield mk("support", pos, fake, 0, "swapped")
                if (c := _change_number(sent, rng)) is not None:
                    yield mk("support", pos, c.strip(), 0, "number_changed")
                    yield mk("contradiction", pos, c.strip(), 1, "number_changed")
                if others:
                    unrelated = rng.choice(_sents(rng.choice(others)) or [""]).strip()
                    if unrelated and ans not in unrelated:
                        yield mk("support", pos, unrelated, 0, "unrelated")
                        yield mk("contradiction", pos, unrelated, 0, "unrelated")


def halueval_pairs(path: Path, seed: int = 13) -> Iterator[Pair]:
    rng = random.Random(seed)
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pool = [(r["question"], r["knowledge"]) for r in recs]
    names = sorted({m.group() for r in recs for m in _CAPS.finditer(r["knowledge"]) if len(m.group()) > 3})
    for r in recs:
        q, k, ans = r["question"], r["knowledge"], r["right_answer"].strip()
        g, split = r["question"], split_of("halueval:" + r["question"])
        mk = lambda task, passage, text, label, kind: Pair(task, passage, text, label, kind,  # noqa: E731
                                                           "halueval", g, split)
        yield mk("support", k, judge_text(ans, q), 1, "right_answer")
        yield mk("support", k, judge_text(r["hallucinated_answer"], q), 0, "hallucinated_answer")
        sents = [x.strip() for x in _sents(re.sub(r"(?<=[.!?])(?=[A-Z])", " ", k))]
        yield from _across(k, sents, rng, mk)
        for sent in sents[:3]:
            if len(content_terms(sent)) < 3:
                continue
            yield mk("support", k, sent, 1, "sentence")
            if (rw := _reworded(sent, rng)) is not None:
                yield mk("support", k, rw, 1, "reworded")
                yield mk("contradiction", k, rw, 0, "reworded")
            if (part := _drop_clause(sent, rng)) is not None:
                yield mk("support", k, part, 1, "partial")
                yield mk("contradiction", k, part, 0, "partial")
            if (sw := _swap_name(sent, names, rng)) is not None:
                yield mk("support", k, sw, 0, "name_swapped")
                yield mk("contradiction", k, sw, 1, "name_swapped")
            if (c := _change_number(sent, rng)) is not None:
                yield mk("support", k, c, 0, "number_changed")
        if ans.lower() not in k.lower():
            continue
        at = k.lower().find(ans.lower())
        yield replace(mk("relevance", k, q, 1, "positive"), answer=k[at:at + len(ans)])
        # HotpotQA contexts join two paragraphs without a space: "...19th century.First for Women is..."
        paras = [p for p in re.split(r"(?<=[.!?])(?=[A-Z])", k) if p.strip()]
        for p in paras:
            if ans.lower() not in p.lower() and len(p) > 30:
                yield mk("relevance", p, q, 0, "other_paragraph")
            elif len(paras) > 1 and len(p) > 30:  # the answering paragraph alone: a single paragraph can answer
                at = p.lower().find(ans.lower())
                yield replace(mk("relevance", p, q, 1, "answer_paragraph"), answer=p[at:at + len(ans)])
        if (short := _answer_sentence(re.sub(r"(?<=[.!?])(?=[A-Z])", " ", k), ans, q)) is not None:
            at = short.lower().find(ans.lower())
            yield replace(mk("relevance", short, q, 1, "answer_sentence"), answer=short[at:at + len(ans)])
        if (rm := _remove_answer(k, ans)) is not None:
            yield mk("relevance", rm, q, 0, "removed")
        if (s := _swap_constraint(q, k, rng)) is not None:
            yield mk("relevance", s, q, 0, "swapped")
        if (n := _nearest(q, pool, q)) is not None and ans.lower() not in n.lower():
            yield mk("relevance", n, q, 0, "other_article")
        sent = next((s for s in _sents(k) if ans.lower() in s.lower()), None)
        if sent and (c := _change_number(sent, rng)) is not None:
            yield mk("contradiction", k, c.strip(), 1, "number_changed")
            yield mk("contradiction", k, sent.strip(), 0, "positive")


def all_pairs(cmrc: Path, halueval: Path) -> list[Pair]:
    return list(cmrc_pairs(cmrc)) + list(halueval_pairs(halueval))
