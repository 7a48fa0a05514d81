"""`ragclinic eval TASK --dataset FORMAT:PATH`: measure ragclinic on a dataset — retrieval, detection, rag
(end to end) and doctor (fault injection) — with a table, a JSON object and a report folder."""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ragclinic.cli.base import app, err, fail, handle_errors, out, print_json
from ragclinic.cli.options import JsonOption
from ragclinic.cli.eval_table import print_table
from ragclinic.cli.progress import progress_bar

TASKS = ("retrieval", "detection", "rag", "doctor")
FAULT_NAMES = ("clean", "noise", "missing", "counterfactual", "injected", "ambiguous")  # eval.tasks.faults.FAULTS
KINDS = {"retrieval": ("retrieval", "qa"), "detection": ("detection",), "rag": ("qa",), "doctor": ("qa",)}


@app.command("eval")
@handle_errors
def eval_cmd(
    task: str = typer.Argument(..., help="retrieval | detection | rag | doctor", show_default=False),
    dataset: str = typer.Option(..., "--dataset", metavar="FORMAT:PATH",
                                help="beir:FOLDER | rgb:FILE | halueval:FILE | squad:FILE | jsonl:FILE (read by path) | "
                                     "cases:KB (the failed-answer library of a knowledge base; cases: reads --kb's, "
                                     "and the cases are asked against it)."),
    kb: Optional[Path] = typer.Option(None, "--kb", show_default=False,
                                      help="Knowledge base for the corpus \\[default: one per corpus under the cache folder]."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", metavar="FOLDER", show_default=False,
                                          help="rag: ingest this folder of documents once (into --kb, default one "
                                               "per folder and content under the cache folder) and ask every item "
                                               "against it; the items must bring no documents."),
    split: Optional[str] = typer.Option(None, "--split", metavar="dev|heldout", show_default=False,
                                        help="Only the items whose \"split\" is this (jsonl, constraint-swap sets)."),
    limit: int = typer.Option(0, "--limit", min=0, help="Evaluate the first N items (0 = all)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed for any sampling."),
    llm: Optional[str] = typer.Option(None, "--llm", show_default=False,
                                      help="Language model: rag's generator; detection's yes/no judge; the --rerank "
                                           "judge when the judge setting is llm (RAGCLINIC_JUDGE=llm; the default, "
                                           "the learned verifier, needs none): local | local-small | none."),
    out_dir: Optional[Path] = typer.Option(None, "--out", show_default=False,
                                           help="Write results.json and items.jsonl here (rag: also the checkpoint a "
                                                "killed run resumes from)."),
    no_doctor: bool = typer.Option(False, "--no-doctor", help="rag: the plain pipeline only (the baseline)."),
    ab: bool = typer.Option(False, "--ab", help="rag: baseline and doctor on the same items, with deltas (doctor always runs both)."),
    arms: Optional[str] = typer.Option(None, "--arms", metavar="ARMS", show_default=False,
                                       help="rag: the arms to run on the same items, comma-separated: naive (every "
                                            "passage in one prompt of the same model, no checks), plain (the "
                                            "pipeline; 'baseline' in the output), active (with active retrieval: "
                                            "the setting's threshold, else 0.4), doctor. E.g. naive,plain,doctor."),
    noise: str = typer.Option("0,0.2,0.4,0.6,0.8,neg,counterfactual", "--noise",
                              help="rag on RGB: noise ratios, 'neg' (negative passages only) and 'counterfactual'."),
    faults: str = typer.Option(",".join(FAULT_NAMES), "--faults",
                               help="doctor: the faults to inject (comma-separated; 'clean' is the control)."),
    rerank: bool = typer.Option(False, "--rerank", help="retrieval: also the hybrid top 20 reranked by the judge "
                                "(the `judge` setting: the learned verifier by default)."),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="ADDRESS|auto", show_default=False,
                                      help="Share the items out among Ray workers (auto: a local runtime), each "
                                           "with its own model; metrics as a local run's. Needs the ray extra: "
                                           "pip install -e '.[ray]'. Not for detection."),
    ray_workers: int = typer.Option(0, "--ray-workers", min=0, help="Ray workers (0: one per CPU of the cluster)."),
    blame: int = typer.Option(20, "--blame-losses", min=0, metavar="N",
                              help="rag with the naive arm and --out: run the debugger on up to N questions per "
                                   "arm that the peer answers and the arm does not (0: none); the layer it blames "
                                   "goes into dominance.json and the report."),
    json_out: bool = JsonOption,
) -> None:
    """Evaluate on a dataset and print the metrics (a table, or one JSON object with --json).

    retrieval: nDCG@10, Recall@5/10/100, MRR@10 per retriever over a BEIR corpus, or question → its own
    passage for a SQuAD/CMRC2018 set. detection: the doctor's unsupported-claim check as a classifier over
    (context, answer) pairs (precision, recall, F1, balanced accuracy, calibration error). rag: end to end,
    each item against its own passages (RGB: at each noise ratio, negative-only and counterfactual) or a
    folder of documents (--corpus; gold passages' ranks per arm), doctor by default, --no-doctor, or --ab for both with deltas and bootstrap 95% intervals. doctor: faults
    injected on purpose (--faults), baseline and doctor side by side: per-symptom precision/recall, the
    fault × symptom confusion matrix, repair success, regressions, overhead. --out writes results.json,
    items.jsonl (the checkpoint a killed run resumes from), report.md/.html with plots, and each item's
    knowledge base. Exit code 0 on success, 2 for a bad dataset or usage.
    """
    kb = _cases_kb(dataset, kb)
    data, chosen = _checked(task, dataset, no_doctor, ab, arms, bool(ray), rerank, kb)
    data = _scoped(data, task, dataset, corpus, split)
    with progress_bar(json_out) as tick, _ray(ray, ray_workers, llm) as spread:
        if task == "retrieval":
            result = _retrieval(data, kb, limit, llm, tick, rerank, spread)
        elif task == "rag":
            mode = "arms" if chosen else "baseline" if no_doctor else "ab" if ab else "doctor"
            result = _rag(data, kb, limit, seed, llm, noise, mode, out_dir, tick, chosen, spread, corpus, split,
                          blame)
        elif task == "doctor":
            result = _rag(data, kb, limit, seed, llm, faults, "faults", out_dir, tick, ray=spread, split=split)
        else:
            result = _detection(data, limit, llm, tick)
    if ray:
        result["ray"] = {"address": ray, "workers": spread.workers}
    result["dataset"], result["skipped_records"] = dataset, len(data.problems)
    items = result.pop("items", None)
    if out_dir:
        _write_out(out_dir, result, items)
    if json_out:
        print_json(result)
        return
    print_table(result)


