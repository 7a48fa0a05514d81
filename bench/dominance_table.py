"""Issue 52's table per evaluation set: from `eval rag --arms naive,...` output folders, the questions the simple
peer answers and ragclinic does not (and the reverse), with accuracy and refusal beside the peer, and each loss
with the layer the debugger blamed. Writes bench/dominance/NAME.md (every loss and win, as the run's report has
them) and prints one summary row per set and arm.

    .venv/bin/python bench/dominance_table.py bench/out/eval/dom52-zh:rgb-zh bench/out/eval/dom52-en:halueval-en
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragclinic.eval.dominance import blamed_layers  # noqa: E402
from ragclinic.eval.report import dominance_section  # noqa: E402

OUT = ROOT / "bench" / "dominance"


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def summary(folder: Path, name: str) -> list[str]:
    result = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    dom = json.loads((folder / "dominance.json").read_text(encoding="utf-8"))
    m = result["metrics"]
    rows = []
    for arm, d in dom.items():
        kinds = ", ".join(f"{k} {v}" for k, v in d["losses_by_kind"].items()) or "—"
        layers = ", ".join(f"{k} {v}" for k, v in blamed_layers(d).items()) or "—"
        rows.append(f"| {name} | {arm} | {d['of']} | **{d['losses']}** / {d['wins']} | {kinds} | {layers} | "
                    f"{_fmt(m['naive'].get('accuracy'))} → {_fmt(m[arm].get('accuracy'))} | "
                    f"{_fmt(m['naive'].get('refusal_accuracy'))} → {_fmt(m[arm].get('refusal_accuracy'))} |")
    OUT.mkdir(exist_ok=True)
    page = [f"# {name}: against the simple peer", "", f"From `{folder}` ({result.get('dataset', '')}, "
            f"{result['n']} cases; the command is in bench/RESULTS.md, issue 52).", *dominance_section(dom)]
    for arm, d in dom.items():
        if d["win_cases"]:
            page += ["", f"### {arm}: the questions won from the peer", "", "| case | question | peer | arm |",
                     "|---|---|---|---|"]
            page += [f"| `{c['key']}` | {c['question'][:80]} | {c['peer_answer'][:60]} | {c['answer'][:60]} |"
                     .replace("\n", " ") for c in d["win_cases"]]
    (OUT / f"{name}.md").write_text("\n".join(page) + "\n", encoding="utf-8")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="FOLDER:NAME (an eval rag --out folder with the naive arm)")
    args = ap.parse_args(argv)
    print("| set | arm | questions | lost / won | losses by kind | blamed layer | accuracy peer → arm | "
          "refusal peer → arm |")
    print("|---|---|---|---|---|---|---|---|")
    for run in args.runs:
        folder, _, name = run.partition(":")
        for line in summary(Path(folder), name or Path(folder).name):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
