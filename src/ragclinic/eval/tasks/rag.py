"""The ``rag`` task: end to end, baseline (the plain pipeline) and doctor on the same items in one run.

Each item is answered against a knowledge base built from its own passages (as the RGB paper does; the
product's own retrieval — hybrid, e5 — at top 5, so every passage reaches the context, as every passage reaches
the naive peer's prompt: a lexical-only base dropped a passage that shares no word with the question, and the
pipeline refused a paraphrase the peer answered, issue 52), or against the caller's knowledge base when the
item brings no passages (``eval rag --kb`` or ``--corpus``; its gold passage's rank is recorded: tasks/gold.py). With the doctor on, its first run *is* the plain pipeline's run (same process,
temperature 0), so both arms come from one pass, item by item. For RGB each item is asked at every
requested noise ratio (``neg`` = negative passages only: the right answer is a refusal) and, if asked,
``counterfactual`` (positive and ``positive_wrong`` passages). Results are appended to ``items.jsonl`` in
the output folder as they come, so a killed run continues where it stopped; each case's knowledge base is
kept under ``kbs/`` there, so its traces open with ``ragclinic trace show ID --kb OUT/kbs/CASE``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragclinic.config import Settings
from ragclinic.clinic import Clinic, Question
from ragclinic.eval.answer_form import form_violations
from ragclinic.eval.datasets import DatasetError, QAItem
from ragclinic.eval.dominance import arm_ok, run_state
from ragclinic.eval.metrics import bootstrap_delta
from ragclinic.eval.tasks.gold import gold_metrics, trace_gold
from ragclinic.eval.tasks.naive import naive_arm, retrieved_arm
from ragclinic.text.answers import answer_correct
from ragclinic.errors import RagclinicError
from ragclinic.trace.store import load_trace
from ragclinic.pipeline.generate import ACTIVE_CALIBRATED as CALIBRATED

PASSAGES = 5
EXAMPLES = 5  # answers shown per arm for the form violations and the constraint contradictions


@dataclass(frozen=True)
class Case:
    key: str  # item id + setting: the checkpoint key
    item: QAItem
    setting: str  # "default", "noise0.4", "neg", "counterfactual"
    documents: tuple[str, ...]
    expect_refusal: bool
    question: str = ""  # the question as asked, when a fault rewrote it (else the item's)

    @property
    def asked(self) -> str:
        return self.question or self.item.question


def cases(items: list[QAItem], settings: list[str], seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = []
    for it in items:
        if not (it.negatives or it.counterfactual):  # not an RGB-style item: its own documents, as they are
            out.append(Case(f"{it.id}|default", it, "default", it.documents, it.expect_refusal))
            continue
        for s in settings:
            if s == "neg":
                if not it.negatives:
                    continue  # an item without negative passages has no negative-only case
                docs = it.negatives[:PASSAGES]
            elif s == "counterfactual":
                if not it.counterfactual:
                    continue
                docs = it.documents[:2] + it.counterfactual[:2]
            else:
                n_neg = round(PASSAGES * float(s))
                if n_neg > len(it.negatives) or (n_neg < PASSAGES and not it.documents):
                    continue  # not enough passages to build this noise ratio
                docs = it.documents[:PASSAGES - n_neg] + it.negatives[:n_neg]
            docs = list(docs)
            rng.shuffle(docs)
            out.append(Case(f"{it.id}|{s}", it, s, tuple(docs), s == "neg" or it.expect_refusal))
    return out


def _case_clinic(tmp: Path, docs: tuple[str, ...], base_settings, lm, active: float) -> Clinic:
    """A clinic over a knowledge base of the item's own passages (one text file each), with ``lm``."""
    root = tmp / "docs"
    root.mkdir(parents=True)
    for i, d in enumerate(docs):
        (root / f"p{i}.txt").write_text(d, encoding="utf-8")
    settings = Settings.load(tmp / "kb", **{"embedder": "e5", "retriever": "hybrid", **_run_settings(base_settings),
                                            "top_k": PASSAGES, "context_k": PASSAGES, "active_retrieval": active})
    clinic = Clinic(settings, model=lm, experiments=False)
    clinic.ingest([root])
    return clinic


