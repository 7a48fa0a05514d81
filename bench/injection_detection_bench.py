"""Planted-instruction detection, the rules against the rules + the learned detector, side by side.

    PYTHONPATH=training python bench/injection_detection_bench.py --out bench/out/injection-detection.json [--limit-scifact N]

- Held-out phrasings: bench/injection/heldout2.py (written before the detector's training data, never used to
  build or tune it) and heldout.py (seen while the rules were examined), each planted between two fact sentences
  of one paragraph. Detected: a span overlaps the planted sentence; the facts: neither fact sentence is cut.
- Benign look-alikes (heldout2.BENIGN): any span is a false alarm.
- False alarms on real text nobody planted anything in: every SciFact abstract and the odd-numbered CMRC2018 trial
  articles' contexts (the even ones are training negatives); a passage with any span is a false alarm.
- Time: seconds for the false-alarm pass per detector, and sentences the learned detector embedded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "injection"))

from output import emit  # noqa: E402

FACTS = {"en": ("The museum opens at 9 am every day except Monday.", "Tickets cost 12 euros for adults."),
         "zh": ("博物馆除周一外每天上午9点开门。", "成人门票为12欧元。")}


def planted(sentence: str, lang: str) -> tuple[str, int, int]:
    a, b = FACTS[lang]
    sep = " " if lang == "en" else ""
    text = f"{a}{sep}{sentence}{sep}{b}"
    start = len(a) + len(sep)
    return text, start, start + len(sentence)


def held_out(detector, sets: dict[str, list[tuple[str, str]]]) -> dict:
    from ragclinic.text.injection import find_instructions

    out = {}
    for name, items in sets.items():
        hit = facts_cut = 0
        missed = []
        for sentence, lang in items:
            text, s, e = planted(sentence, lang)
            spans = find_instructions(text, detector)
            if any(sp.start < e and sp.end > s for sp in spans):
                hit += 1
            else:
                missed.append(sentence)
            facts_cut += any(text[sp.start:s].strip() or text[e:sp.end].strip() for sp in spans)  # not just a space
        out[name] = {"n": len(items), "detected": hit, "rate": round(hit / len(items), 3),
                     "facts_cut": facts_cut, "missed": missed}
    return out


def benign(detector) -> dict:
    import heldout2

    from ragclinic.text.injection import find_instructions

    flagged = [x for x in heldout2.BENIGN if find_instructions(x, detector)]
    return {"n": len(heldout2.BENIGN), "flagged": len(flagged), "examples": flagged}


def real_passages(limit_scifact: int) -> list[tuple[str, str]]:
    from ragclinic_training.instruction_data import cmrc_heldout_contexts

    out = []
    with (DATA / "scifact" / "beir" / "corpus.jsonl").open() as f:
        for i, line in enumerate(f):
            if limit_scifact and i >= limit_scifact:
                break
            d = json.loads(line)
            out.append(("scifact", f"{d.get('title', '')}\n\n{d['text']}"))
    out += [("cmrc2018", c) for c in cmrc_heldout_contexts(DATA / "cmrc2018" / "cmrc2018_trial.json")]
    return out


def false_alarms(detector, passages) -> dict:
    from ragclinic.text.injection import find_instructions

    t0 = time.perf_counter()
    flagged = [(src, text) for src, text in passages if find_instructions(text, detector)]
    secs = time.perf_counter() - t0
    by = {}
    for src in ("scifact", "cmrc2018"):
        n = sum(1 for s, _ in passages if s == src)
        k = sum(1 for s, _ in flagged if s == src)
        by[src] = {"passages": n, "flagged": k, "rate": round(k / n, 4) if n else None}
    return {"passages": len(passages), "flagged": len(flagged), "rate": round(len(flagged) / len(passages), 4),
            "by_source": by, "seconds": round(secs, 1), "examples": [t[:200] for _, t in flagged[:12]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit-scifact", type=int, default=0)
    a = ap.parse_args()
    import heldout
    import heldout2

    from ragclinic.verify.instructions import LearnedInstructionDetector, cued

    sets = {"heldout2_en": [(x, "en") for x in heldout2.EN], "heldout2_zh": [(x, "zh") for x in heldout2.ZH],
            "heldout1_en": [(x, "en") for x in heldout.EN], "heldout1_zh": [(x, "zh") for x in heldout.ZH]}
    passages = real_passages(a.limit_scifact)
    learned = LearnedInstructionDetector()
    result = {"threshold": learned.threshold}
    for name, det in (("rules", None), ("learned", learned)):
        result[name] = {"held_out": held_out(det, sets), "benign": benign(det), "false_alarms": false_alarms(det, passages)}
        print(name, json.dumps({k: {s: v.get("rate") for s, v in result[name]["held_out"].items()} if k == "held_out"
                                else v for k, v in result[name].items() if k != "false_alarms"}, ensure_ascii=False)[:600],
              flush=True)
    from ragclinic.text.sentences import split_sentences

    n_sent = sum(len(split_sentences(t)) for _, t in passages)
    n_cued = sum(cued(t[s:e]) for _, t in passages for s, e in split_sentences(t))
    result["sentences"] = {"all": n_sent, "cued": n_cued, "cued_share": round(n_cued / n_sent, 3)}
    emit(result, a.out)


if __name__ == "__main__":
    main()