@contextmanager
def _ray(address: Optional[str], workers: int, llm: Optional[str]):
    """A RayEval over the cluster at ``address`` for the block (None: the local path)."""
    if not address:
        yield None
        return
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.eval.ray_eval import RayEval  # on use: when the command runs (fast --help)
    from ragclinic.scale.runtime import connected  # on use: when the command runs (fast --help)

    with connected(address, workers if address == "auto" else 0):
        yield RayEval(workers, Settings.load(None, llm=llm).llm)


def _cases_kb(dataset: str, kb: Optional[Path]) -> Optional[Path]:
    """The knowledge base a ``cases:`` set is asked against: --kb, else the library's own, else the default one."""
    fmt, _, path = dataset.partition(":")
    if fmt != "cases" or kb is not None:
        return kb
    from ragclinic.config import Settings  # on use: pydantic settings

    return Path(path) if path else Settings.load(None).kb


def _checked(task: str, dataset: str, no_doctor: bool, ab: bool, arms: Optional[str], ray: bool = False,
             rerank: bool = False, kb: Optional[Path] = None):
    """The loaded dataset and the --arms (as row keys) after every usage check; the skipped records listed."""
    from ragclinic.eval.datasets import load  # on use: when the command runs (fast --help)

    if task not in TASKS:
        raise fail(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")
    if ray and (task == "detection" or (task == "retrieval" and rerank)):
        raise fail(f"--ray runs retrieval (without --rerank), rag and doctor; {task}{' --rerank' if rerank else ''} "
                   "runs locally: drop --ray")
    data = load(dataset, kb)
    if data.kind not in KINDS[task]:
        raise fail(f"task {task} needs a {' or '.join(KINDS[task])} dataset; {dataset!r} is a {data.kind} dataset")
    for p in data.problems[:20]:
        err.print(f"[yellow]skipped:[/] {escape(str(p))}")
    if task == "rag" and no_doctor and ab:
        raise fail("--no-doctor and --ab exclude each other")
    chosen = _arms(arms, task, no_doctor, ab)
    if task == "doctor" and no_doctor:
        raise fail("the doctor task compares baseline and doctor: --no-doctor does not apply")
    return data, chosen


def _scoped(data, task: str, dataset: str, corpus: Optional[Path], split: Optional[str]):
    """The items of ``--split``; ``--corpus`` checked against the task and the items (which must bring no
    documents of their own: they are asked against the folder)."""
    if split is not None:
        if data.kind != "qa":
            raise fail(f"--split applies to question sets; {dataset!r} is a {data.kind} dataset")
        kept = tuple(it for it in data.data if it.split == split)
        if not kept:
            have = sorted({it.split for it in data.data if it.split})
            raise fail(f"--split {split!r}: no item of {dataset} has it (its items carry "
                       f"{', '.join(map(repr, have)) or 'no split field'})")
        data = replace(data, data=kept)
    if corpus is None:
        return data
    if task != "rag":
        raise fail(f"--corpus applies to the rag task, not {task}")
    own = next((it for it in data.data if it.documents or it.negatives or it.counterfactual), None)
    if own is not None:
        raise fail(f"--corpus {corpus}: item {own.id} of {dataset} brings its own documents; give --corpus with "
                   "a question file whose items have none, or drop --corpus to answer each item from its documents")
    return data


def _write_out(out_dir: Path, result: dict, items: list | None) -> None:
    """results.json, and items.jsonl for tasks that return their rows (rag appends its own as it goes)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    if items is not None:
        (out_dir / "items.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items),
                                             encoding="utf-8")


def _retrieval(data, kb_dir, limit, llm, tick, rerank: bool = False, ray=None):
    from ragclinic import wiring  # on use: the store and the models
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.eval.tasks.retrieval import qa_as_retrieval, run_retrieval  # on use: the evaluation harness

    if data.kind == "qa":  # question → its own passage
        kb_dir = kb_dir or _default_kb(Path(data.source))
        data, corpus = qa_as_retrieval(data, kb_dir.parent / f"{kb_dir.name}-corpus")
    else:
        corpus = Path(data.source) / "corpus.jsonl"
    settings = Settings.load(kb_dir or _default_kb(corpus), llm=llm or "none")
    base = wiring.open_kb(settings, create=True)
    try:
        judge = _judge(settings) if rerank else None
        return run_retrieval(data, base, corpus, limit=limit, progress=tick, rerank=rerank, judge=judge, ray=ray)
    finally:
        base.close()


def _judge(settings):
    """The judge the settings name (the learned verifier by default; ``llm`` loads the language model), or
    None when it is word overlap only."""
    from ragclinic import wiring  # on use: the store and the models
    from ragclinic.pipeline.gate import is_model_judge  # on use: the pipeline

    lm = wiring.language_model(settings, _warn)[0] if settings.llm != "none" and settings.judge == "llm" else None
    judge = wiring.judge(settings, lm)
    return judge if is_model_judge(judge) else None


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}")


def _detection(data, limit, llm, tick):
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.eval.tasks.detection import run_detection  # on use: when the command runs (fast --help)

    # --llm names the judge's model, as before: the language model's yes/no judge (the learned verifier is not
    # consulted by the faithfulness check, see docs/verifier.md); without it, the rules alone
    settings = Settings.load(None, llm=llm or "none")
    if settings.llm != "none":
        settings = settings.model_copy(update={"judge": "llm"})
    return run_detection(data, judge=_judge(settings), limit=limit, progress=tick)


def _arms(arms: Optional[str], task: str, no_doctor: bool, ab: bool) -> tuple[str, ...]:
    """--arms as row keys (plain → baseline), or () when not given."""
    if arms is None:
        return ()
    if task != "rag":
        raise fail("--arms applies to the rag task")
    if no_doctor or ab:
        raise fail("--arms replaces --ab and --no-doctor: give one of them")
    names = [a.strip() for a in arms.split(",") if a.strip()]
    bad = [a for a in names if a not in ("naive", "plain", "active", "doctor")]
    if bad or not names:
        raise fail(f"--arms {arms!r}: expected some of naive, plain, active, doctor (comma-separated)")
    return tuple(dict.fromkeys("baseline" if a == "plain" else a for a in names))


def _rag(data, kb_dir, limit, seed, llm, noise, mode, out_dir, tick, arms: tuple[str, ...] = (), ray=None,
         corpus: Optional[Path] = None, split: Optional[str] = None, blame: int = 0):
    """rag (mode baseline | doctor | ab | arms; ``noise`` = the settings) and doctor (mode faults; ``noise`` =
    the faults): the same runner, checkpoint and report. ``corpus``: the folder ingested into the shared
    knowledge base first."""
    from ragclinic.eval.tasks.faults import FAULTS, fault_cases, fault_metrics  # on use: the harness
    from ragclinic.eval.tasks.rag import CALIBRATED, ab_delta, arm_metrics, cases, run_rag  # on use: the harness

    settings_ = [x.strip() for x in noise.split(",") if x.strip()]
    for x in settings_:
        if mode == "faults" and x not in FAULTS:
            raise fail(f"--faults {x!r}: expected some of {', '.join(FAULTS)} (comma-separated)")
        if mode != "faults" and x not in ("neg", "counterfactual") and not _ratio(x):
            raise fail(f"--noise {x!r}: expected ratios in 0..1, 'neg' or 'counterfactual' (comma-separated)")
    items = list(data.data[:limit] if limit else data.data)
    todo = fault_cases(items, settings_, seed) if mode == "faults" else cases(items, settings_, seed)
    if not todo:
        raise fail(f"no item of {data.source} can carry {noise!r} (faults need answering passages; noise and "
                   "missing need negative ones, counterfactual wrong ones)")
    from ragclinic import wiring  # on use: the store and the models
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.eval.corpus import corpus_digest  # on use: when the command runs (fast --help)

    settings = Settings.load(None, llm=llm)
    # one model for every case (each case has its own parts); with --ray, one per worker instead
    lm = wiring.language_model(settings, _warn)[0] if ray is None else None
    # the active arm's threshold: the setting's when given, else the calibrated one
    base = {"llm": settings.llm, **({"active_retrieval": settings.active_retrieval or CALIBRATED} if "active" in arms
                                    else {})}
    checkpoint = None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        checkpoint = out_dir / "items.jsonl"
        _same_run(out_dir, {"task": mode == "faults" and "doctor" or "rag", "dataset": data.source, "seed": seed,
                            "settings": settings_, "llm": settings.llm, "doctor": mode != "baseline",
                            "arms": list(arms or (("baseline",) if mode == "baseline" else ("baseline", "doctor"))),
                            "corpus": str(corpus.resolve()) if corpus else None, "split": split,
                            "corpus_digest": corpus_digest(corpus) if corpus else None,  # files changed: another run
                            **({"active_retrieval": base["active_retrieval"]} if "active" in arms else {})})
    with _shared_kb(kb_dir, corpus, settings.llm, lm) as (shared, folder):
        rows = run_rag(todo, lm, base, doctor=mode != "baseline", checkpoint=checkpoint,
                       shared_kb=shared, progress=tick, arms=arms, ray=ray)
        extra = {"corpus": folder.to_json()} if folder is not None else {}
    result = {"task": "doctor" if mode == "faults" else "rag", "n": len(rows), "mode": mode, **extra}
    if mode == "arms":
        result.update(_arms_result(rows, arms, seed))
        if "naive" in arms:
            result["dominance"] = _dominance(rows, arms, out_dir, settings.llm, blame, tick)
    elif mode == "baseline":
        result["metrics"] = {"baseline": arm_metrics(rows, "baseline")}
    elif mode == "doctor":
        result["metrics"] = {"doctor": arm_metrics(rows, "doctor")}
    else:
        base, doc = arm_metrics(rows, "baseline"), arm_metrics(rows, "doctor")
        result.update(metrics={"baseline": base, "doctor": doc}, baseline=base, doctor=doc, delta=ab_delta(rows, seed))
        if mode == "faults":
            result["faults"] = fault_metrics(rows)
    if out_dir:
        from ragclinic.eval.report import write_rag_report  # on use: when the command runs (fast --help)

        write_rag_report(out_dir, {**result, "dataset": data.source}, rows)
    return result


def _dominance(rows: list[dict], arms: tuple[str, ...], out_dir: Optional[Path], llm: str, blame: int, tick) -> dict:
    """Losses and wins of each arm against the naive peer; with --out, each loss blamed on a layer by the
    debugger (kept in dominance.json: a resumed run diagnoses only new losses)."""
    from ragclinic.eval.diagnose import blame_losses  # on use: the debugger
    from ragclinic.eval.dominance import dominance, keep_blame  # on use: when the command runs (fast --help)

    found = dominance(rows, arms)
    if out_dir is None:
        return found
    saved = out_dir / "dominance.json"
    old = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else None
    found = blame_losses(keep_blame(found, old), llm, limit=blame, progress=tick, warn=_warn)
    saved.write_text(json.dumps(found, ensure_ascii=False, indent=2), encoding="utf-8")
    return found


@contextmanager
def _shared_kb(kb_dir: Optional[Path], corpus: Optional[Path], llm: str, lm):
    """(the knowledge base items without documents are asked against, the ingested --corpus or None): the
    folder ingested into ``kb_dir`` (again: nothing changed, nothing done), or ``kb_dir`` as it is; (None, None)
    without either."""
    from ragclinic import wiring  # on use: the store and the models
    from ragclinic.config import Settings  # on use: pydantic settings
    from ragclinic.eval.corpus import open_corpus  # on use: when the command runs (fast --help)

    if corpus is not None:
        folder = open_corpus(corpus, kb_dir, llm, lm)
        try:
            yield folder.parts.kb, folder
        finally:
            folder.parts.close()
    elif kb_dir is not None:
        kb = wiring.open_kb(Settings.load(kb_dir, llm=llm))
        try:
            yield kb, None
        finally:
            kb.close()
    else:
        yield None, None


def _arms_result(rows: list[dict], arms: tuple[str, ...], seed: int) -> dict:
    """Metrics per arm; doctor − baseline as `delta` (as --ab has it); every arm − naive as `delta_vs_naive`."""
    from ragclinic.eval.tasks.rag import ab_delta, arm_metrics  # on use: when the command runs (fast --help)

    out: dict = {"arms": list(arms), "metrics": {a: arm_metrics(rows, a) for a in arms}}
    if "baseline" in arms and "doctor" in arms:
        out["delta"] = ab_delta(rows, seed)
    if "baseline" in arms and "active" in arms:
        out["delta_active"] = ab_delta(rows, seed, "baseline", "active")
    if "naive" in arms:
        out["delta_vs_naive"] = {a: ab_delta(rows, seed, "naive", a) for a in arms if a != "naive"}
    return out


def _same_run(out_dir: Path, params: dict) -> None:
    """A checkpoint resumes only the run that wrote it (rows of another model, seed or task would mix)."""
    marker = out_dir / "run.json"
    if marker.is_file() and (out_dir / "items.jsonl").is_file():
        old = json.loads(marker.read_text(encoding="utf-8"))
        old.setdefault("arms", ["baseline", "doctor"] if old.get("doctor") else ["baseline"])  # older run.json
        diff = {k: (old.get(k), v) for k, v in params.items() if old.get(k) != v}
        if diff:
            shown = "; ".join(f"{k}: {a!r} then, {b!r} now" for k, (a, b) in diff.items())
            raise fail(f"{out_dir} holds rows of another run ({shown}): use another --out folder, or delete its "
                       "items.jsonl to start over")
    marker.write_text(json.dumps(params, ensure_ascii=False, indent=2), encoding="utf-8")


def _ratio(x: str) -> bool:
    try:
        return 0.0 <= float(x) <= 1.0
    except ValueError:
        return False


def _default_kb(source: Path) -> Path:
    """One knowledge base per corpus (a BEIR corpus.jsonl, or a QA file) under the cache folder."""
    from ragclinic.config import Settings  # on use: pydantic settings

    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    name = source.parent.name if source.name == "corpus.jsonl" else source.stem
    return Settings().cache_dir / "eval" / f"{name}-{digest}"
