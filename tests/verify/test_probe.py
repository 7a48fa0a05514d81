"""The answerability probe's runtime: a calibrated linear reading of one layer's hidden state, pinned by sha256,
refused for another model's states; the training helpers' AUROC and logistic fit on data whose answer is known."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from ragclinic.errors import ModelError
from ragclinic.verify.probe import SHIPPED, AnswerabilityProbe, probe_for, weights_path


def _write(path, w, b=0.0, layer=18, model="local:cc324af070c2", combine=(1.0, 0.0, 0.0), cb=0.0, threshold=0.9):
    np.savez(path, w=np.asarray(w, dtype=np.float32), b=np.float32(b), layer=np.int32(layer),
             method=np.array("meandiff"), model=np.array(model), combine_w=np.asarray(combine, dtype=np.float32),
             combine_b=np.float32(cb), threshold=np.float32(threshold))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_score_is_the_calibrated_reading_of_its_layer(tmp_path):
    f = tmp_path / "p.npz"
    sha = _write(f, [1.0, -2.0, 0.0], b=0.5)
    probe = AnswerabilityProbe(f, sha, "local:cc324af070c2")
    s = probe.score({18: np.array([1.0, 0.25, 9.0]), 4: np.zeros(3)})
    assert probe.layers == (18,) and s.layer == 18
    assert s.p_unanswerable == pytest.approx(1 / (1 + np.exp(-1.0)), abs=1e-4)
    assert "0.73 unanswerable at layer 18" in s.describe()
    assert probe.score({4: np.zeros(3)}) is None  # its layer was not read (a server backend, a replay)
    assert probe.score({18: np.zeros(5)}) is None  # another model's width


def test_the_combiner_weighs_probe_verifier_and_constraint(tmp_path):
    f = tmp_path / "p.npz"
    sha = _write(f, [1.0, 0.0], combine=(1.0, -1.0, 2.0), cb=0.0, threshold=0.6)
    probe = AnswerabilityProbe(f, sha)
    s = probe.score({18: np.array([0.0, 0.0])})  # the probe alone is undecided: 0.5
    strong = probe.combine(s, verifier=0.9, constraint="")  # the verifier sees the answer
    assert strong.p_unanswerable < 0.2 and not strong.unanswerable
    weak = probe.combine(s, verifier=0.1, constraint="the passage is about 2020; the question asks about 2021")
    assert weak.unanswerable and weak.p_unanswerable > 0.9
    assert "verifier 0.10" in weak.describe() and "constraint: the passage is about 2020" in weak.describe()
    assert weak.to_json()["layer"] == 18 and weak.to_json()["threshold"] == 0.6


def test_the_combiner_reads_the_probes_unrounded_logit(tmp_path):
    f = tmp_path / "p.npz"
    sha = _write(f, [1.0, 0.0], combine=(1.0, 0.0, 0.0), cb=-11.0, threshold=0.5)
    probe = AnswerabilityProbe(f, sha)
    s = probe.score({18: np.array([12.0, 0.0])})  # p rounds to 1.0; its logit is 12, not the clipped 9.2
    assert s.p_unanswerable == 1.0 and s.logit == pytest.approx(12.0)
    assert probe.combine(s, 0.5, "").unanswerable  # sigmoid(12 - 11) = 0.73; from the rounded p: sigmoid(-1.8)


def test_training_fits_the_combiner_on_the_run_times_own_features():
    """probe_train.combiner_features calls verify/probe.combiner_features: the same inputs, order and transforms."""
    import inspect
    import sys
    from pathlib import Path

    from ragclinic.verify.probe import combiner_features

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from ragclinic_training import probe_train

    assert "combiner_features_rt(" in inspect.getsource(probe_train.combiner_features)
    f = combiner_features(12.5, 0.0, True)  # the probe's logit unclipped; the verifier's clipped; 1 = missing
    assert f[0] == 12.5 and f[1] == pytest.approx(np.log(1e-4 / (1 - 1e-4))) and f[2] == 1.0


def test_a_changed_file_or_another_models_states_are_refused(tmp_path):
    f = tmp_path / "p.npz"
    sha = _write(f, [1.0, 0.0])
    with pytest.raises(ModelError, match="sha256"):
        AnswerabilityProbe(f, "0" * 64)
    with pytest.raises(ModelError, match="make train-probe"):
        AnswerabilityProbe(f, sha, "local-small:1d9614638d18")


def test_a_probe_that_does_not_fit_the_model_is_left_out_not_fatal(tmp_path, monkeypatch, caplog):
    f = tmp_path / "p.npz"
    sha = _write(f, [1.0, 0.0])
    monkeypatch.setitem(SHIPPED, "local", (f.name, sha))
    monkeypatch.setattr("ragclinic.verify.probe.weights_path", lambda name: f)
    assert probe_for("local", "local:cc324af070c2") is not None
    assert probe_for("local", "frozen-replay") is None and "without the answerability probe" in caplog.text


def test_models_without_a_shipped_probe_get_none():
    assert probe_for("openai", "gpt-x") is None and probe_for("local-small", "local-small:1d9614638d18") is None


def test_the_shipped_probe_matches_its_pinned_hash():
    name, sha = SHIPPED["local"]
    if not sha:
        pytest.skip("no probe shipped yet")
    probe = probe_for("local", "local:cc324af070c2")
    assert probe is not None and hashlib.sha256(weights_path("local").read_bytes()).hexdigest() == sha
    assert probe.w.dtype == np.float32 and probe.w.shape == (1536,)


def test_training_helpers_auroc_and_logistic():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from ragclinic_training.probe_train import auroc, logistic

    y = np.array([1, 1, 0, 0])
    assert auroc(np.array([0.9, 0.8, 0.1, 0.2]), y) == 1.0
    assert auroc(np.array([0.1, 0.2, 0.9, 0.8]), y) == 0.0
    assert auroc(np.array([0.5, 0.5, 0.5, 0.5]), y) == 0.5
    assert auroc(np.array([0.9, 0.5, 0.5, 0.1]), y) == 0.875  # a tie across the classes counts half
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5))
    yy = (x[:, 2] > 0).astype(float)
    w, _ = logistic(x, yy, l2=1e-2)
    assert np.argmax(np.abs(w)) == 2
