"""Context selection on paraphrased questions (issue 35 item 2), replayed on an eval run's traces, no model: for
each answerable item whose gold passage reached the generator, is the answering snippet in what the generator was
shown — with the selection as it ran, and with a candidate rule (``--floor``: a passage whose best sentence covers
less than this weighted share of the question's terms is shown whole: the shipped rule, 0.02 before issue 35) —
and what it costs in characters shown.

    .venv/bin/python bench/realdocs/selection_probe.py --run bench/out/realdocs/eval-zh-dev-base \
        --kb bench/out/realdocs/kb-debref-zh --floors 0.02,0.2,0.3,0.4,1.01
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.eval.tasks.gold import holds_gold
from ragclinic.pipeline.generate.select import select_context
from ragclinic.trace.store import load_trace
from ragclinic.wiring import open_kb


def shown(passages, question: str, floor: float) -> tuple[str, int]:
    """What the selection shows with ``floor`` (the ``context_select_floor`` setting), no verifier threshold."""
    sel = select_context(question, passages, threshold=None, floor=floor)
    return " ".join(t for _, t in sel.excerpts), sel.chars_shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--floors", default="0.02,0.2,0.3,0.4,1.01")
    a = ap.parse_args()
    kb = open_kb(Settings.load(a.kb))
    rows = [json.loads(x) for x in (a.run / "items.jsonl").read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r.get("gold") and (r.get("baseline") or {}).get("gold_shown")]
    out = {"items": len(rows)}
    for floor in map(float, a.floors.split(",")):
        hit, chars = 0, 0
        for r in rows:
            trace = load_trace(kb.db, r["baseline"]["trace_id"])
            passages = trace.span("gate").output.passages
            text, n = shown(passages, trace.query, floor)
            hit += holds_gold(text, r["gold"])
            chars += n
        out[f"floor={floor:g}"] = {"gold_in_excerpt": hit, "chars_shown": chars}
    kb.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
