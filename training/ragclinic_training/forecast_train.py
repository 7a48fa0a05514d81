"""Fit the shipped failure forecast (doctor/forecast.py) from forecast_data.py's rows (licensed questions against
one knowledge base per set): the heads by doctor/forecast_fit.py, the report with a plot, the file's sha256 for
forecast.SHIPPED_SHA256.

    PYTHONPATH=training python -m ragclinic_training.forecast_train --rows bench/out/forecast/rows.jsonl \\
        --out src/ragclinic/doctor/forecast-v1.json --report bench/out/forecast/report.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from ragclinic.doctor.forecast import FEATURES, PORTABLE
from ragclinic.doctor.forecast_fit import fit


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the forecast file to write")
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--features", choices=("portable", "all"), default="portable",
                    help="portable (the default, shipped): the evidence as the verifier and gate saw it; all: also "
                         "the retrievers' raw scores and the question's surface")
    a = ap.parse_args(argv)
    rows = [json.loads(x) for x in a.rows.read_text(encoding="utf-8").splitlines() if x.strip()]
    data, report = fit(rows, used=PORTABLE if a.features == "portable" else FEATURES)
    data["trained_on"] = "CMRC2018 trial + HaluEval QA (licensed; make train-forecast)"
    raw = json.dumps(data, sort_keys=True).encode()
    a.out.write_bytes(raw)
    report["sha256"] = hashlib.sha256(raw).hexdigest()
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    _plot(report, a.report.with_suffix(".png"))


def _plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k, v in report["kinds"].items() if v.get("fitted")]
    sources = sorted({s for k in kinds for s in report["kinds"][k]["by_source"]})
    fig, ax = plt.subplots(figsize=(6, 3.2))
    width = 0.8 / (len(sources) + 1)
    for i, src in enumerate(["all", *sources]):
        vals = [report["kinds"][k]["test_auroc"] if src == "all" else report["kinds"][k]["by_source"].get(src, {}).get(
            "auroc", float("nan")) for k in kinds]
        ax.bar(np.arange(len(kinds)) + i * width, vals, width, label=src)
    ax.axhline(0.8, color="grey", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(kinds)) + width * len(sources) / 2, [k.replace("_", " ") for k in kinds])
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("test AUROC")
    ax.set_title("failure forecast, held-out questions")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
