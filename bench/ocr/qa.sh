#!/usr/bin/env bash
# Questions over the scanned set against the same pages with a text layer (issue 39): one eval a corpus —
# the 300 dpi image-only PDFs, the 150 dpi ones, and the text-layer twins — with the local 1.5B model, the plain
# pipeline, each corpus in a knowledge base of its own built fresh.
#   bash bench/ocr/qa.sh            # SPLIT=heldout by default; SPLIT=dev for the half the path was built on
set -euo pipefail
SET=${SET:-bench/out/ocr-set}
OUT=${OUT:-bench/out/ocr-qa}
SPLIT=${SPLIT:-heldout}
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
.venv/bin/python bench/ocr/make_set.py --out "$SET"
for corpus in scans scans150 text; do
  rm -rf "$OUT/kb-$corpus-$SPLIT"
  .venv/bin/ragclinic eval rag --dataset "jsonl:$SET/questions.jsonl" --corpus "$SET/$corpus" \
    --kb "$OUT/kb-$corpus-$SPLIT" --split "$SPLIT" --llm local --arms plain --out "$OUT/$SPLIT-$corpus" --json \
    > "$OUT/$SPLIT-$corpus.json"
  .venv/bin/python - "$OUT/$SPLIT-$corpus.json" "$corpus" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], json.dumps({k: v for k, v in r.items() if not isinstance(v, (list, dict))})[:600])
PY
done
