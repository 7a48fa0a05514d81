"""Constraint-swap evaluation sets in RGB's format (issue 33): a question whose year, number, ordinal or named
entity its passages state, and its twin with that value swapped for one no passage supports ("2021" → "2019",
"seventh" → "ninth", "Allie Goertz" → another musician), over the same passages. The twin is answerable (over-
refusal is measured on it); the swapped question is to be refused, or answered with "the passages give another
value" — an answer stating the original question's answer is a constraint contradiction (`eval rag`'s
``constraint_contradictions``; the swapped record's ``fakeanswer`` holds that value, its ``swap`` what changed).

Sources, licensed and read by path: HaluEval QA (English, MIT; each question's HotpotQA context as its positive
passages, same-topic negatives as bench/make_english_rgb.py builds them) and CMRC2018 (Chinese, CC BY-SA 4.0; the
220-character chunks of an article holding the answer or the swapped value as positives, its other chunks and
the most character-similar chunks of other articles as negatives). Only questions of the verifier's ``test``
split (ragclinic_training.pairs.split_of) are used: none was seen in training or threshold choice.

The swap is the question's first year; else an ordinal other than "first"; else a number; else a named entity
(English: a capitalised name of the question, replaced by one of the same kind — the noun of its passage's "X is
a … NOUN" — from another item; Chinese: a 《title》 or the article's title, replaced by one of the same kind from
another article). The new value appears in none of the item's passages. Yes/no questions and answers that hold
the swapped value are left out. Everything is seeded: the same seed writes the same files.

Each item and its twin share a ``group``; ``split`` is "dev" or "heldout" by a seeded hash of the group (the
original question for English — as `--split` hashes bench/make_english_rgb.py's items, so one question is in
the same half of both sets —, the CMRC article id for Chinese, so that no article's passages are in both halves).
Tune on dev; report held-out once, at the end. Chinese answers over 40 characters are left out (a contradiction
is found by the answer appearing in the reply, and a long span is rarely repeated word for word).

    PYTHONPATH=training python bench/make_constraint_swap.py --halueval ../shared/data/halueval/qa_one-turn_data.json \
        --cmrc ../shared/data/cmrc2018/cmrc2018_trial.json --out bench/out/constraint-swap
    # -> en.jsonl, en-dev.jsonl, en-heldout.jsonl, zh.jsonl, zh-dev.jsonl, zh-heldout.jsonl
    ragclinic eval rag --dataset rgb:bench/out/constraint-swap/en-dev.jsonl --arms naive,plain,doctor \
        --noise 0,0.4 --llm local-small --out bench/out/eval/swap-en-dev
    PYTHONPATH=training python bench/make_constraint_swap.py --split bench/out/halueval-test-rgb.jsonl   # any RGB file, same halves
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragclinic.verify.constraints import constraints, ordinals, years

_EN_ORD = ("zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
           "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
_CN = "零一二三四五六七八九十"
_NUM = r"(?<![\d.]){}(?![\d]|\.\d)"
_CAP = r"[A-Z][\w'’&-]*"
_ENTITY = re.compile(rf"{_CAP}(?:\s+(?:(?:of|the|de|la|and|for|von|van|du|le)\s+)?{_CAP})*")
_LEADS = {"which", "what", "who", "whom", "whose", "where", "when", "how", "in", "the", "were", "was", "is", "are",
          "did", "do", "does", "a", "an", "on", "at", "for", "from", "to", "by", "and", "of", "this", "that"}
_STOP = {"of", "in", "from", "that", "who", "which", "by", "for", "and", "published", "founded", "based", "located",
         "directed", "written", "released", "produced", "born", "known", "created", "starring", "with", "featured",
         "on", "at", "to", "as", "whose", "where", "first"}
_ZH_TYPES = (("organism", r"学名"), ("person", r"运动员|演员|艺人|歌手|政治家|武将|官员|画家|漫画家|先知|将军|议员|皇后|外交官|"
                                               r"主席|作家|导演|学者|科学家|生于|出生|当主|家臣"),
             ("work", r"电视剧|电影|小说|节目|游戏|专辑|歌曲|漫画|剧集"),
             ("place", r"县|市|省|行政区|城市|小城|机场|公园|总站|塔|别墅|博物馆|书院|物业|岛|航路|航线"),
             ("organisation", r"公司|组织|协会|委员会|大学|学院|计划"))


@dataclass(frozen=True)
class Swap:
    kind: str  # year | ordinal | number | entity
    old: str  # as the question writes it
    new: str
    question: str  # the swapped question


def split_of(group: str, seed: int) -> str:
    """"dev" or "heldout": a seeded hash of the group (an item and its twin share one)."""
    h = int(hashlib.sha256(f"{seed}|{group}".encode("utf-8")).hexdigest()[:8], 16)
    return "dev" if h % 2 == 0 else "heldout"


def _has_number(value: str, text: str) -> bool:
    return re.search(_NUM.format(re.escape(value)), text) is not None


def year_swap(question: str, positives: list[str], everything: str, rng: random.Random) -> Swap | None:
    stated = set(years(" ".join(positives)))
    for y in dict.fromkeys(years(question)):
        if y not in stated:
            continue
        offsets = [-3, -2, -1, 1, 2, 3]
        rng.shuffle(offsets)
        for d in offsets:
            new = str(int(y) + d)
            if not _has_number(new, everything) and new not in question:
                return Swap("year", y, new, re.sub(_NUM.format(y), new, question))
    return None


def ordinal_swap(question: str, positives: list[str], everything: str, rng: random.Random) -> Swap | None:
    stated = {v for v, _ in ordinals(" ".join(positives))}
    present = {v for v, _ in ordinals(everything)}
    for value, written in ordinals(question):
        n = int(re.sub(r"\D", "", value) or 0)
        if n <= 1 or value not in stated:  # "first" is mostly "which came first", not a constraint
            continue
        offsets = [1, 2, -1, -2, 3]
        rng.shuffle(offsets)
        for d in offsets:
            m = n + d
            new_value = f"{m}{re.sub(r'[0-9]', '', value)}"
            if 2 <= m <= 20 and new_value not in present:
                new = _ordinal_text(written, n, m)
                return Swap("ordinal", written, new, question.replace(written, new, 1))
    return None


def _ordinal_text(written: str, n: int, m: int) -> str:
    """``written`` ("seventh", "7th", "第七届", "第7届") with the number n made m, in the same style."""
    if written.startswith("第"):
        digits = re.search(r"\d+", written)
        return (written.replace(digits.group(), str(m), 1) if digits else
                "第" + _cn_numeral(m) + written[-1])
    if written[0].isdigit():
        suffix = "th" if 10 <= m % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(m % 10, "th")
        return f"{m}{suffix}"
    word = _EN_ORD[m]
    return word.capitalize() if written[0].isupper() else word


def _cn_numeral(m: int) -> str:
    return _CN[m] if m <= 10 else ("十" if m < 20 else _CN[m // 10] + "十") + (_CN[m % 10] if m % 10 else "")


def number_swap(question: str, positives: list[str], everything: str, rng: random.Random) -> Swap | None:
    stated = " ".join(positives)
    for c in constraints(question):
        if c.kind != "number" or "." in c.value or not _has_number(c.value, stated):
            continue
        offsets = [1, 2, 3, -1, -2, 5]
        rng.shuffle(offsets)
        for d in offsets:
            new = str(int(c.value) + d)
            if int(new) > 0 and not _has_number(new, everything):
                return Swap("number", c.value, new, re.sub(_NUM.format(re.escape(c.value)), new, question, count=1))
    return None


def constraint_swap(question, positives, everything, rng) -> Swap | None:
    """A year, else an ordinal, else a number swap (entities are swapped by the caller, who knows the pool)."""
    for make in (year_swap, ordinal_swap, number_swap):
        if (s := make(question, positives, everything, rng)) is not None:
            return s
    return None


# ---------------------------------------------------------------- English: HaluEval QA


def en_entities(question: str) -> list[str]:
    """The question's capitalised names ("Allie Goertz", "The Simpsons") and quoted titles, question words off."""
    out = [c.text.strip("\"“”") for c in constraints(question) if c.kind == "quoted"]
    for m in _ENTITY.finditer(question):
        words = m.group().split()
        while words and words[0].lower() in _LEADS:
            words = words[1:]
        name = " ".join(words)
        if len(name) >= 4 and not name.isdigit():
            out.append(name)
    return list(dict.fromkeys(out))


