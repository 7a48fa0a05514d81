"""How well the model's own probability of `not_in_documents` at the status position separates answerable from
unanswerable prompts (issue 33 observation; issue 36 is the hidden-state probe): RGB zh items 40–59 and the English
dev half, each with one positive + three negatives vs four negatives; prints P(not) per pair, AUROC and the
refusal / over-refusal at a few thresholds.

    python bench/status_probe.py
"""
import os, json, sys
os.environ["OMP_WAIT_POLICY"]="PASSIVE"
from ragclinic.config import Settings
from ragclinic.models.llama import LlamaModel
from ragclinic.models.weights import WEIGHTS
from ragclinic.models.llm import Message
from ragclinic.pipeline.generate.prompt import SYSTEM, _FIELDS, SYSTEM_ZH_HINT
m = LlamaModel(WEIGHTS["local"], Settings())
def probe(q, ps, zh):
    sys_ = SYSTEM.format(fields=_FIELDS["short"]) + ("\n" + SYSTEM_ZH_HINT if zh else "")
    user = f"Question: {q}\n\n" + "\n\n".join(f"[{i}] {' '.join(p.split())}" for i, p in enumerate(ps, 1)) + f"\n\nQuestion: {q}"
    msgs = [Message("system", sys_), Message("user", user), Message("assistant", '{"status": "')]
    return m.next_token_probs(msgs, ["answered", "not", "conflict"])["not"]
rows = []
zh = [json.loads(l) for l in open("../shared/data/rgb/zh_fact.json")][40:60]
en = [json.loads(l) for l in open("bench/out/halueval-test-rgb-dev.jsonl")][:20]
for src, items, is_zh in (("zh", zh, True), ("en", en, False)):
    for it in items:
        pos = [it["positive"][0][:400]] + [p[:400] for p in it["negative"][:3]]
        neg = [p[:400] for p in it["negative"][:4]]
        if len(neg) < 2: continue
        a, b = probe(it["query"], pos, is_zh), probe(it["query"], neg, is_zh)
        rows.append((src, a, b)); print(src, round(a, 3), round(b, 3), flush=True)
json.dump(rows, open("/tmp/exp/status_probe.json", "w"))
from itertools import product
for src in ("zh", "en"):
    r = [x for x in rows if x[0] == src]
    auc = sum((b > a) + 0.5 * (b == a) for (_, a, _), (_, _, b) in product(r, r)) / (len(r) ** 2)
    print(src, "AUROC", round(auc, 3))
    for t in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5):
        print(src, t, "refuse neg", sum(b >= t for _, _, b in r) / len(r), "over-refuse pos", sum(a >= t for _, a, _ in r) / len(r))
