"""The answerability probe on sets it was neither trained nor tuned on, beside the model's own P(not_in_documents).

Sets (each prompt built by the generate layer's own ``build_messages``, the short-answer schema, field decoding):

- ``rgb``: RGB zh_fact (evaluation only): answerable = one positive passage among three negatives (its position
  drawn), unanswerable = four negatives (fewer where an item has fewer: k negatives vs one positive and k - 1);
  passages cut at 400 characters;
- ``halueval``: the English HaluEval-built set (bench/make_english_rgb.py; HaluEval's test split, which the probe's
  training never fits on), built the same way;
- ``traces``: the real answer prompts of ``eval rag`` runs over the real manuals (bench/realdocs), read from their
  recorded traces: answerable = a question the documents answer, unanswerable = one they do not.

For each prompt: the shipped probe's p(unanswerable), every layer's readings (the training report's
``-layers.npz``), and the model's own probability of ``not`` at the status position (one more evaluation of
the prompt, through ``next_token_probs``). Prints AUROC per set, writes rows and a per-layer plot.

    PYTHONPATH=training .venv/bin/python bench/probe_eval.py --set rgb --limit 50 --out bench/out/probe/eval-rgb
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from ragclinic.models.llm import Message  # noqa: E402
from ragclinic.pipeline.generate.structured import SCHEMAS  # noqa: E402
from ragclinic.verify.probe import AnswerabilityProbe, weights_path, SHIPPED  # noqa: E402
from ragclinic_training.probe_data import load_model, messages_for  # noqa: E402
from ragclinic_training.probe_train import auroc  # noqa: E402

LAYERS = (4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 27)


def rgb_like(path: Path, limit: int, seed: int, question="query", positive="positive", negative="negative"):
    rng = random.Random(seed)
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    for it in items:
        neg = [p[:400] for p in it[negative][:4]]
        if len(neg) < 2 or not it[positive]:
            continue
        pos = neg[:-1]
        pos.insert(rng.randrange(len(neg)), it[positive][0][:400])
        yield {"id": str(it["id"]), "label": 1, "messages": messages_for(it[question], pos)}
        yield {"id": str(it["id"]), "label": 0, "messages": messages_for(it[question], neg)}


def from_traces(run: Path, kb: Path):
    """The generate layer's first recorded answer prompt of each item of an ``eval rag`` run (ragclinic's plain arm):
    the prompt the status was decided on, as the model read it."""
    import sqlite3

    db = sqlite3.connect(f"file:{kb / 'kb.sqlite3'}?mode=ro", uri=True)
    for line in (run / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        arm = it.get("baseline") or {}
        row = db.execute("SELECT data FROM traces WHERE id = ?", [arm.get("trace_id") or ""]).fetchone()
        if row is None:
            continue
        calls = [c for c in json.loads(row[0])["model_calls"] if c["layer"] == "generate" and c["kind"] == "chat"
                 and "status" in json.dumps((c.get("params") or {}).get("schema") or {})]
        if calls:
            msgs = [Message(m["role"], m["content"]) for m in calls[0]["messages"]]
            yield {"id": it["id"], "label": 0 if it["expect_refusal"] else 1, "messages": msgs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("rgb", "halueval", "traces"), required=True)
    ap.add_argument("--path", type=Path, help="the set's file (rgb, halueval) or an eval run folder (traces)")
    ap.add_argument("--kb", type=Path, help="traces: the knowledge base the run asked")
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--layers-npz", type=Path, default=Path("bench/out/probe/train-layers.npz"))
    ap.add_argument("--probe", type=Path, help="a probe file to score with instead of the shipped one (an experiment)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    default = {"rgb": Path("../shared/data/rgb/zh_fact.json"),
               "halueval": Path("bench/out/halueval-test-rgb-heldout.jsonl")}
    path = a.path or default.get(a.set)
    prompts = list(from_traces(path, a.kb) if a.set == "traces" else rgb_like(path, a.limit, a.seed))
    cache = Path(os.environ.get("RAGCLINIC_CACHE_DIR", Path.home() / ".cache/ragclinic"))
    model = load_model("local", cache)
    probe = (AnswerabilityProbe(a.probe, None, model.model_id) if a.probe else
             AnswerabilityProbe(weights_path("local"), SHIPPED["local"][1] or None, model.model_id))
    per_layer = np.load(a.layers_npz) if a.layers_npz.exists() else None
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, pr in enumerate(prompts):
        done = model.chat(pr["messages"], max_tokens=1, schema=SCHEMAS["short"], hidden_layers=LAYERS)
        p_not = model.next_token_probs(pr["messages"] + [Message("assistant", '{"status": "')],
                                       ["answered", "not", "conflict"])["not"]
        row = {"id": pr["id"], "label": pr["label"], "probe": probe.score(done.hidden).p_unanswerable,
               "p_not": round(p_not, 4), "status": done.text.split('"status": "', 1)[-1],
               "prompt_tokens": done.prompt_tokens}
        if per_layer is not None:
            row["layers"] = {f"{m}.{n}": round(float(done.hidden[n] @ per_layer[f"{m}.{n}.w"] + per_layer[f"{m}.{n}.b"]), 4)
                             for m in ("meandiff", "logistic") for n in LAYERS}
        rows.append(row)
        print(i, row["label"], row["probe"], row["p_not"], row["status"], flush=True, file=sys.stderr)
    (a.out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    y = np.array([1 - r["label"] for r in rows])
    summary = {"set": a.set, "prompts": len(rows), "unanswerable": int(y.sum()),
               "probe_auroc": round(auroc(np.array([r["probe"] for r in rows]), y), 4),
               "model_p_not_auroc": round(auroc(np.array([r["p_not"] for r in rows]), y), 4),
               "model_status_refusal": round(float(np.mean([r["status"].startswith("not") for r, t in zip(rows, y) if t])), 4),
               "model_status_over_refusal": round(float(np.mean([r["status"].startswith("not") for r, t in zip(rows, y) if not t])), 4),
               "probe_refusal_at_0.5": round(float(np.mean([r["probe"] >= 0.5 for r, t in zip(rows, y) if t])), 4),
               "probe_over_refusal_at_0.5": round(float(np.mean([r["probe"] >= 0.5 for r, t in zip(rows, y) if not t])), 4)}
    if per_layer is not None:
        summary["per_layer_auroc"] = {k: round(auroc(np.array([r["layers"][k] for r in rows]), y), 4)
                                      for k in rows[0]["layers"]}
        _plot(summary, a.out / "per-layer.png")
    (a.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "per_layer_auroc"}, indent=1))


def _plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for m, style in (("meandiff", "-o"), ("logistic", "-s")):
        ax.plot(LAYERS, [summary["per_layer_auroc"][f"{m}.{n}"] for n in LAYERS], style, label=m)
    ax.axhline(summary["model_p_not_auroc"], color="grey", ls="--", label="model's own P(not_in_documents)")
    ax.set_xlabel("layer (output of)")
    ax.set_ylabel("AUROC")
    ax.set_title(f"Answerability probe per layer: {summary['set']} ({summary['prompts']} prompts)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