def en_type(entity: str, passages: list[str]) -> str:
    """The noun of "ENTITY ... is/was a(n) [adjectives] NOUN" opening a sentence of a passage — HotpotQA paragraphs
    open with their subject: "Arthur's Magazine (1844–1846) was an American literary periodical" → "periodical" —,
    or "" when the entity opens no such sentence (then it is not swapped)."""
    pat = re.compile(rf"(?:^|(?<=[.!?])\s*){re.escape(entity)}[^.]{{0,80}}?\b(?:is|was|are|were)\s+(?:an?|the)\s+"
                     r"([^.,;:()]{1,80})")
    for p in passages:
        if m := pat.search(p):
            words = []
            for w in m.group(1).split():
                if w.lower() in _STOP:
                    break
                words.append(w)
            if words:
                return re.sub(r"\W", "", words[-1].lower()) or ""
    return ""


def en_groups(halueval: Path) -> dict[str, dict]:
    """The test-split questions with their positive and negative passages (bench/make_english_rgb.py's way)."""
    from ragclinic_training.pairs import halueval_pairs

    groups: dict[str, dict] = defaultdict(lambda: {"positive": [], "negative": []})
    for p in halueval_pairs(halueval):
        if p.task == "relevance" and p.split == "test" and p.kind != "swapped":
            groups[p.group]["positive" if p.label else "negative"].append(p.passage)
    return {q: g for q, g in groups.items() if g["positive"] and g["negative"]}