def _shared_clinic(shared_kb, base_settings, lm, active: float) -> Clinic:
    """A clinic over the caller's knowledge base (``--kb``, ``--corpus``), with the run's settings over its own."""
    over = {k: v for k, v in _run_settings(base_settings).items() if k in ("answer_cache",)}
    return Clinic(shared_kb.settings.model_copy(update={**over, "active_retrieval": active}), model=lm, kb=shared_kb,
                  experiments=False)


def _run_settings(base_settings: dict) -> dict:
    """The run's settings for a case's clinic: the answer cache off unless the run asked for it (a cached answer
    would time nothing and repeat an earlier run's), active retrieval set per arm."""
    return {"answer_cache": False, **{k: v for k, v in base_settings.items() if k != "active_retrieval"}}


def _consult(clinic: Clinic, question: str, doctor: bool, on_token):
    """(answer, DoctorResult or None, trace): ``question`` asked through ``Clinic.answer`` — the path the CLI and
    the server take (the answer cache as the run's settings say; never a clarifying question: eval cannot reply)."""
    c = clinic.answer(Question(question, doctor=doctor), on_token=on_token)
    if c.trace is None:  # from the answer cache (``--answer-cache``): the trace of the run that wrote it
        c = replace(c, trace=load_trace(clinic.kb.db, c.answer.trace_id))
    if doctor and c.result is not None:
        return c.result.answer, c.result, c.trace
    return c.answer, None, c.trace


def _arm(answer, case: Case, ms: float, calls: int, trace=None, ttft: float | None = None,
         state_of=None) -> dict[str, Any]:
    """One arm's row; with ``trace`` (the run's own) also its prompt tokens — given, and evaluated (not a
    reused KV prefix or a remembered call) — and the time to the first streamed token; with ``state_of`` (the
    trace of the run that wrote ``answer``) what that run held at each decision (eval/dominance.py)."""
    claims = answer.claims
    cited = [c for c in claims if c.cited]
    shown = {"answer": answer.text, "refused": answer.refused,
             "citations": [{"n": c.n, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "path": c.path, "title": c.title}
                           for c in answer.citations]}
    return {"answer": answer.text, "refused": answer.refused, "form": form_violations(shown, case.asked),
            "correct": (not answer.refused and answer_correct(answer.text, case.item.answers)) if case.item.answers
            else False,
            "fake": bool(case.item.fake_answers) and answer_correct(answer.text, (case.item.fake_answers,)),
            "conflict_stated": any(w in answer.text for w in ("disagree", "分歧")),
            "claims": len(claims), "unsupported": sum(c.verdict in ("unsupported", "contradicted") for c in claims),
            "cited": len(cited), "cited_ok": sum(c.verdict == "supported" for c in cited), "ms": round(ms, 1),
            "lm_calls": calls, "trace_id": answer.trace_id, **_tokens(trace, ttft), **_chain(answer),
            **({"state": run_state(state_of, answer)} if state_of is not None else {})}


def _chain(answer) -> dict[str, Any]:
    """A causal answer's typed chain (cause → effect links) and the evidence's strength, and the notes beside an
    answer ("the documents do not mention …"), when it has them."""
    out: dict[str, Any] = {"notes": list(answer.notes)} if answer.notes else {}
    if answer.causal_chain:
        out.update(causal_chain=[dict(c) for c in answer.causal_chain], evidence_strength=answer.evidence_strength)
    return out


def _tokens(trace, ttft: float | None) -> dict[str, Any]:
    if trace is None:
        return {}
    given = sum(c.prompt_tokens for c in trace.model_calls)
    out = {"prompt_tokens": given, "prompt_evaluated": given - sum(c.prompt_reused for c in trace.model_calls)}
    if ttft is not None:
        out["ttft_ms"] = round(ttft, 1)
    return out


class _FirstToken:
    """An on_token callback that notes when the first piece of the answer arrived."""

    def __init__(self) -> None:
        self.t0, self.at = time.perf_counter(), None

    def __call__(self, piece: str) -> None:
        if self.at is None and piece.strip():
            self.at = (time.perf_counter() - self.t0) * 1000


def case_dir(key: str) -> str:
    """A folder name for a case key ("12|0.4" → "12_0.4-1a2b3c"; the hash keeps "a b" and "a_b" apart)."""
    return re.sub(r"[^\w.-]+", "_", key)[:60] + "-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:6]


