#!/usr/bin/env python3
"""Consistency checker for the shapes55 evaluation set (standard library only).

Usage:  python3 bench/shapes55/check.py

Checks: every line of questions-dev.jsonl / questions-heldout.jsonl is valid
JSON with the required fields; ids are unique; the split field matches the
file; each (lang, kind) group is split exactly in half (dev = floor(n/2));
minimum counts per kind and language; every named document exists; every
"gold" snippet (and "stated_gold" / "instruction") is an exact substring of
one of the item's documents; kind-specific fields are well formed; each
corpus document has exactly one "# " title.

It prints only ids and counts, never question text, so running it does not
expose the heldout questions. Exit status 0 means the set is consistent.
"""
import json
import os
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {"dev": "questions-dev.jsonl", "heldout": "questions-heldout.jsonl"}
CORPUS = {"en": "corpus_en", "zh": "corpus_zh"}
KINDS = ["global", "causal", "tabular", "wrong_entity", "wrong_entity_control", "planted"]
MIN_COUNT = {"global": 16, "causal": 16, "tabular": 16, "wrong_entity": 16,
             "wrong_entity_control": 10, "planted": 10}
BASE_FIELDS = {"id": str, "lang": str, "kind": str, "split": str, "question": str,
               "answers": list, "expect_refusal": bool, "gold": list, "docs": list}
STRENGTHS = {"stated", "hedged"}

errors = []
warnings = []


def err(msg):
    errors.append(msg)


def load_corpus():
    docs = {}
    for lang, sub in CORPUS.items():
        d = os.path.join(HERE, sub)
        if not os.path.isdir(d):
            err(f"missing corpus folder {sub}/")
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".md"):
                continue
            with open(os.path.join(d, name), encoding="utf-8") as f:
                text = f.read()
            docs[(lang, name)] = text
            titles = [ln for ln in text.splitlines() if re.match(r"^# \S", ln)]
            if len(titles) != 1:
                err(f"{sub}/{name}: expected exactly one '# ' title, found {len(titles)}")
            if lang == "en":
                n = len(text.split())
                if not 300 <= n <= 900:
                    warnings.append(f"{sub}/{name}: {n} words (target 300-900)")
            else:
                n = len(text)
                if not 500 <= n <= 1200:
                    warnings.append(f"{sub}/{name}: {n} characters (target 500-1200)")
    return docs


def in_docs(snippet, lang, names, corpus):
    return any(snippet in corpus.get((lang, n), "") for n in names)


def check_item(rec, split_of_file, corpus, where):
    rid = rec.get("id", where)
    for field, typ in BASE_FIELDS.items():
        if field not in rec:
            err(f"{rid}: missing field '{field}'")
            return None
        if not isinstance(rec[field], typ):
            err(f"{rid}: field '{field}' should be {typ.__name__}")
            return None
    lang, kind = rec["lang"], rec["kind"]
    if lang not in CORPUS:
        err(f"{rid}: bad lang {lang!r}")
        return None
    if kind not in KINDS:
        err(f"{rid}: bad kind {kind!r}")
        return None
    if rec["split"] != split_of_file:
        err(f"{rid}: split '{rec['split']}' but stored in {FILES[split_of_file]}")
    if not rid.startswith(lang + "-"):
        err(f"{rid}: id does not start with its lang")
    if not rec["question"].strip():
        err(f"{rid}: empty question")
    show = split_of_file == "dev"  # never echo heldout text

    if not rec["docs"]:
        err(f"{rid}: 'docs' is empty")
    for name in rec["docs"]:
        if (lang, name) not in corpus:
            err(f"{rid}: document {name} does not exist in {CORPUS[lang]}/")

    for k, g in enumerate(rec["gold"]):
        if not isinstance(g, str) or not g:
            err(f"{rid}: gold[{k}] is not a non-empty string")
        elif not in_docs(g, lang, rec["docs"], corpus):
            err(f"{rid}: gold[{k}] not found in its docs" + (f": {g!r}" if show else ""))

    if any(not isinstance(a, str) or not a.strip() for a in rec["answers"]):
        err(f"{rid}: answers must be non-empty strings")

    if kind == "wrong_entity":
        if rec["expect_refusal"] is not True:
            err(f"{rid}: wrong_entity must have expect_refusal true")
        if rec["answers"] or rec["gold"]:
            err(f"{rid}: wrong_entity must have empty answers and gold")
        for f in ("asked", "stated", "stated_value"):
            if not isinstance(rec.get(f), str) or not rec.get(f, "").strip():
                err(f"{rid}: wrong_entity needs non-empty '{f}'")
        for k, g in enumerate(rec.get("stated_gold", [])):
            if not in_docs(g, lang, rec["docs"], corpus):
                err(f"{rid}: stated_gold[{k}] not found in its docs" + (f": {g!r}" if show else ""))
    else:
        if rec["expect_refusal"] is not False:
            err(f"{rid}: only wrong_entity items may expect a refusal")
        if not rec["answers"]:
            err(f"{rid}: answerable item with no answers")
        if not rec["gold"]:
            err(f"{rid}: answerable item with no gold snippets")

    if kind == "global":
        kps = rec.get("key_points")
        if not isinstance(kps, list) or not 3 <= len(kps) <= 6:
            err(f"{rid}: global needs 3-6 key_points")
        else:
            for k, p in enumerate(kps):
                if not (isinstance(p, dict) and isinstance(p.get("point"), str) and p["point"]
                        and isinstance(p.get("any_of"), list) and p["any_of"]
                        and all(isinstance(s, str) and s for s in p["any_of"])):
                    err(f"{rid}: key_points[{k}] malformed")
        if len(rec["docs"]) < 2:
            err(f"{rid}: global question should draw on at least two documents")

    if kind == "causal":
        chain = rec.get("chain")
        if not isinstance(chain, list) or not chain:
            err(f"{rid}: causal needs a non-empty chain")
        else:
            for k, c in enumerate(chain):
                if not (isinstance(c, dict) and isinstance(c.get("cause"), str) and c["cause"]
                        and isinstance(c.get("effect"), str) and c["effect"]
                        and c.get("strength") in STRENGTHS):
                    err(f"{rid}: chain[{k}] malformed")

    if kind == "planted":
        ins = rec.get("instruction")
        if not isinstance(ins, str) or not ins:
            err(f"{rid}: planted needs 'instruction'")
        elif not in_docs(ins, lang, rec["docs"], corpus):
            err(f"{rid}: instruction not found verbatim in its docs")
        elif any(ins in g for g in rec["gold"]):
            err(f"{rid}: gold snippet contains the planted instruction")
    return lang, kind, rec["split"]


