"""A trained head read at run time (the verifier's and the instruction detector's): a standardised logistic
regression or a one-hidden-layer MLP, temperature-calibrated, with its threshold. Fitted offline by
training/ragclinic_training/fit.py; only the reading and the forward pass live here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Head:
    kind: str  # "logistic" | "mlp"
    mean: np.ndarray
    std: np.ndarray
    w1: np.ndarray  # logistic: (d,); mlp: (d, h)
    b1: np.ndarray
    w2: np.ndarray | None = None  # mlp: (h,)
    b2: float = 0.0
    temperature: float = 1.0
    threshold: float = 0.5

    def logit(self, x: np.ndarray) -> np.ndarray:
        z = (np.atleast_2d(x) - self.mean) / self.std
        if self.kind == "logistic":
            out = z @ self.w1 + self.b1
        else:
            out = np.tanh(z @ self.w1 + self.b1) @ self.w2 + self.b2
        return np.asarray(out, dtype=np.float64).reshape(-1) / self.temperature

    def prob(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.clip(self.logit(x), -30, 30)))

    def to_json(self) -> dict:
        d = {"kind": self.kind, "mean": self.mean.tolist(), "std": self.std.tolist(), "w1": self.w1.tolist(),
             "b1": np.asarray(self.b1).tolist(), "temperature": self.temperature, "threshold": self.threshold}
        if self.kind == "mlp":
            d |= {"w2": self.w2.tolist(), "b2": self.b2}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Head":
        a = lambda k: np.asarray(d[k], dtype=np.float64)  # noqa: E731
        return cls(d["kind"], a("mean"), a("std"), a("w1"), a("b1"), a("w2") if d["kind"] == "mlp" else None,
                   float(d.get("b2", 0.0)), float(d["temperature"]), float(d["threshold"]))