def run_case(case: Case, lm, base_settings: dict, doctor: bool, shared_kb=None,
             kb_root: Path | None = None, arms: tuple[str, ...] = ()) -> dict[str, Any]:
    """One case: against a KB of its own documents (kept under ``kb_root`` when given, else temporary), or
    ``shared_kb`` (the caller's) when it has none. ``arms`` (default: baseline, and doctor if ``doctor``) may
    add ``naive`` (the naive peer: the case's passages in one prompt) or hold only it."""
    arms = arms or (("baseline", "doctor") if doctor else ("baseline",))
    naive = None
    if "naive" in arms:
        naive = _naive(case, lm, shared_kb)
    row = {"key": case.key, "id": case.item.id, "setting": case.setting, "question": case.asked, "kb": "",
           "expected": [list(a) for a in case.item.answers], "expect_refusal": case.expect_refusal,
           "baseline": None, "doctor": None, **_item_marks(case.item)}
    if naive is not None:
        row["naive"] = naive
    if "baseline" in arms or "doctor" in arms:
        row.update(_pipeline_case(case, lm, base_settings, "doctor" in arms, shared_kb, kb_root))
    if "active" in arms:  # the plain pipeline with active retrieval (generate/active.py), on a KB of its own
        active = _pipeline_case(case, lm, base_settings, False, shared_kb, kb_root,
                                active=base_settings.get("active_retrieval") or CALIBRATED)
        row["active"] = {**active["baseline"], "kb": active["kb"]}
        row["kb"] = row["kb"] or active["kb"]
    return row


def _naive(case: Case, lm, shared_kb) -> dict[str, Any] | None:
    """Every passage of the case in one prompt; without passages of its own, the top of the shared knowledge
    base's retrieval (None when there is none: the pipeline arms say so)."""
    if not case.documents and shared_kb is None:
        return None
    if lm is None:
        raise DatasetError("the naive arm needs a language model (--llm local or local-small)")
    it = case.item
    if not case.documents:
        return retrieved_arm(lm, shared_kb, case.asked, it.answers, it.fake_answers, it.gold)
    return naive_arm(lm, case.asked, case.documents, it.answers, it.fake_answers)


def _item_marks(item: QAItem) -> dict[str, Any]:
    """The row fields an item may carry: what a constraint swap changed, its dev / heldout half, its page and
    gold snippets."""
    return {k: v for k, v in (("swap", item.swap), ("split", item.split), ("page", item.page),
                              ("gold", list(item.gold))) if v}


def _pipeline_case(case: Case, lm, base_settings: dict, doctor: bool, shared_kb, kb_root,
                   active: float = 0.0) -> dict[str, Any]:
    if not case.documents and shared_kb is None:
        raise DatasetError(f"item {case.item.id} brings no documents: pass --kb to answer it from a knowledge base")
    with tempfile.TemporaryDirectory() as d:
        where = Path(d)
        if kb_root is not None and case.documents:
            where = kb_root / case_dir(case.key + ("|active" if active else ""))
            shutil.rmtree(where, ignore_errors=True)  # a case cut short by a kill starts again
        clinic = (_case_clinic(where, case.documents, base_settings, lm, active) if case.documents else
                  _shared_clinic(shared_kb, base_settings, lm, active))
        try:
            t0 = time.perf_counter()
            first = _FirstToken()
            answer, res, trace = _consult(clinic, case.asked, doctor, first)
            total = (time.perf_counter() - t0) * 1000
            kept = _kept_trace(clinic, res, trace) if res is not None else trace
        finally:
            clinic.close()
    extra, doc = {}, None
    if doctor and res is not None:
        base = _arm(res.initial, case, trace.total_ms, len(trace.model_calls), trace, first.at, state_of=trace)
        doc = _arm(res.answer, case, total, len(trace.model_calls) + res.summary["lm_calls"], state_of=kept)
        doc.update(trace_gold(trace, case.item.gold))  # the doctor's retrieval: its initial run's
        doc["answer_trace_id"] = res.summary.get("answer_trace_id", doc["trace_id"])  # the kept answer's run
        if first.at is not None:
            doc["ttft_ms"] = round(first.at, 1)  # the answer streams before the examination
        extra = {"symptoms": [s.name for s in res.symptoms], "outcome": res.summary["outcome"],
                 "symptom_layers": {s.name: s.layer for s in res.symptoms},
                 "repairs": [r.treatment for r in res.repairs if r.accepted]}
    else:
        base = _arm(answer, case, trace.total_ms, len(trace.model_calls), trace, first.at, state_of=trace)
    base.update(trace_gold(trace, case.item.gold))
    if doctor and res is None:  # the answer cache answered (the run's ``answer_cache``): one answer for both arms
        doc = {**base, "cached": True}
    kb_path = str(where / "kb") if kb_root is not None and case.documents else (
        str(shared_kb.folder) if shared_kb is not None and not case.documents else "")
    return {"kb": kb_path, "baseline": base, "doctor": doc, **extra}


