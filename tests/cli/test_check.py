"""`ragclinic check`: the JSON contract and exit codes (with stand-in checks), each real check's failure
message, and — slow — the real install passing every check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ragclinic.clinic import health
from ragclinic.cli.main import app


def _fake_checks(fail: bool):
    def good(_s):
        return "fine"

    def bad(_s):
        raise health.CheckFailed("the widget is missing; run `make install`")

    def broken(_s):
        raise OSError("disk on fire")

    return lambda _settings: [("one", good), ("two", bad if fail else good), ("three", broken if fail else good)]


def test_json_contract_and_exit_code_0_when_every_check_passes(monkeypatch):
    monkeypatch.setattr(health, "checks_for", _fake_checks(False))
    r = CliRunner().invoke(app, ["check", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["ok"] is True and [c["name"] for c in got["checks"]] == ["one", "two", "three"]
    assert all(set(c) == {"name", "ok", "detail", "seconds"} for c in got["checks"])


def test_a_failed_check_exits_1_names_the_fix_and_the_rest_still_run(monkeypatch):
    monkeypatch.setattr(health, "checks_for", _fake_checks(True))
    r = CliRunner().invoke(app, ["check", "--json"])
    assert r.exit_code == 1
    got = json.loads(r.stdout)
    assert got["ok"] is False
    by = {c["name"]: c for c in got["checks"]}
    assert by["one"]["ok"] and not by["two"]["ok"] and "make install" in by["two"]["detail"]
    assert not by["three"]["ok"] and "disk on fire" in by["three"]["detail"] and "make install" in by["three"]["detail"]
    table = CliRunner().invoke(app, ["check"])
    assert table.exit_code == 1 and "FAIL" in table.output and "2 check(s) failed" in table.output


def test_the_weights_check_fails_on_a_corrupt_file_and_names_the_fix(tmp_path, monkeypatch):
    from ragclinic.config import Settings
    from ragclinic.models import weights

    spec = weights.WeightSpec("tiny", "tiny model", "tiny.gguf", "no-such-part", "0", 1, "0" * 64)
    monkeypatch.setitem(weights.WEIGHTS, "tiny", spec)
    target = tmp_path / "models" / "tiny.gguf"
    target.parent.mkdir()
    target.write_bytes(b"not the model")
    monkeypatch.setattr(weights, "weights_path", lambda s, c: target)
    with pytest.raises(health.CheckFailed, match="delete it and reinstall no-such-part1..1==0"):
        health.check_weights("tiny")(Settings.load(tmp_path / "kb", cache_dir=tmp_path))


def test_the_packages_check_names_a_wrong_version(monkeypatch):
    monkeypatch.setattr(health, "_requirements", lambda: [("numpy", "==", "0.0.1"), ("no-such-dist", "", "")])
    with pytest.raises(health.CheckFailed, match=r"missing: no-such-dist; wrong version: numpy .* \(needs 0.0.1\)"):
        health.check_packages(None)


def test_the_llama_build_check_fails_for_a_build_not_made_by_ragclinic(monkeypatch, tmp_path):
    from ragclinic.config import Settings
    from ragclinic.models import runtime

    monkeypatch.setattr(runtime, "lib_dir", lambda: tmp_path)
    with pytest.raises(health.CheckFailed, match="not built by ragclinic's set-up.*make install"):
        health.check_llama_build(Settings.load(tmp_path / "kb", cache_dir=tmp_path))


@pytest.mark.slow
def test_the_real_install_passes_every_check(tmp_path):
    """What `make demo` runs first: the real models, the real worker, a tiny KB answered offline."""
    exe = os.path.join(os.path.dirname(sys.executable), "ragclinic")
    env = {**os.environ, "RAGCLINIC_KB": str(tmp_path / "unused-kb")}
    p = subprocess.run([exe, "check", "--json"], capture_output=True, text=True, timeout=1200, env=env)
    got = json.loads(p.stdout)
    assert p.returncode == 0 and got["ok"], json.dumps(got, indent=1)
    names = [c["name"] for c in got["checks"]]
    assert names[:3] == ["python", "packages", "llama.cpp build"] and "offline answer" in names
    assert {"weights local", "model local", "embedder e5", "verifier"} <= set(names)
    by = {c["name"]: c for c in got["checks"]}
    assert "variant in use" in by["llama.cpp build"]["detail"] and "answered by local" in by["offline answer"]["detail"]
