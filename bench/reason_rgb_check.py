"""How often the issue-17 steps fire on plain factual questions, without a language model: for each case of an
`eval rag` run (its knowledge bases), the ambiguity step's verdict and the path the gate's rules choose.

    python bench/reason_rgb_check.py bench/out/eval/rgb-issue17
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ragclinic import Clinic  # noqa: E402
from ragclinic.pipeline.reason.ambiguity import assess  # noqa: E402
from ragclinic.pipeline.reason.planner import tables_in_scope  # noqa: E402
from ragclinic.pipeline.reason.route import choose_path  # noqa: E402
from ragclinic.types import AskRequest, AskState  # noqa: E402


def main(run: Path) -> None:
    items = [json.loads(x) for x in (run / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    flagged, tools = [], []
    for it in items:
        with Clinic.open(it["kb"], llm="none") as c:
            st = AskState(AskRequest(question=it["question"]))
            for layer in ("retrieve", "scope", "gate"):
                st, _ = c.pipeline.run_layer(layer, st)
            amb = assess(it["question"], st.passages, c.settings.ambiguity_threshold)
            path, why = choose_path(it["question"], st.passages, tables_in_scope(c.kb, st.passages, it["question"]))
        if amb.has_ambiguity:
            flagged.append((it["key"], amb.ambiguity_type, amb.confidence))
        if path != "direct":
            tools.append((it["key"], why))
    print(json.dumps({"cases": len(items), "ambiguous": len(flagged), "tools_path": len(tools),
                      "ambiguous_cases": flagged, "tools_cases": tools}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