def _kept_trace(clinic: Clinic, res, root):
    """The trace of the run whose answer the doctor kept (its root trace when it kept the first answer)."""
    kept = res.summary.get("answer_trace_id")
    if not kept or kept == root.id:
        return root
    try:
        return load_trace(clinic.kb.db, kept)
    except RagclinicError:
        return root  # not saved (a setting that keeps no traces): the first run's state


def run_rag(cases_: list[Case], lm, base_settings: dict, *, doctor: bool, checkpoint: Path | None = None,
            shared_kb=None, progress: Callable[[int, int], None] | None = None,
            arms: tuple[str, ...] = (), ray=None) -> list[dict[str, Any]]:
    """Every case's row (rows already in ``checkpoint`` are read back, not re-run). With a checkpoint, each
    case's knowledge base is kept in ``kbs/`` beside it. ``ray``: a eval.ray_eval.RayEval — the cases run on
    its workers (each with its own model), rows are checkpointed here as they arrive."""
    done: dict[str, dict] = {}
    if checkpoint is not None and checkpoint.exists():
        for line in checkpoint.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: that case runs again
            done[row["key"]] = row
    todo = [c for c in cases_ if c.key not in done]
    kb_root = checkpoint.parent / "kbs" if checkpoint is not None else None
    if ray is not None:
        fresh = ray.cases(todo, base_settings, doctor, shared_kb, kb_root, arms)
    else:
        fresh = (run_case(c, lm, base_settings, doctor, shared_kb, kb_root, arms) for c in todo)
    n = len(cases_) - len(todo)
    if progress and n:
        progress(n, len(cases_))
    for row in fresh:
        done[row["key"]] = row
        if checkpoint is not None:
            _append_row(checkpoint, row)
        n += 1
        if progress:
            progress(n, len(cases_))
    return [done[c.key] for c in cases_]


