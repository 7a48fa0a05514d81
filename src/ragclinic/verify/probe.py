"""The answerability probe: whether the generator's own hidden state says its sources do not hold the answer.

While the local model evaluates the answer prompt, the residual stream at the token that closes ``{"status": "``
is read at one layer (models/hidden.py: llama.cpp's eval callback, no extra forward pass). A linear reading of
it — trained by ``make train-probe`` on licensed data only (training/ragclinic_training/probe_data.py and
probe_train.py), calibrated on a validation split — gives p(unanswerable) = sigmoid(w · h + b). The shipped file
is per model (the 1.5B ``local`` model's; the 0.5B model and server backends have none: ``probe_for`` returns
None and the decision goes on without it) and sha256-pinned; nothing trains at run time.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np

from ragclinic.errors import ModelError
from ragclinic.verify.base import read_pinned

log = logging.getLogger("ragclinic.verify.probe")

# model name -> (file, sha256 printed by make train-probe)
SHIPPED = {"local": ("probe-local-v1.npz", "a933785747181c43ab90189b40cf185ceec3d3e3171ddbd12f39bd9404aeb234")}


@dataclass(frozen=True)
class ProbeScore:
    p_unanswerable: float  # rounded, for people
    layer: int
    probe_id: str
    logit: float  # w · h + b, unrounded: the combiner's input

    def describe(self) -> str:
        return f"probe {self.p_unanswerable:.2f} unanswerable at layer {self.layer}"


def weights_path(name: str) -> Path:
    return Path(str(files("ragclinic.verify") / "weights" / SHIPPED[name][0]))


@dataclass(frozen=True)
class Answerability:
    """The combiner's decision: the probe, the verifier and the constraint check, weighed together."""
    p_unanswerable: float
    threshold: float
    probe: ProbeScore
    verifier: float  # the learned verifier's best relevance over the passages shown (the gate's evidence score)
    constraint: str  # "" when a passage meets every constraint of the question, else what is missing
    unanswerable: bool  # the unrounded probability at or over the threshold

    def describe(self) -> str:
        parts = [self.probe.describe(), f"verifier {self.verifier:.2f}"]
        parts.append(f"constraint: {self.constraint}" if self.constraint else "constraints met")
        return f"{self.p_unanswerable:.2f} unanswerable ({'; '.join(parts)})"

    def to_json(self) -> dict:
        return {"p_unanswerable": self.p_unanswerable, "threshold": self.threshold, "unanswerable": self.unanswerable,
                "probe": self.probe.p_unanswerable, "layer": self.probe.layer, "probe_id": self.probe.probe_id,
                "verifier": self.verifier, "constraint": self.constraint}


class AnswerabilityProbe:
    """One layer's calibrated linear reading of the last prompt token's hidden state."""

    def __init__(self, path: Path, sha256: str | None, model_id: str = "") -> None:
        raw = read_pinned(path, sha256, "answerability probe weights", "train-probe", "verify/probe.py")
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            self.w = z["w"].astype(np.float32)
            self.b = float(z["b"])
            self.layer = int(z["layer"])
            self.method = str(z["method"])
            self.trained_on = str(z["model"])  # the model id whose states it was fitted on
            # the combiner: sigmoid(cw · (probe logit, verifier logit, constraint missing) + cb) >= threshold
            self.combine_w = z["combine_w"].astype(np.float64)
            self.combine_b = float(z["combine_b"])
            self.threshold = float(z["threshold"])
        if model_id and model_id != self.trained_on:
            raise ModelError(f"the answerability probe {path.name} was fitted on {self.trained_on}'s hidden states, "
                             f"not {model_id}'s; run make train-probe for this model")
        self.probe_id = f"probe:{path.stem}"

    @property
    def layers(self) -> tuple[int, ...]:
        return (self.layer,)

    def score(self, hidden: dict) -> ProbeScore | None:
        """The probe's reading of a completion's ``hidden`` vectors; None when its layer was not read."""
        h = hidden.get(self.layer)
        if h is None or np.shape(h) != self.w.shape:
            return None
        z = float(np.dot(self.w, np.asarray(h, dtype=np.float32))) + self.b
        return ProbeScore(round(_sigmoid(z), 4), self.layer, self.probe_id, z)

    def combine(self, probe: ProbeScore, verifier: float, constraint: str) -> Answerability:
        """The calibrated combiner (fitted by make train-probe beside the probe on ``combiner_features``, the same
        function): the probe's logit, the learned verifier's best relevance, whether no passage meets the
        question's constraints (``constraint``: what is missing, "" when met)."""
        p = _sigmoid(float(self.combine_w @ combiner_features(probe.logit, verifier, bool(constraint))) + self.combine_b)
        return Answerability(round(p, 4), round(self.threshold, 4), probe, round(verifier, 4), constraint,
                             p >= self.threshold)


def combiner_features(probe_logit: float, verifier: float, constraint_missing: bool) -> np.ndarray:
    """The combiner's inputs, in training (probe_train.py) and at run time alike: the probe's logit, the verifier's
    probability as a logit, and 1.0 when no passage meets every constraint of the question."""
    return np.array([probe_logit, _logit(verifier), 1.0 if constraint_missing else 0.0])


def _sigmoid(z: float) -> float:
    return float(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return float(np.log(p / (1 - p)))


def probe_for(llm_name: str, model_id: str) -> AnswerabilityProbe | None:
    """The shipped probe of this language model, or None where there is none (another model, a server) or it does
    not fit the model (logged; the answers go on without it)."""
    if llm_name not in SHIPPED or not SHIPPED[llm_name][1]:
        return None
    try:
        return AnswerabilityProbe(weights_path(llm_name), SHIPPED[llm_name][1], model_id)
    except ModelError as e:
        log.warning("%s; answering without the answerability probe", e)
        return None
