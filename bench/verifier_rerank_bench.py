"""The learned verifier as a reranker of the hybrid top 20, on questions it never trained on.

CMRC2018 trial, question → its own paragraph (256 paragraphs): only the questions of the articles in the
verifier's test split (training/ragclinic_training/pairs.py split_of; 60% of the articles were trained on, 20% chose the
thresholds). SciFact (BEIR, 300 claims over 5,183 abstracts; evaluation only, never trained on) is measured by
``ragclinic eval retrieval --dataset beir:../shared/data/scifact/beir --rerank``.

    PYTHONPATH=training python bench/verifier_rerank_bench.py --cmrc ../shared/data/cmrc2018/cmrc2018_trial.json --kb /tmp/cmrc-kb
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.eval.datasets import load
from ragclinic.eval.tasks.retrieval import qa_as_retrieval, run_retrieval
from ragclinic.store.kb import KnowledgeBase
from ragclinic.verify import create_verifier
from ragclinic_training.pairs import split_of

from output import emit  # noqa: E402  (bench/ is on sys.path when a bench runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmrc", type=Path, required=True)
    ap.add_argument("--kb", type=Path, required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--verifier", default="learned", help="the verifier that reranks (learned | learned-cross)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    data = load(f"squad:{a.cmrc}")
    data, corpus = qa_as_retrieval(data, a.kb.parent / f"{a.kb.name}-corpus")
    keep = {q for q in data.data.queries if split_of("cmrc:" + q.rsplit("_QUERY", 1)[0]) == a.split}
    rs = data.data
    data = replace(data, data=replace(rs, queries={q: t for q, t in rs.queries.items() if q in keep},
                                      qrels={q: r for q, r in rs.qrels.items() if q in keep}))
    kb = KnowledgeBase.open(Settings.load(a.kb, llm="none"), create=True)
    try:
        result = run_retrieval(data, kb, corpus, rerank=True, judge=create_verifier(a.verifier))
    finally:
        kb.close()
    result["split"], result["verifier"] = a.split, a.verifier
    emit(result, a.out)


if __name__ == "__main__":
    main()
