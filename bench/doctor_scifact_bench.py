"""The doctor's claim checks on SciFact: a claim against the abstract that supports or contradicts it.

    .venv/bin/python bench/doctor_scifact_bench.py --claims 40 [--llm local]

Claims with SUPPORT or CONTRADICT evidence in claims_dev.jsonl (read by path), each checked against its
evidence abstract (the BEIR corpus text) the way the pipeline checks an answer's claim: the rules tier
(``rule_risk``), then — for claims the rules are unsure of — the judge's support question, and for the
contradiction detector the judge's contradiction question. Reported: how often a CONTRADICT claim is
flagged (unsupported or contradicted) and how often a SUPPORT claim is wrongly flagged.
Scientific claims paraphrase their abstracts, so this is the hard case for word overlap.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "scifact"


def items(n: int, seed: int) -> list[dict]:
    corpus = {}
    with open(DATA / "beir" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            corpus[str(r["_id"])] = r["text"]
    out = {"SUPPORT": [], "CONTRADICT": []}
    with open(DATA / "claims_dev.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            for doc, evs in r["evidence"].items():
                if doc in corpus and evs:
                    out[evs[0]["label"]].append({"claim": r["claim"], "abstract": corpus[doc], "label": evs[0]["label"]})
                    break
    rng = random.Random(seed)
    return [x for label in out for x in rng.sample(out[label], min(n // 2, len(out[label])))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--claims", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llm", default="local")
    args = ap.parse_args()
    from ragclinic.config import Settings
    from ragclinic.doctor.detectors.faithfulness import claim_risk, rule_risk
    from ragclinic.models.judge import LogitJudge
    from ragclinic.models.factory import create_language_model

    judge = LogitJudge(create_language_model(args.llm, Settings(llm=args.llm))) if args.llm != "none" else None
    rows, t0, calls = [], time.perf_counter(), 0
    for it in items(args.claims, args.seed):
        rules = rule_risk(it["claim"], it["abstract"])
        risk = claim_risk(it["claim"], [it["abstract"]], judge=judge)
        calls += risk.tier == "model"
        p_con = judge.judge("contradiction", it["abstract"], it["claim"]) if judge else 0.0
        calls += judge is not None
        p_sup = judge.judge("support", it["abstract"], it["claim"]) if judge and not rules.sure else None
        calls += p_sup is not None
        rows.append({**it, "rules_flag": rules.score >= 0.5, "flag": risk.score >= 0.5, "p_contradiction": p_con,
                     "p_support": p_sup, "rules_sure": rules.sure})
    for name, key in (("rules only", "rules_flag"), ("rules → judge support", "flag")):
        con = [r for r in rows if r["label"] == "CONTRADICT"]
        sup = [r for r in rows if r["label"] == "SUPPORT"]
        print(f"{name:24s} CONTRADICT flagged {sum(r[key] for r in con)}/{len(con)}   "
              f"SUPPORT wrongly flagged {sum(r[key] for r in sup)}/{len(sup)}")
    for t in (0.3, 0.5, 0.7):
        con = [r for r in rows if r["label"] == "CONTRADICT"]
        sup = [r for r in rows if r["label"] == "SUPPORT"]
        print(f"judge contradiction ≥ {t}: CONTRADICT {sum(r['p_contradiction'] >= t for r in con)}/{len(con)}   "
              f"SUPPORT {sum(r['p_contradiction'] >= t for r in sup)}/{len(sup)}")
    unsure = [r for r in rows if r["p_support"] is not None]
    for t in (0.5, 0.6, 0.7, 0.8, 0.9):
        print(f"unsure claims cleared at P(support) ≥ {t}: SUPPORT {sum(r['p_support'] >= t for r in unsure if r['label'] == 'SUPPORT')}"
              f"/{sum(r['label'] == 'SUPPORT' for r in unsure)}   CONTRADICT {sum(r['p_support'] >= t for r in unsure if r['label'] == 'CONTRADICT')}"
              f"/{sum(r['label'] == 'CONTRADICT' for r in unsure)}")
    print(f"{calls} judge calls, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