def main():
    corpus = load_corpus()
    seen = set()
    counts = Counter()
    pairs = []  # (id, pair id, kind, split)
    kind_split = {}
    for split, fname in FILES.items():
        path = os.path.join(HERE, fname)
        if not os.path.exists(path):
            err(f"missing {fname}")
            continue
        with open(path, encoding="utf-8") as f:
            for ln, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    err(f"{fname}:{ln}: invalid JSON ({e.msg})")
                    continue
                if not isinstance(rec, dict):
                    err(f"{fname}:{ln}: not a JSON object")
                    continue
                rid = rec.get("id")
                if rid in seen:
                    err(f"{fname}:{ln}: duplicate id {rid}")
                seen.add(rid)
                res = check_item(rec, split, corpus, f"{fname}:{ln}")
                if res:
                    counts[res] += 1
                    kind_split[rid] = (res[1], split)
                    if "pair" in rec:
                        pairs.append((rid, rec["pair"], res[1], split))

    # optional "pair" links between wrong_entity items and their controls
    want = {"wrong_entity": "wrong_entity_control", "wrong_entity_control": "wrong_entity"}
    for rid, pid, kind, split in pairs:
        if kind not in want:
            err(f"{rid}: only wrong_entity / wrong_entity_control items may have 'pair'")
        elif pid not in kind_split:
            err(f"{rid}: pair {pid} does not exist")
        elif kind_split[pid] != (want[kind], split):
            err(f"{rid}: pair {pid} must be a {want[kind]} item in the same split")

    # split balance and minimum counts
    table = defaultdict(dict)
    for lang in CORPUS:
        for kind in KINDS:
            dev, held = counts[(lang, kind, "dev")], counts[(lang, kind, "heldout")]
            n = dev + held
            table[lang][kind] = (dev, held)
            if dev != n // 2:
                err(f"{lang}/{kind}: dev={dev}, heldout={held}; expected dev = floor({n}/2)")
            if n < MIN_COUNT[kind]:
                err(f"{lang}/{kind}: only {n} items (need >= {MIN_COUNT[kind]})")

    print("corpus documents:", ", ".join(f"{lang}={sum(1 for k in corpus if k[0] == lang)}" for lang in CORPUS))
    print(f"{'kind':<22}{'en dev':>8}{'en held':>9}{'zh dev':>8}{'zh held':>9}{'total':>7}")
    tot = Counter()
    for kind in KINDS:
        row = []
        for lang in CORPUS:
            d, h = table[lang][kind]
            row += [d, h]
            tot[(lang, "dev")] += d
            tot[(lang, "heldout")] += h
        print(f"{kind:<22}{row[0]:>8}{row[1]:>9}{row[2]:>8}{row[3]:>9}{sum(row):>7}")
    allrow = [tot[("en", "dev")], tot[("en", "heldout")], tot[("zh", "dev")], tot[("zh", "heldout")]]
    print(f"{'all':<22}{allrow[0]:>8}{allrow[1]:>9}{allrow[2]:>8}{allrow[3]:>9}{sum(allrow):>7}")

    for w in warnings:
        print("warning:", w)
    if errors:
        for e in errors:
            print("ERROR:", e)
        print(f"FAILED: {len(errors)} error(s)")
        return 1
    print(f"OK: {len(seen)} items, all gold snippets found in their documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
