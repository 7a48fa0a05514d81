"""An `eval rag --out` folder scored again with today's answer matching (text/answers.answer_correct), without asking
anything again: each arm's saved answer against the item's expected answers; the dominance report (eval/dominance.py)
and each arm's accuracy recomputed. Writes FOLDER/rescored.json and prints what changed.

    .venv/bin/python bench/rescore_eval.py bench/out/eval/dom52-en-after2
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragclinic.eval.dominance import arm_ok, dominance  # noqa: E402
from ragclinic.text.answers import answer_correct  # noqa: E402


def main(folder: Path) -> None:
    rows = [json.loads(line) for line in (folder / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    arms = json.loads((folder / "run.json").read_text(encoding="utf-8"))["arms"]
    changed = []
    for r in rows:
        for arm in arms:
            a = r.get(arm)
            if not a or r["expect_refusal"]:
                continue
            now = (not a["refused"]) and answer_correct(a["answer"], r["expected"])
            if now != a["correct"]:
                changed.append({"key": r["key"], "arm": arm, "answer": a["answer"][:80], "was": a["correct"], "now": now})
                a["correct"] = now
    answerable = [r for r in rows if not r["expect_refusal"]]
    out = {"changed": changed,
           "accuracy": {arm: round(sum(arm_ok(r, r[arm]) for r in answerable if r.get(arm)) / len(answerable), 4)
                        for arm in arms},
           "dominance": {arm: {k: v for k, v in d.items() if k not in ("loss_cases", "win_cases")}
                         for arm, d in dominance(rows, arms).items()}}
    (folder / "rescored.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
