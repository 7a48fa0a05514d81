"""The paper's way of choosing the direction (Lavi, Milo & Geva 2026): by activation addition. For each layer, the
mean-difference direction (unanswerable minus answerable, train split of probe_data's states) is added to that
layer's output with llama.cpp's control vector (``llama_set_adapter_cvec``) while answerable val prompts are
evaluated; the layer whose addition most raises the model's own P(not_in_documents) at the status token is the
paper's choice. Prints, per layer, the mean P(not) with and without the addition, and that layer's direction as a
probe (val AUROC of the projection) beside the probe train chose.

    PYTHONPATH=training .venv/bin/python bench/probe_steer.py --n 16 --scale 1.0
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from ragclinic.config import Settings  # noqa: E402
from ragclinic.models.llama import LlamaModel  # noqa: E402
from ragclinic.models.llm import Message  # noqa: E402
from ragclinic.models.weights import WEIGHTS  # noqa: E402
from ragclinic_training.probe_data import messages_for, planned  # noqa: E402
from ragclinic_training.probe_train import auroc, load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--states", type=Path, default=Path("bench/out/probe/states"))
    ap.add_argument("--cmrc", type=Path, default=Path("../shared/data/cmrc2018/cmrc2018_trial.json"))
    ap.add_argument("--halueval", type=Path, default=Path("../shared/data/halueval/qa_one-turn_data.json"))
    ap.add_argument("--layers", default="6,10,14,18,22,26")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--scale", type=float, default=1.0, help="the added vector: scale × (mean unanswerable − mean answerable)")
    ap.add_argument("--out", type=Path, default=Path("bench/out/probe/steer.json"))
    a = ap.parse_args()
    import llama_cpp  # on use: loads llama.cpp

    rows, x = load(a.states)
    have = rows[0]["layers"]
    y = np.array([1 - r["label"] for r in rows])
    split = np.array([r["split"] for r in rows])
    tr, va = split == "train", split == "val"
    texts = {k: t for k, _, _, t in planned(a.cmrc, a.halueval, 300, 36)}
    chosen = [i for i, r in enumerate(rows) if r["split"] == "val" and r["label"] == 1][:a.n]
    s = Settings.load(Path("/tmp/probe-steer-kb"), llm="local", llm_isolation="inline", llm_prefix_cache=False)
    m = LlamaModel(WEIGHTS["local"], s)
    ctx = m._llm._ctx.ctx
    n_embd, n_layer = m._llm.n_embd(), llama_cpp.llama_model_n_layer(m._llm._model.model)

    def p_not(i: int) -> float:
        m._memo.clear()
        msgs = messages_for(rows[i]["question"], texts[rows[i]["key"]]) + [Message("assistant", '{"status": "')]
        return m.next_token_probs(msgs, ["answered", "not", "conflict"])["not"]

    base = [p_not(i) for i in chosen]
    report = {"answerable_val_prompts": len(chosen), "scale": a.scale, "p_not_without": round(float(np.mean(base)), 4),
              "layers": {}}
    for layer in (int(v) for v in a.layers.split(",")):
        j = have.index(layer)
        diff = x[tr & (y == 1), j].mean(0) - x[tr & (y == 0), j].mean(0)
        buf = np.zeros((n_layer, n_embd), dtype=np.float32)
        buf[layer - 1] = a.scale * diff  # the buffer starts at layer 1
        ptr = buf.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        if llama_cpp.llama_set_adapter_cvec(ctx, ptr, buf.size, n_embd, layer, layer) != 0:
            raise SystemExit(f"llama.cpp refused the control vector at layer {layer}")
        steered = [p_not(i) for i in chosen]
        llama_cpp.llama_set_adapter_cvec(ctx, None, 0, n_embd, 0, 0)
        d = diff / np.linalg.norm(diff)
        report["layers"][layer] = {"p_not_with": round(float(np.mean(steered)), 4),
                                   "rise": round(float(np.mean(steered) - np.mean(base)), 4),
                                   "direction_val_auroc": round(auroc(x[va, j] @ d, y[va]), 4),
                                   "norm_of_difference": round(float(np.linalg.norm(diff)), 2)}
        print(layer, report["layers"][layer], flush=True)
    best = max(report["layers"], key=lambda k: report["layers"][k]["rise"])
    report["paper_choice"] = {"layer": best, **report["layers"][best]}
    a.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["paper_choice"], indent=1))


if __name__ == "__main__":
    main()
