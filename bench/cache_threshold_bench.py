"""The answer cache's e5 threshold: near-identical questions should hit, other questions never.

Questions from CMRC2018 trial (zh) and HaluEval QA (en), grouped by their article / knowledge (split by
training/ragclinic_training/pairs.py split_of: the threshold is chosen on "train" + "val", reported on "test").
Should hit: the question re-typed — a polite opener ("请问" / "Please tell me"), a trailing "呢" / "exactly" (the
exact-text forms — case, width, spaces, closing punctuation — hit by normalisation and are not counted).
Must not hit: every other question of the same article (same topic, same names); the question with one of
its names replaced by another name of the same group; the question with a constraint added ("in Berlin",
"在北京") or its longest content word dropped. A lookup is a hit when cosine ≥ threshold and (``--guard``,
the shipped rule) the content terms, numbers and question word agree (store/answer_cache.py same_constraints);
``--no-guard`` measures the vector alone.

    PYTHONPATH=training python bench/cache_threshold_bench.py --cmrc ../shared/data/cmrc2018/cmrc2018_trial.json \
        --halueval ../shared/data/halueval/qa_one-turn_data.json --out bench/out/cache-threshold.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from ragclinic.models.e5 import E5Embedder
from ragclinic.store.answer_cache import normalise, same_constraints
from ragclinic_training.pairs import split_of

from output import emit  # noqa: E402

THRESHOLDS = [0.90, 0.92, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99]
_CAP = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")


def cmrc_groups(path: Path, limit: int) -> dict[str, list[str]]:
    data = json.loads(path.read_text())["data"]
    out: dict[str, list[str]] = {}
    for art in data:
        qs = [qa["question"].strip() for para in art["paragraphs"] for qa in para["qas"] if qa["question"].strip()]
        if len(qs) >= 2:
            out["cmrc:" + art.get("id", art.get("title", ""))] = qs[:6]
        if len(out) >= limit:
            break
    return out


def halueval_groups(path: Path, limit: int) -> dict[str, list[str]]:
    by_knowledge: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            by_knowledge[r["knowledge"][:200]].append(r["question"].strip())
    # HaluEval has one question per knowledge: group the questions that share a (multi-word) name instead —
    # the hardest negatives, same names, another question
    by_name: dict[str, list[str]] = defaultdict(list)
    for qs in by_knowledge.values():
        for q in qs:
            for n in set(_CAP.findall(q[1:])):
                if " " in n:
                    by_name[n].append(q)
    out = {f"halueval:{n}": qs[:6] for n, qs in sorted(by_name.items()) if 2 <= len(qs)}
    return dict(list(out.items())[:limit])


def variants(q: str, zh: bool, rng: random.Random) -> list[str]:
    if zh:
        return [f"请问{q}", q.rstrip("？?") + "呢？"]
    base = q.rstrip("?")
    return [f"Please tell me: {base}?", f"{base} exactly?"]


def name_swaps(qs: list[str], zh: bool) -> list[tuple[str, str]]:
    """(question, the question with one name replaced by another name from the same group)."""
    if zh:
        return []
    names = sorted({n for q in qs for n in _CAP.findall(q[1:])})
    out = []
    for q in qs:
        own = [n for n in _CAP.findall(q[1:])]
        other = [n for n in names if n not in q]
        if own and other:
            out.append((q, q.replace(own[0], other[0], 1)))
    return out


def constraint_edits(q: str, zh: bool) -> list[str]:
    """The question with a constraint added, and with its longest content word dropped (a constraint the
    question already has, or a word it repeats, would not change what it asks: not built)."""
    from ragclinic.text.support import content_terms

    place = "北京" if zh else "Berlin"
    added = [q.rstrip("？?") + ("在北京？" if zh else " in Berlin?")] if place not in q else []
    words = [w for w in re.findall(r"[\w'-]+", q) if w.lower() in content_terms(w.lower()) or zh]
    longest = max((w for w in words if len(w) > 2 and q.lower().count(w.lower()) == 1), key=len, default="")
    dropped = re.sub(r"\s{2,}", " ", q.replace(longest, "", 1)).strip() if longest and not zh else ""
    return added + ([dropped] if dropped and dropped != q else [])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--groups", type=int, default=150, help="groups per language")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--guard", action=argparse.BooleanOptionalAction, default=True)
    a = ap.parse_args()
    agree = same_constraints if a.guard else (lambda x, y: True)
    rng = random.Random(0)
    groups = {**cmrc_groups(a.cmrc, a.groups), **halueval_groups(a.halueval, a.groups)}
    emb = E5Embedder()
    cases: dict[str, list] = {"choose": [], "report": []}  # (kind, cos, constraints agree)
    t0 = time.perf_counter()
    for g, qs in groups.items():
        zh = g.startswith("cmrc:")
        part = "report" if split_of(g) == "test" else "choose"
        texts = list(dict.fromkeys(qs))
        vs = {q: variants(q, zh, rng) for q in texts}
        swaps = name_swaps(texts, zh)
        edits = {q: constraint_edits(q, zh) for q in texts}
        allq = list(dict.fromkeys(texts + [v for q in texts for v in vs[q]] + [s for _, s in swaps]
                                  + [e for q in texts for e in edits[q]]))
        m = dict(zip(allq, emb.embed_queries(allq)))
        for q in texts:
            for v in vs[q]:
                if normalise(v) != normalise(q):
                    cases[part].append(("same", float(m[q] @ m[v]), agree(q, v), zh))
            for o in texts:
                if o != q:
                    cases[part].append(("other", float(m[q] @ m[o]), agree(q, o), zh))
            for e in edits[q]:
                cases[part].append(("edit", float(m[q] @ m[e]), agree(q, e), zh))
        for q, s in swaps:
            cases[part].append(("swap", float(m[q] @ m[s]), agree(q, s), zh))
    rows = {}
    for part, cs in cases.items():
        rows[part] = []
        for t in THRESHOLDS:
            def share(kind, lang=None):
                sel = [c for c in cs if c[0] == kind and (lang is None or c[3] == (lang == "zh"))]
                return round(sum(c[1] >= t and c[2] for c in sel) / len(sel), 4) if sel else None
            rows[part].append({"threshold": t, "hit_same": share("same"), "hit_same_zh": share("same", "zh"),
                               "hit_same_en": share("same", "en"), "false_hit_other": share("other"),
                               "false_hit_swap": share("swap"), "false_hit_edit": share("edit")})
    safe = [r["threshold"] for r in rows["choose"]
            if not any(r[k] for k in ("false_hit_other", "false_hit_swap", "false_hit_edit"))]
    chosen = min(safe) if safe else None
    counts = {p: {k: sum(c[0] == k for c in cs) for k in ("same", "other", "swap", "edit")}
              for p, cs in cases.items()}
    emit({"guard": a.guard, "groups": len(groups), "counts": counts, "chosen_on_choose_split": chosen, "by_threshold": rows,
          "seconds": round(time.perf_counter() - t0, 1)}, a.out)


if __name__ == "__main__":
    main()
