"""An experiment's design: arms from settings files (only query-time settings), shares, and the stable assignment
of a session or key to an arm."""

from __future__ import annotations

import pytest

from ragclinic.config import Settings
from ragclinic.errors import ConfigError
from ragclinic.experiment.design import Arm, Design, arms_from, parse_share


@pytest.fixture
def base(tmp_path):
    return Settings.load(tmp_path / "kb", embedder="fake")


def _design(shares=(50.0, 50.0), salt="s1"):
    return Design("exp", tuple(Arm(n, s) for n, s in zip("AB", shares)), salt=salt)


def test_a_unit_stays_in_its_arm_and_the_design_survives_its_json():
    d = _design()
    again = Design.from_json("exp", d.to_json())
    for unit in (f"user-{i}" for i in range(200)):
        assert d.assign(unit) == d.assign(unit) == again.assign(unit)


def test_the_shares_are_what_was_asked():
    for shares in ((50.0, 50.0), (90.0, 10.0)):
        d = _design(shares)
        got = sum(d.assign(f"u{i}").name == "A" for i in range(20_000)) / 20_000
        assert abs(got - shares[0] / 100) < 0.015


def test_another_experiment_shuffles_the_units_anew():
    a, b = _design(salt="one"), _design(salt="two")
    same = sum(a.assign(f"u{i}").name == b.assign(f"u{i}").name for i in range(4000)) / 4000
    assert 0.45 < same < 0.55  # independent of the last experiment's split


def test_arms_read_query_time_settings_from_files(tmp_path, base):
    (tmp_path / "b.toml").write_text("top_k = 4\ndoctor = false\n")
    arms = arms_from(["A=", f"B={tmp_path / 'b.toml'}"], "70/30", base)
    assert [(a.name, a.share, dict(a.settings)) for a in arms] == [("A", 70.0, {}),
                                                                   ("B", 30.0, {"doctor": False, "top_k": 4})]
    assert arms[1].settings_over(base).top_k == 4 and arms[0].settings_over(base) is base


@pytest.mark.parametrize("text, words", [
    ("embedder = 'e5'\n", ["embedder", "cannot change"]),
    ("llm = 'none'\n", ["llm", "cannot change"]),
    ("topk = 3\n", ["unknown setting", "topk"]),
    ("top_k = -1\n", ["top_k", "fix the value"]),
])
def test_an_arm_that_cannot_be_run_per_request_is_refused_with_the_reason(tmp_path, base, text, words):
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        arms_from(["A=", f"B={tmp_path / 'bad.toml'}"], None, base)
    assert all(w in str(e.value) for w in words)


@pytest.mark.parametrize("arms, share, words", [
    (["A="], None, "2 to 6 arms"),
    (["A=", "A="], None, "distinct"),
    (["A=", "B="], "50/40/10", "3 shares for 2 arms"),
    (["A=", "B="], "fifty/fifty", "numbers separated"),
    (["A=", "B=/no/such.toml"], None, "no settings file"),
    (["A", "B="], None, "NAME=settings.toml"),
])
def test_bad_designs_name_what_is_wrong(base, arms, share, words):
    with pytest.raises(ConfigError) as e:
        Design("exp", arms_from(arms, share, base))
    assert words in str(e.value)


def test_shares_are_normalised_to_percent():
    assert parse_share("1/3", 2) == [25.0, 75.0] and parse_share(None, 4) == [25.0] * 4
