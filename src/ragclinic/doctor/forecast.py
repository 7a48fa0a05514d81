"""The doctor before the answer: a calibrated forecast, from what the pipeline knows before it generates — the
retrieval's scores and its retrievers' agreement, the verifier's scores of the passages, the gate's decision, the
question's shape — of how likely each kind of failure is:

- ``retrieval_miss``: the knowledge base holds the answer, but not in the passages the answer is written from;
- ``insufficient_evidence``: the knowledge base does not hold the answer;
- ``noisy_context``: the passages hold the answer, and the plain answer is wrong all the same;
- ``conflict`` and ``ambiguous``: trained only from a knowledge base's own history (no licensed labels ship).

One logistic head per kind (``verify/head.py``'s forward pass), Platt-calibrated on a validation split. The shipped
heads (``forecast-v1.json``, sha256-pinned) are fitted by ``make train-forecast`` on CMRC2018 and HaluEval
questions, each set asked against a knowledge base of its documents with a third of them withheld;
``ragclinic doctor train --kb DIR`` fits a knowledge base's own from its traces (``KB/forecast.json``), which
the ``doctor_forecast`` setting ("kb", the default) makes the only one read. The doctor reads the forecast to skip treatments where failure is unlikely and to try
first what is most likely to help (doctor.py, docs/doctor.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragclinic.errors import ModelError
from ragclinic.pipeline.gate import classify_rules
from ragclinic.text.support import coverage
from ragclinic.types import AskState
from ragclinic.verify.head import Head

log = logging.getLogger("ragclinic.doctor")
KINDS = ("retrieval_miss", "insufficient_evidence", "noisy_context", "conflict", "ambiguous")
SHIPPED = Path(__file__).with_name("forecast-v1.json")
SHIPPED_SHA256 = "9ba158a02998d3628d68f10f1830cdd353d35337cdf868c160f64d0e197a8685"  # make train-forecast prints it; checked when the file is read
KB_FILE = "forecast.json"
_TYPES = ("factual", "how-to", "comparison", "causal")
_CJK = re.compile(r"[\u4e00-\u9fff]")

FEATURES = ("top1", "gap12", "n_hits", "top1_both", "agree5", "dense_top1", "lexical_top1", "support_max",
            "support_2nd", "support_mean", "support_n50", "evidence", "gate_refused", "coverage", "q_tokens", "zh",
            "digit", "n_passages", "n_excluded", "n_docs_share", "conflicts", *(f"type_{t}" for t in _TYPES))

# what the shipped heads read: the evidence as the verifier and the gate saw it, none of the retrievers' raw scores
# (their scale depends on the knowledge base's size and its chunks: a head fitted on one corpus's scores misreads
# another's) nor the question's surface (its language, length, type: shortcuts of the training corpora)
PORTABLE = ("support_max", "support_2nd", "support_mean", "support_n50", "evidence", "gate_refused", "coverage",
            "agree5", "top1_both", "n_docs_share", "conflicts")


def features(state: AskState) -> np.ndarray:
    """The forecast's inputs from a state after the gate (nothing the generator wrote): one row, FEATURES' order."""
    hits, passages, d, q = state.hits, state.passages, state.decision, state.request.question
    scores = [h.score for h in hits]

    def best(retriever: str) -> float:
        return max((s.score for h in hits[:5] for s in h.sources if s.retriever == retriever), default=0.0)

    support = sorted((p.support for p in passages), reverse=True)
    asked = (q,) + tuple(state.request.sub_questions)
    cover = min(max((coverage(x, p.chunk.text) for p in passages), default=0.0) for x in asked)
    qtype = classify_rules(q)[0]  # by rule, as in training (the gate may have asked the model)
    row = {"top1": scores[0] if scores else 0.0, "gap12": scores[0] - scores[1] if len(scores) > 1 else 0.0,
           "n_hits": math.log1p(len(hits)), "top1_both": float(bool(hits) and len(hits[0].sources) > 1),
           "agree5": float(np.mean([len(h.sources) > 1 for h in hits[:5]])) if hits else 0.0,
           "dense_top1": best("dense"), "lexical_top1": math.log1p(max(0.0, best("lexical"))),
           "support_max": support[0] if support else 0.0, "support_2nd": support[1] if len(support) > 1 else 0.0,
           "support_mean": float(np.mean(support)) if support else 0.0,
           "support_n50": float(sum(s >= 0.5 for s in support)), "evidence": d.evidence_score if d else 0.0,
           "gate_refused": float(d is not None and d.route == "refuse"), "coverage": cover,
           "q_tokens": math.log1p(len(q.split()) + len(_CJK.findall(q))), "zh": float(bool(_CJK.search(q))),
           "digit": float(any(c.isdigit() for c in q)), "n_passages": float(len(passages)),
           "n_excluded": float(len(state.excluded)),
           "n_docs_share": len({p.chunk.doc_id for p in passages}) / len(passages) if passages else 0.0,
           "conflicts": float(len(state.conflicts)), **{f"type_{t}": float(qtype == t) for t in _TYPES}}
    return np.asarray([row[f] for f in FEATURES], dtype=np.float64)


@dataclass(frozen=True)
class Forecast:
    """Each kind's calibrated probability (only the kinds the model has a head for), and which model said so."""

    probs: tuple[tuple[str, float], ...]
    model: str  # "forecast-v1" (shipped) or "kb:forecast.json@<sha12>"

    def p(self, kind: str) -> float | None:
        return dict(self.probs).get(kind)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, **{k: round(v, 4) for k, v in self.probs}}

    def said(self) -> str:
        return ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in self.probs)


