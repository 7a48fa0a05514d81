"""The report folder of an evaluation run: ``report.md`` and the same as ``report.html``, with the metrics
and plots (PNG, matplotlib Agg).

For ``rag`` and ``doctor``: accuracy against the noise ratio for each arm, the latency CDF of each arm, the
symptoms the doctor found per setting (for ``doctor``: the fault × symptom confusion matrix) and per layer.
Each item's row (question, expected, answers, verdicts, trace id, knowledge base) is in ``items.jsonl`` next
to it, so a bad item opens with ``ragclinic trace show ID --kb KB``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ragclinic.doctor.symptoms import DETECTORS
from ragclinic.trace.layers import LAYERS


def layer_of(name: str, row: dict[str, Any]) -> str:
    """The layer a symptom points at: as the row recorded it, else as its detector declares."""
    if name in row.get("symptom_layers", {}):
        return row["symptom_layers"][name]
    return DETECTORS.create(name).layer if name in DETECTORS.names() else "unknown"


def _plt():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib  # on use: matplotlib (heavy), only when a report is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use: matplotlib (heavy), only when a report is drawn

    return plt


def write_rag_report(folder: Path, result: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    arms = [a for a in ("naive", "baseline", "active", "doctor") if any(r.get(a) for r in rows)]
    images = _plots(folder, rows, arms, "faults" in result)
    md = [f"# {result['task']} · {result.get('dataset', '')}", "", f"{result['n']} items, mode {result.get('mode')}.", ""]
    if c := result.get("corpus"):  # eval rag --corpus
        md += [f"Asked against the folder `{c['folder']}`: knowledge base `{c['kb']}` (version {c['kb_version']}, "
               f"{c['chunks']} chunks).", ""]
    metrics = result["metrics"]
    md += ["| metric | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for k in dict.fromkeys(k for m in metrics.values() for k in m):
        md.append(f"| {k} | " + " | ".join(_fmt(m.get(k)) for m in metrics.values()) + " |")
    if result.get("delta"):
        md += _delta_table("delta (doctor − baseline)", result["delta"])
    if result.get("delta_active"):
        md += _delta_table("delta (active retrieval − baseline)", result["delta_active"])
    for arm, delta in result.get("delta_vs_naive", {}).items():
        md += _delta_table(f"delta ({arm} − naive peer)", delta)
    if "faults" in result:
        md += _fault_tables(result["faults"])
    if result.get("dominance"):
        md += dominance_section(result["dominance"])
    md += _examples_section(metrics)
    diagnosis = folder / "diagnosis.json"
    if diagnosis.is_file():  # written by `ragclinic diagnose --from-eval FOLDER`
        found = json.loads(diagnosis.read_text(encoding="utf-8"))
        md += _diagnosis_section(found)
        images.append(_fault_bar(folder, found))
    md += [""] + [f"![{p.stem}]({p.name})" for p in images]
    worst = [r for r in rows if r.get(arms[-1]) and not r["expect_refusal"] and not r[arms[-1]]["correct"]][:10]
    if worst:
        md += ["", "## Items answered wrong (first 10)", "", "Open one with `ragclinic trace show TRACE --kb KB`.", "",
               "| setting | question | answer | trace | kb |", "|---|---|---|---|---|"]
        md += [f"| {r['setting']} | {_cell(r['question'][:60])} | {_cell(r[arms[-1]]['answer'][:80])} | "
               f"`{r[arms[-1]]['trace_id']}` | `{r.get('kb', '')}` |" for r in worst]
    path = folder / "report.md"
    path.write_text("\n".join(md) + "\n", encoding="utf-8")
    write_html(path)
    return path


_EXAMPLES = {"answer_form_violations": ("Answers that break the answer form", "what broke it"),
             "constraint_contradictions": ("Swapped constraints answered with the original value", "swapped")}


def _examples_section(metrics: dict[str, dict[str, Any]]) -> list[str]:
    """The examples of the count metrics (answer form, constraint contradictions), per arm."""
    md: list[str] = []
    for name, (title, why) in _EXAMPLES.items():
        shown = [(arm, ex) for arm, m in metrics.items() if isinstance(m.get(name), dict)
                 for ex in m[name]["examples"]]
        if not shown:
            continue
        md += ["", f"## {title} (`{name}`, the first few per arm)", "",
               f"| arm | case | answer | {why} |", "|---|---|---|---|"]
        md += [f"| {arm} | `{_cell(ex['key'])}` | {_cell(ex['answer'][:120])} | "
               f"{_cell('; '.join(ex['violations']) if 'violations' in ex else ex['swap'])} |" for arm, ex in shown]
    return md


def dominance_section(dom: dict[str, Any]) -> list[str]:
    """Per arm, the questions the naive peer got right and the arm did not (losses) and the reverse (wins), then
    every loss: what was asked and expected, both answers, the route, the model's answer field, the passage it
    cited, the gate's best score, and the layer the debugger blames."""
    md = ["", "## Against the simple peer (naive: the same passages in one prompt, no checks)", "",
          "| arm | questions | peer right | arm right | lost (peer right, arm wrong) | won | losses by kind |",
          "|---|---|---|---|---|---|---|"]
    md += [f"| {arm} | {d['of']} | {d['peer_ok']} | {d['arm_ok']} | {d['losses']} | {d['wins']} | "
           f"{_cell(', '.join(f'{k} {v}' for k, v in d['losses_by_kind'].items()))} |" for arm, d in dom.items()]
    for arm, d in dom.items():
        if not d["loss_cases"]:
            continue
        md += ["", f"### {arm}: the questions lost to the peer", "",
               "| case | question | expected | peer | arm | kind | route | model wrote | cited | top support | blamed |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for c in d["loss_cases"]:
            st, blame = c.get("state") or {}, c.get("blame") or {}
            route = "/".join(x for x in (st.get("route"), st.get("question_type"), st.get("path")) if x)
            wrote = st.get("reply_answer") or "; ".join(st.get("reply_points") or []) or st.get("model_reply", "")
            cited = " ".join(f"[{x['n']}] {x['text'][:60]}" for x in st.get("cited", [])[:2])
            top = st.get("supports", [{}])[0] if st.get("supports") else {}
            expected = "refusal" if c["expect_refusal"] else " / ".join(a[0] for a in c["expected"] if a)
            md.append(f"| `{_cell(c['key'])}` | {_cell(c['question'][:80])} | {_cell(expected[:40])} | "
                      f"{_cell(c['peer_answer'][:80])} | {_cell(c['answer'][:80])} | {c['kind']} | {_cell(route)} | "
                      f"{_cell(str(wrote)[:80])} | {_cell(cited[:120])} | "
                      f"{_fmt(top.get('support')) if top else '—'} | "
                      f"{_cell(blame.get('layer', 'not diagnosed'))}: {_cell(str(blame.get('summary', ''))[:100])} |")
    return md


def _delta_table(title: str, delta: dict[str, Any]) -> list[str]:
    md = ["", f"| {title} | value | 95% CI |", "|---|---|---|"]
    for k, d in delta.items():
        md.append(f"| {k} | {_fmt(d['delta'])} | {_fmt(d['ci95'][0])} … {_fmt(d['ci95'][1])} |"
                  if isinstance(d, dict) else f"| {k} | {_fmt(d)} | |")
    return md


def _diagnosis_section(d: dict[str, Any]) -> list[str]:
    md = ["", f"## Where the failed items broke ({d['failed']} items, `ragclinic diagnose --from-eval`)", "",
          "| layer | failed items | example | fix |", "|---|---|---|---|"]
    for layer, n in d["faults"].items():
        ex = d["examples"][layer][0]
        md.append(f"| {layer} | {n} | {_cell(ex['question'][:50])} | {_cell(str(ex.get('suggestion', ''))[:90])} |")
    return md


def _fault_bar(folder: Path, d: dict[str, Any]) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(list(d["faults"]), list(d["faults"].values()), color="firebrick")
    ax.set(title="failed items per faulty layer (debugger)", ylabel="items")
    return _save(fig, folder / "faults_by_layer.png", plt)


def _fault_tables(faults: dict[str, Any]) -> list[str]:
    md: list[str] = []
    for title, table in (("Per fault", faults["per_fault"]),
                         ("Per symptom (against the faults that should raise it)", faults["per_symptom"])):
        cols = list(dict.fromkeys(k for r in table.values() for k in r))
        md += ["", f"## {title}", "", "| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        md += [f"| {name} | " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for name, r in table.items()]
    return md


def write_html(md_path: Path) -> Path:
    """report.md rendered to a standalone report.html (the plots load from the same folder)."""
    from markdown_it import MarkdownIt  # on use: only when a report is written

    body = MarkdownIt("commonmark").enable("table").render(md_path.read_text(encoding="utf-8"))
    html = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>ragclinic evaluation</title><style>"
            "body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
            "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .5em;"
            "text-align:right}td:first-child{text-align:left}img{max-width:100%}code{font-size:.9em}"
            "</style></head><body>" + body + "</body></html>\n")
    out = md_path.with_suffix(".html")
    out.write_text(html, encoding="utf-8")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def _plots(folder: Path, rows: list[dict[str, Any]], arms: list[str], faults: bool = False) -> list[Path]:
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
        images.append(_symptom_grid(folder, rows, symptoms, plt, faults))
        layers = Counter(layer_of(n, r) for r in rows for n in r.get("symptoms", []))
        fig, ax = plt.subplots(figsize=(5, 3))
        order = [x for x in (*LAYERS, "unknown") if layers[x]]  # the layer table's order (trace/layers.py)
        ax.bar(order, [layers[x] for x in order])
        ax.set(title="symptoms per layer", ylabel="count")
        images.append(_save(fig, folder / "symptoms_by_layer.png", plt))
    return images


def _symptom_grid(folder: Path, rows: list[dict[str, Any]], symptoms: Counter, plt, faults: bool) -> Path:
    """Symptoms found per setting; for fault injection, the fault × symptom confusion matrix (every fault a
    column, the clean control included)."""
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    names = sorted({k[1] for k in symptoms})
    fig, ax = plt.subplots(figsize=(1.6 + 0.8 * len(settings), 1.2 + 0.35 * len(names)))
    grid = [[symptoms[(s, n)] for s in settings] for n in names]
    ax.imshow(grid, cmap="Blues", aspect="auto")
    ax.set_xticks(range(len(settings)), settings, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=8)
    ax.set_title("fault × symptom confusion matrix" if faults else "symptoms found per setting")
    ax.set_xlabel("injected fault" if faults else "setting")
    return _save(fig, folder / ("symptom_confusion.png" if faults else "symptoms_by_setting.png"), plt)


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


def count_text(v: dict[str, Any]) -> str:
    """A count metric (answer_form_violations, constraint_contradictions) in a table cell: "3 / 40 (0.0750)"."""
    return f"{v['count']} / {v['of']}" + (f" ({v['rate']:.4f})" if v.get("rate") is not None else "")


def _fmt(v) -> str:
    if isinstance(v, dict) and "count" in v:
        return count_text(v)
    return f"{v:.4f}" if isinstance(v, float) else "—" if v is None else str(v)