def _append_row(checkpoint: Path, row: dict) -> None:
    """One row, one line: after a line a kill cut short (no newline at the end), a newline first, so the row is
    not glued to the cut one (and lost to the next resume)."""
    with open(checkpoint, "a+b") as f:
        cut = f.tell() > 0 and (f.seek(-1, 2), f.read(1))[1] != b"\n"
        f.write((b"\n" if cut else b"") + (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def arm_metrics(rows: list[dict], arm: str) -> dict[str, Any]:
    rs = [r[arm] for r in rows if r.get(arm)]
    answerable = [r[arm] for r in rows if r.get(arm) and not r["expect_refusal"] and r["expected"]]
    negative = [r[arm] for r in rows if r.get(arm) and r["expect_refusal"]]
    cf = [r[arm] for r in rows if r.get(arm) and r["setting"] == "counterfactual"]
    claims = sum(x["claims"] for x in rs)
    cited = sum(x["cited"] for x in rs)
    out: dict[str, Any] = {
        "accuracy": _share([x["correct"] for x in answerable]),
        "refusal_accuracy": _share([x["refused"] for x in negative]),
        "over_refusal": _share([x["refused"] for x in answerable]),
        "hallucination_rate": round(sum(x["unsupported"] for x in rs) / claims, 4) if claims else None,
        "citation_precision": round(sum(x["cited_ok"] for x in rs) / cited, 4) if cited else None,
        "counterfactual_detection": _share([(not x["fake"]) or x["conflict_stated"] for x in cf]),
        "answer_form_violations": answer_form(rows, arm),
        "p50_ms": round(statistics.median(x["ms"] for x in rs), 1) if rs else None,
        "lm_calls_per_item": round(statistics.mean(x["lm_calls"] for x in rs), 2) if rs else None,
    }
    for k in ("prompt_tokens", "prompt_evaluated", "ttft_ms"):  # medians where the arm reports them
        if vals := [x[k] for x in rs if x.get(k) is not None]:
            out[f"p50_{k}" if k != "ttft_ms" else "p50_ttft_ms"] = round(statistics.median(vals), 1)
    out.update(gold_metrics(rows, arm))
    if any(r.get("swap") for r in rows):
        out["constraint_contradictions"] = constraint_contradictions(rows, arm)
    for s in sorted({r["setting"] for r in rows} - {"default", "neg", "counterfactual"}):
        sub = [r[arm] for r in rows if r["setting"] == s and r.get(arm) and not r["expect_refusal"]]
        if sub:
            out[f"accuracy@{s}"] = _share([x["correct"] for x in sub])
    return out


def answer_form(rows: list[dict], arm: str) -> dict[str, Any]:
    """Answers of ``arm`` that break the answer form (eval/answer_form.py): count, share of the arm's answers,
    and the first few, each with what broke it. Rows from before the check are checked from their text."""
    bad = []
    seen = 0
    for r in rows:
        if not (x := r.get(arm)):
            continue
        seen += 1
        found = x["form"] if "form" in x else form_violations({"answer": x["answer"]}, r["question"])
        if found:
            bad.append({"key": r["key"], "answer": x["answer"][:200], "violations": found})
    return {"count": len(bad), "rate": round(len(bad) / seen, 4) if seen else None, "of": seen,
            "examples": bad[:EXAMPLES]}


def constraint_contradictions(rows: list[dict], arm: str) -> dict[str, Any]:
    """Constraint-swapped questions (a year, number, ordinal or name changed to one the passages do not
    support) that ``arm`` answered with the value the passages give for the original question — the gold answer
    of its unswapped twin (the item's ``fake_answers``) — instead of refusing. Negative-only cases are left out
    (their passages do not hold that value); ``refused``: the share of swapped questions refused."""
    swapped = [(r, r[arm]) for r in rows if r.get("swap") and r.get(arm) and r["setting"] != "neg"]
    bad = [{"key": r["key"], "swap": r["swap"], "question": r["question"], "answer": x["answer"][:200]}
           for r, x in swapped if x["fake"] and not x["refused"]]
    n = len(swapped)
    return {"count": len(bad), "rate": round(len(bad) / n, 4) if n else None, "of": n,
            "refused": _share([x["refused"] for _, x in swapped]), "examples": bad[:EXAMPLES]}


def ab_delta(rows: list[dict], seed: int = 0, a: str = "baseline", b: str = "doctor") -> dict[str, Any]:
    """Arm ``b`` − arm ``a`` (default doctor − baseline) per metric that is a per-item mean, with a paired
    bootstrap 95% interval, over the cases both arms answered."""
    pairs = [r for r in rows if r.get(a) and r.get(b)]
    out: dict[str, Any] = {}
    answerable = [r for r in pairs if not r["expect_refusal"] and r["expected"]]
    negative = [r for r in pairs if r["expect_refusal"]]
    for name, sub, f in (("accuracy", answerable, lambda a: float(a["correct"])),
                         ("refusal_accuracy", negative, lambda a: float(a["refused"])),
                         ("over_refusal", answerable, lambda a: float(a["refused"]))):
        if sub:
            mean, lo, hi = bootstrap_delta([f(r[a]) for r in sub], [f(r[b]) for r in sub], seed=seed)
            out[name] = {"delta": round(mean, 4), "ci95": [round(lo, 4), round(hi, 4)]}
    if pairs:
        out["p50_latency_ratio"] = round(statistics.median(r[b]["ms"] / max(1e-3, r[a]["ms"]) for r in pairs), 3)
        out["regressions"] = sum(r[a]["correct"] and not r[b]["correct"] for r in answerable)
        out["repairs"] = sum(r[b]["correct"] and not r[a]["correct"] for r in answerable)
    return out


def _share(xs: list[bool]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None
