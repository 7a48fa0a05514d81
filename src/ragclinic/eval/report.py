"""The report folder of an evaluation run: ``report.md`` with the metrics and plots (PNG, matplotlib Agg).

For ``rag``: accuracy against the noise ratio for each arm, the latency CDF of each arm, and the symptoms
the doctor found per setting and per layer. Each item's row (question, expected, answers, verdicts, trace
id) is in ``items.jsonl`` next to it, so a bad item opens with ``ragclinic trace show``.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

LAYER_OF = {"low_relevance": "retrieve", "missing_aspect": "retrieve", "ambiguous": "retrieve", "compound": "retrieve",
            "term_mismatch": "retrieve", "noisy_context": "scope", "homogeneous_context": "scope",
            "conflicting_evidence": "scope", "injected_instruction": "scope", "false_premise": "gate"}


def _plt():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_rag_report(folder: Path, result: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    arms = [a for a in ("baseline", "doctor") if any(r.get(a) for r in rows)]
    images = _plots(folder, rows, arms)
    md = [f"# {result['task']} · {result.get('dataset', '')}", "", f"{result['n']} items, mode {result.get('mode')}.", ""]
    metrics = result["metrics"]
    md += ["| metric | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for k in dict.fromkeys(k for m in metrics.values() for k in m):
        md.append(f"| {k} | " + " | ".join(_fmt(m.get(k)) for m in metrics.values()) + " |")
    if result.get("delta"):
        md += ["", "| delta (doctor − baseline) | value | 95% CI |", "|---|---|---|"]
        for k, d in result["delta"].items():
            md.append(f"| {k} | {_fmt(d['delta'])} | {_fmt(d['ci95'][0])} … {_fmt(d['ci95'][1])} |"
                      if isinstance(d, dict) else f"| {k} | {_fmt(d)} | |")
    md += [""] + [f"![{p.stem}]({p.name})" for p in images]
    worst = [r for r in rows if r.get(arms[-1]) and not r["expect_refusal"] and not r[arms[-1]]["correct"]][:10]
    if worst:
        md += ["", "## Items answered wrong (first 10)", "", "| setting | question | answer | trace |", "|---|---|---|---|"]
        md += [f"| {r['setting']} | {r['question'][:60]} | {r[arms[-1]]['answer'][:80].replace('|', '/')} | "
               f"`{r[arms[-1]]['trace_id']}` |" for r in worst]
    path = folder / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    return path


def _plots(folder: Path, rows: list[dict[str, Any]], arms: list[str]) -> list[Path]:
    """Accuracy vs noise, latency CDF, symptoms per setting and per layer (those the rows allow)."""
    plt = _plt()
    images = []
    ratios = sorted({float(r["setting"]) for r in rows if _is_ratio(r["setting"])})
    if ratios:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for arm in arms:
            acc = [_mean([r[arm]["correct"] for r in rows if _is_ratio(r["setting"]) and float(r["setting"]) == x
                          and r.get(arm)]) for x in ratios]
            ax.plot(ratios, acc, marker="o", label=arm)
        ax.set(xlabel="noise ratio", ylabel="accuracy", ylim=(0, 1.05), title="accuracy vs noise")
        ax.legend()
        images.append(_save(fig, folder / "accuracy_vs_noise.png", plt))
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for arm in arms:
        ms = sorted(r[arm]["ms"] / 1000 for r in rows if r.get(arm))
        ax.step(ms, [(i + 1) / len(ms) for i in range(len(ms))], where="post", label=arm)
    ax.set(xlabel="seconds per item", ylabel="share of items", title="latency CDF")
    ax.legend()
    images.append(_save(fig, folder / "latency_cdf.png", plt))
    symptoms = Counter((r["setting"], s) for r in rows for s in r.get("symptoms", []))
    if symptoms:
        settings = sorted({k[0] for k in symptoms})
        names = sorted({k[1] for k in symptoms})
        fig, ax = plt.subplots(figsize=(1.2 + 0.7 * len(settings), 1 + 0.35 * len(names)))
        grid = [[symptoms[(s, n)] for s in settings] for n in names]
        ax.imshow(grid, cmap="Blues", aspect="auto")
        ax.set_xticks(range(len(settings)), settings, rotation=45, ha="right")
        ax.set_yticks(range(len(names)), names)
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                ax.text(j, i, str(v), ha="center", va="center", fontsize=8)
        ax.set_title("symptoms found per setting")
        images.append(_save(fig, folder / "symptoms_by_setting.png", plt))
        layers = Counter(LAYER_OF.get(n, "generate") for (_, n), c in symptoms.items() for _ in range(c))
        fig, ax = plt.subplots(figsize=(5, 3))
        order = [x for x in ("retrieve", "scope", "gate", "generate") if layers[x]]
        ax.bar(order, [layers[x] for x in order])
        ax.set(title="symptoms per layer", ylabel="count")
        images.append(_save(fig, folder / "symptoms_by_layer.png", plt))
    return images


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _is_ratio(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else "—" if v is None else str(v)
