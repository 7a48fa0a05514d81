"""Rows for the failure forecast (doctor/forecast.py) from licensed data: CMRC2018 (Chinese) and HaluEval QA
(English) questions, each set asked against one knowledge base of all its documents (one per language), from
which a third of the documents were withheld. Each row: the forecast's features from the pipeline's state after the gate (the real retrievers, e5
and the learned verifier; no language model: nothing here depends on what a model would write), and two labels:

- ``insufficient_evidence``: the question's document was withheld (the knowledge base does not hold the answer);
- ``retrieval_miss``: its document is in the knowledge base but the passage that holds the answer did not reach
  the context (CMRC2018: the passage holding the answer span; HaluEval, whose answers are not verbatim: any
  passage of its document).

Only questions of the verifier's val and test splits (pairs.split_of) are asked — the verifier was fitted on the
train split, and its scores there would be over-confident; the forecast is fitted on the verifier's val
questions and calibrated / tested on its test questions (halved by another hash of the question's document, so
the questions of one paragraph stay on one side).

    PYTHONPATH=training python -m ragclinic_training.forecast_data --cmrc ../shared/data/cmrc2018/cmrc2018_trial.json \\
        --halueval ../shared/data/halueval/qa_one-turn_data.json --out bench/out/forecast
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path

from ragclinic_training.pairs import split_of

WITHHELD_SHARE = 1 / 3


def _h(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def cmrc_items(path: Path) -> tuple[dict[str, str], list[dict]]:
    """(documents by id, questions): one document per paragraph."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    docs, items = {}, []
    for art in data:
        split = split_of("cmrc:" + art["id"])
        for i, para in enumerate(art["paragraphs"]):
            did = f"cmrc-{art['id']}-{i}"
            docs[did] = para["context"]
            for qa in para["qas"]:
                ans = qa["answers"][0]["text"].strip() if qa.get("answers") else ""
                if ans:
                    items.append({"id": qa["id"], "question": qa["question"], "answer": ans, "doc": did,
                                  "source": "cmrc2018", "verifier_split": split})
    return docs, items


def halueval_items(path: Path) -> tuple[dict[str, str], list[dict]]:
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    docs, items = {}, []
    for i, r in enumerate(recs):
        did = f"halueval-{i:04d}"
        docs[did] = r["knowledge"]
        items.append({"id": did, "question": r["question"], "answer": r["right_answer"], "doc": did,
                      "source": "halueval", "verifier_split": split_of("halueval:" + r["question"])})
    return docs, items


def forecast_split(item: dict) -> str | None:
    """train (the verifier's val questions), val / test (its test questions, halved); None: not asked."""
    if item["verifier_split"] == "val":
        return "train"
    if item["verifier_split"] == "test":
        return "val" if _h("forecast-split:" + item["doc"]) < 0.5 else "test"  # a paragraph's questions together
    return None


def build(docs: dict[str, str], folder: Path, kb: Path) -> set[str]:
    """The corpus without its withheld third, ingested into ``kb``; → the ids of the documents it holds."""
    from ragclinic import Clinic

    held = {d for d in docs if _h("forecast-withhold:" + d) >= WITHHELD_SHARE}
    folder.mkdir(parents=True, exist_ok=True)
    for d in held:
        (folder / f"{d}.txt").write_text(docs[d], encoding="utf-8")
    if not (kb / "kb.sqlite3").exists():
        with Clinic.open(kb, llm="none") as c:
            result = c.ingest(folder)
            if result.failed:
                raise SystemExit(f"ingest failed: {result.failed[:3]}")
    return held


def rows(kb: Path, items: list[dict], held: set[str], out, done: set[str]) -> int:
    from ragclinic import wiring
    from ragclinic.doctor.forecast import FEATURES, features
    from ragclinic.store.kb import KnowledgeBase
    from ragclinic.config import Settings

    settings = Settings.load(kb, llm="none")
    k = KnowledgeBase.open(settings)
    pipe = wiring.pipeline(k, settings=settings)
    n = 0
    try:
        for it in items:
            split = forecast_split(it)
            if split is None or it["id"] in done:
                continue
            state, _ = pipe.ask(it["question"], save=False)
            mine = [p for p in state.passages if Path(p.doc.path).stem == it["doc"]]
            holds = it["doc"] in held
            # CMRC2018's answers are spans of their paragraph: the passage that holds the span must reach the
            # context; HaluEval's are not verbatim ("yes", a paraphrase): its document must
            reached = any(it["answer"] in p.chunk.text for p in mine) if it["source"] == "cmrc2018" else bool(mine)
            row = {**{key: it[key] for key in ("id", "question", "doc", "source")}, "split": split,
                   "labels": {"insufficient_evidence": int(not holds), "retrieval_miss": int(holds and not reached)},
                   "doc_in_context": bool(mine),
                   "features": dict(zip(FEATURES, (round(float(v), 6) for v in features(state))))}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            n += 1
    finally:
        k.close()
    return n


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--halueval", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "rows.jsonl"
    done = {json.loads(x)["id"] for x in path.read_text().splitlines() if x.strip()} if path.exists() else set()
    with path.open("a", encoding="utf-8") as out:
        for name, loader, src in (("cmrc2018", cmrc_items, a.cmrc), ("halueval", halueval_items, a.halueval)):
            docs, items = loader(src)
            held = build(docs, a.out / f"corpus-{name}", a.out / f"kb-{name}")
            n = rows(a.out / f"kb-{name}", items, held, out, done)
            print(f"{name}: {len(docs)} documents, {len(held)} in the knowledge base; {n} new rows", flush=True)


if __name__ == "__main__":
    main()