def english(halueval: Path, n: int, seed: int) -> list[dict]:
    recs = [json.loads(x) for x in halueval.read_text(encoding="utf-8").splitlines() if x.strip()]
    line_of = {r["question"]: i for i, r in enumerate(recs)}
    answer_of = {r["question"]: r["right_answer"].strip() for r in recs}
    pool = sorted({(e, en_type(e, [r["knowledge"]])) for r in recs for e in en_entities(r["question"])
                   if e in r["knowledge"]})
    groups = en_groups(halueval)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    out = []
    for q in order:
        ans = answer_of[q]
        if ans.lower().strip(".") in ("yes", "no"):
            continue
        g, rng = groups[q], random.Random(f"{seed}|{q}")
        everything = " ".join(g["positive"] + g["negative"])
        swap = constraint_swap(q, g["positive"], everything, rng) or _en_entity_swap(q, ans, g, everything, pool, rng)
        if swap is None or swap.new.lower() in ans.lower() or swap.old.lower() in ans.lower():
            continue
        out.append(pair(f"en-{line_of[q]}", q.strip(), [ans], g, swap, q, seed))
    return choose(out, n)


def _en_entity_swap(q: str, ans: str, g: dict, everything: str, pool, rng: random.Random) -> Swap | None:
    low = everything.lower()
    for e in en_entities(q):
        if e.lower() not in " ".join(g["positive"]).lower() or e.lower() in ans.lower():
            continue
        kind = en_type(e, g["positive"])
        same = [x for x, t in pool if kind and t == kind and x != e and x.lower() not in low
                and x.lower() not in q.lower()]
        if same:
            new = rng.choice(same)
            return Swap("entity", e, new, q.replace(e, new))
    return None


# ---------------------------------------------------------------- Chinese: CMRC2018


