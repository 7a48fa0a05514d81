"""False instruction alarms on whole manuals (issue 35 item 4): every chunk of a knowledge base built from documents
with no planted instruction goes through what the scope layer runs on a passage (text/injection.find_instructions
with the learned detector, and with the rules alone); a chunk with any span found is a false alarm.

    .venv/bin/python bench/instruction_false_alarms.py --kb bench/out/realdocs/kb-lex-pg15 --out bench/out/realdocs/alarms-pg15.json

The knowledge base can be lexical-only (RAGCLINIC_EMBEDDER=none ragclinic ingest FOLDER --kb KB): chunking does not
depend on the embedder. Prints the rates and writes every flagged sentence with its kind (for reading).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path

from ragclinic.text.injection import find_instructions
from ragclinic.verify.instructions import detector_for


def chunks(kb: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(f"file:{kb / 'kb.sqlite3'}?mode=ro", uri=True)
    return [(cid, text) for cid, text in db.execute("SELECT chunk_id, text FROM chunks ORDER BY rowid")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = chunks(a.kb)
    out = {"kb": str(a.kb), "chunks": len(rows)}
    flagged_all = {}
    for name in ("rules", "learned"):
        det = detector_for(name)
        t0, hits = time.perf_counter(), []
        for cid, text in rows:
            spans = find_instructions(text, det)
            if spans:
                hits.append({"chunk": cid, "spans": [{"kind": s.kind, "text": text[s.start:s.end][:300]}
                                                     for s in spans]})
        out[name] = {"chunks_flagged": len(hits), "rate": round(len(hits) / max(len(rows), 1), 4),
                     "seconds": round(time.perf_counter() - t0, 1)}
        flagged_all[name] = hits
    print(json.dumps(out, indent=1))
    if a.out:
        a.out.write_text(json.dumps({**out, "flagged": flagged_all}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