class Forecaster:
    """The heads of one forecast file: ``predict(state)`` → Forecast."""

    def __init__(self, data: dict[str, Any], name: str) -> None:
        if tuple(data.get("features", ())) != FEATURES:
            raise ModelError(f"{name}: its features are not this version's ({len(data.get('features', ()))} vs "
                             f"{len(FEATURES)}); refit it with `ragclinic doctor train --kb DIR`")
        self.name = name
        self.heads = {k: Head.from_json(h) for k, h in data.get("kinds", {}).items() if k in KINDS}
        for k, h in self.heads.items():
            if h.kind != "logistic" or not h.mean.shape == h.std.shape == h.w1.shape == (len(FEATURES),):
                raise ModelError(f"{name}: the {k} head is not a logistic head over {len(FEATURES)} features; refit "
                                 "it with `ragclinic doctor train --kb DIR`")
        self.meta = {k: v for k, v in data.items() if k not in ("kinds", "features")}

    def predict(self, state: AskState) -> Forecast:
        x = features(state)
        probs = ((k, float(h.prob(x)[0])) for k, h in self.heads.items())
        return Forecast(tuple((k, p) for k, p in probs if math.isfinite(p)), self.name)  # a NaN says nothing


def read(path: Path, sha256: str = "") -> Forecaster:
    """A forecast file (the sha256 checked when given)."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 and digest != sha256:
        raise ModelError(f"{path}: sha256 {digest[:12]}… is not the pinned {sha256[:12]}…; reinstall ragclinic or "
                         "rebuild it with `make train-forecast`")
    name = "forecast-v1" if path == SHIPPED else f"kb:{path.name}@{digest[:12]}"
    return Forecaster(json.loads(raw), name)


def load(kb_dir: Path | None, mode: str = "shipped") -> Forecaster | None:
    """The forecast the ``doctor_forecast`` setting names: "kb" — the knowledge base's own (``doctor train``: its
    heads were measured on the knowledge base's held-out history), none without it; "shipped" — that, else the
    shipped heads (fitted on licensed corpora; they do not transfer to every knowledge base: RESULTS, issue 37);
    "off" — none. None too (logged) when the file cannot be read: the doctor then treats as without a forecast.
    Read once per file version."""
    if mode == "off":
        return None
    candidates = ([(Path(kb_dir) / KB_FILE, "")] if kb_dir else []) + ([(SHIPPED, SHIPPED_SHA256)] if mode == "shipped" else [])
    for path, sha in candidates:
        try:
            st = path.stat()
        except OSError:
            continue
        try:
            got = _read_once(str(path), st.st_mtime_ns, st.st_size, sha)
        except OSError as e:  # unreadable now (permissions, a folder of that name): not remembered, tried again
            log.warning("the failure forecast %s cannot be read (%s); the doctor goes on without it", path, e)
            continue
        if got is not None:
            return got
    return None


@functools.lru_cache(maxsize=16)
def _read_once(path: str, _mtime_ns: int, _size: int, sha256: str) -> Forecaster | None:
    """The file read once per version; one that cannot be used is logged once, and None."""
    try:
        return read(Path(path), sha256)
    except (ModelError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("the failure forecast %s cannot be used (%s); the doctor goes on without it", path, e)
        return None


# ---------------------------------------------------------------------- what the doctor does with it
# which forecast kind a symptom is evidence of (a treatment for the symptom is a treatment for that failure)
SYMPTOM_KIND = {"low_relevance": "retrieval_miss", "term_mismatch": "retrieval_miss", "missing_aspect": "retrieval_miss",
                "compound": "retrieval_miss", "global_no_community": "retrieval_miss",
                "noisy_context": "noisy_context", "homogeneous_context": "noisy_context",
                "conflicting_evidence": "conflict", "ambiguous": "ambiguous"}
FIRST = ("injected_instruction",)  # safety is treated first whatever the forecast says


FAST_KINDS = ("retrieval_miss", "noisy_context")  # what the fast path leaves untreated (doctor._SKIPPABLE) is about


def healthy(f: Forecast, below: float) -> str:
    """Why the forecast puts an answer in the fast band ('' when it does not): a head for each kind the fast path
    leaves untreated (a retrieval miss, a noisy context), each below ``below`` (doctor_forecast_skip), and every
    other kind it has a head for below it too."""
    if any(f.p(k) is None for k in FAST_KINDS) or any(p >= below for _, p in f.probs):
        return ""
    return f"the forecast ({f.model}): {f.said()}, each below doctor_forecast_skip {below:.2f}"


def refusal_reach(f: Forecast, settings) -> bool | None:
    """For a refusal: True when the forecast says the search likely missed (a retrieval treatment is worth its
    time), False when it says the knowledge base likely does not hold the answer (none is), None: no opinion."""
    miss, absent = f.p("retrieval_miss"), f.p("insufficient_evidence")
    if miss is not None and miss >= settings.doctor_forecast_miss:
        return True
    if absent is not None and absent >= settings.doctor_forecast_absent and (miss is None or miss < settings.doctor_forecast_skip):
        return False
    return None


def ordered(steps: list, f: Forecast | None) -> list:
    """The router's steps, safety first, then by the forecast probability of the failure each one treats (most
    likely first; a symptom with no forecast kind counts as 0.5); ties keep the router's upstream-first order."""
    if f is None or not f.probs:
        return steps

    def key(item):
        i, (sym, _change) = item
        if sym.name in FIRST:
            return (0, 0.0, i)
        p = f.p(SYMPTOM_KIND.get(sym.name, ""))
        return (1, -(0.5 if p is None else p), i)

    return [s for _, s in sorted(enumerate(steps), key=key)]