def zh_type(context: str) -> str:
    """A coarse kind of an article's subject from its first sentence: person, place, work, organism, … or ""."""
    head = context[:80]
    return next((kind for kind, cue in _ZH_TYPES if re.search(cue, head)), "")


def _bare_title(title: str) -> str:
    return re.sub(r"\s*[(（][^)）]*[)）]\s*$", "", title).strip()


@lru_cache(maxsize=None)
def _bigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 2] for i in range(len(text) - 1))


def zh_passages(art: dict, ans: str, value: str, chunked: dict[str, list[str]]) -> dict | None:
    """Positives: the article's chunks holding the answer or the question's value; negatives: its other chunks,
    then the most character-similar chunks of other articles, up to five, none holding the answer."""
    mine = chunked[art["id"]]
    pos = [c for c in mine if ans in c or (value and value in c)][:3]
    if not any(ans in c for c in pos):
        return None
    neg = [c for c in mine if c not in pos and ans not in c]
    grams = _bigrams(" ".join(pos))
    others = sorted(((len(grams & _bigrams(c)) / (1 + len(_bigrams(c))), aid, c) for aid, cs in chunked.items()
                     if aid != art["id"] for c in cs if ans not in c), reverse=True)
    neg += [c for _, _, c in others[:max(0, 5 - len(neg))]]
    return {"positive": pos, "negative": neg[:5]}


def chinese(cmrc: Path, n: int, seed: int) -> list[dict]:
    from ragclinic_training.pairs import chunks, split_of as verifier_split

    data = json.loads(cmrc.read_text(encoding="utf-8"))["data"]
    chunked = {a["id"]: [c for p in a["paragraphs"] for c in chunks(p["context"], 220)] for a in data}
    titles = sorted({(_bare_title(a["title"]), zh_type(a["paragraphs"][0]["context"])) for a in data})
    quoted = sorted({m for a in data for p in a["paragraphs"] for m in re.findall(r"《([^》]{1,30})》", p["context"])})
    todo = [(a, qa) for a in data if verifier_split("cmrc:" + a["id"]) == "test"
            for p in a["paragraphs"] for qa in p["qas"]]
    random.Random(seed).shuffle(todo)
    out = []
    for art, qa in todo:
        q, alts = qa["question"], list(dict.fromkeys(x["text"].strip() for x in qa["answers"] if x["text"].strip()))
        if not alts or len(alts[0]) > 40:  # a long span is rarely repeated word for word: a contradiction unseen
            continue
        rng = random.Random(f"{seed}|{qa['id']}")
        swap = _zh_swap(q, art, alts[0], chunked, titles, quoted, rng)
        if swap is None or any(swap.new in a or swap.old in a for a in alts):
            continue
        g = zh_passages(art, alts[0], swap.old, chunked)
        if g is None or swap.new in " ".join(g["positive"] + g["negative"]):
            continue
        out.append(pair(f"zh-{qa['id']}", q, alts, g, swap, art["id"], seed))
    return choose(out, n)


def _zh_swap(q: str, art: dict, ans: str, chunked, titles, quoted, rng: random.Random) -> Swap | None:
    everything = " ".join(chunked[art["id"]])
    g = zh_passages(art, ans, "", chunked)
    if g is None:
        return None
    if s := constraint_swap(q, [everything], everything + " ".join(g["negative"]), rng):
        return s  # the value is in the article; zh_passages then takes the chunk that states it as a positive
    for t in re.findall(r"《([^》]{1,30})》", q):
        same = [x for x in quoted if x != t and x not in everything and x not in q]
        if t in everything and same:
            new = rng.choice(same)
            return Swap("entity", f"《{t}》", f"《{new}》", q.replace(f"《{t}》", f"《{new}》"))
    title, kind = _bare_title(art["title"]), zh_type(art["paragraphs"][0]["context"])
    if len(title) >= 2 and title in q and title in everything and kind:
        same = [x for x, k in titles if k == kind and x != title and len(x) >= 2 and x not in everything
                and x not in q]
        if same:
            new = rng.choice(same)
            return Swap("entity", title, new, q.replace(title, new))
    return None


# ---------------------------------------------------------------- records, halves, files


def pair(item_id: str, question: str, answers: list[str], g: dict, swap: Swap, group: str, seed: int) -> list[dict]:
    """The answerable twin and the swapped question, over the same passages, in one half."""
    split = split_of(group, seed)
    common = {"positive": g["positive"], "negative": g["negative"], "group": group, "split": split}
    return [{"id": item_id, "query": question, "answer": [answers], **common, "twin": f"{item_id}-swap",
             "constraint": f"{swap.kind}: {swap.old}"},
            {"id": f"{item_id}-swap", "query": swap.question.strip(), "fakeanswer": answers,
             "swap": f"{swap.kind}: {swap.old} → {swap.new}", **common, "twin": item_id}]


def choose(pairs: list[list[dict]], n: int) -> list[dict]:
    """``n`` pairs, in their (seeded) order: year, ordinal and number swaps first, named entities to fill up."""
    ranked = sorted(pairs, key=lambda p: p[1]["swap"].startswith("entity"))  # stable: keeps the seeded order
    return [r for p in ranked[:n] for r in p]


def write_halves(rows: list[dict], path: Path) -> dict[str, int]:
    """``path`` with every row, and PATH-dev / PATH-heldout with each half; the rows per half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dump = lambda rs: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rs)  # noqa: E731
    path.write_text(dump(rows), encoding="utf-8")
    sizes = {}
    for half in ("dev", "heldout"):
        part = [r for r in rows if r["split"] == half]
        path.with_name(f"{path.stem}-{half}{path.suffix}").write_text(dump(part), encoding="utf-8")
        sizes[half] = len(part)
    return sizes


def split_file(path: Path, seed: int) -> dict[str, int]:
    """An existing RGB file cut in the same halves (by its ``group``, else its question): PATH-dev, PATH-heldout."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = [{**r, "split": split_of(r.get("group") or r["query"].strip(), seed)} for r in rows]
    sizes = {h: sum(r["split"] == h for r in rows) for h in ("dev", "heldout")}
    for half in ("dev", "heldout"):
        part = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows if r["split"] == half)
        path.with_name(f"{path.stem}-{half}{path.suffix}").write_text(part, encoding="utf-8")
    return sizes


def describe(rows: list[dict]) -> str:
    swapped = [r for r in rows if r.get("swap")]
    kinds = Counter(r["swap"].split(":")[0] for r in swapped)
    halves = Counter(r["split"] for r in swapped)
    return (f"{len(swapped)} items ({len(rows)} records with their twins); swaps: {dict(kinds)}; "
            f"dev {halves['dev']}, heldout {halves['heldout']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--halueval", type=Path, help="HaluEval qa_one-turn_data.json (English items)")
    ap.add_argument("--cmrc", type=Path, help="CMRC2018 cmrc2018_trial.json (Chinese items)")
    ap.add_argument("--out", type=Path, default=Path("bench/out/constraint-swap"))
    ap.add_argument("--n", type=int, default=40, help="items per language (each with its twin)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", type=Path, nargs="*", default=[], metavar="RGB_FILE",
                    help="only cut these RGB files in the dev / heldout halves (FILE-dev.jsonl, FILE-heldout.jsonl)")
    a = ap.parse_args()
    for f in a.split:
        print(f"{f}: {split_file(f, a.seed)}")
    if a.split:
        return
    if not (a.halueval or a.cmrc):
        sys.exit("give --halueval and/or --cmrc (or --split FILE)")
    for lang, source, build in (("en", a.halueval, english), ("zh", a.cmrc, chinese)):
        if source is None:
            continue
        rows = build(source, a.n, a.seed)
        write_halves(rows, a.out / f"{lang}.jsonl")
        print(f"{lang}: {describe(rows)} -> {a.out / lang}.jsonl, {lang}-dev.jsonl, {lang}-heldout.jsonl")


if __name__ == "__main__":
    main()
