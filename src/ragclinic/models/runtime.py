"""Which llama.cpp CPU kernels run: ragclinic loads the CPU backend itself, never one with AMX kernels.

``scripts/install-llama.sh`` builds llama-cpp-python with ``GGML_BACKEND_DL`` and every x86-64 CPU variant
(``libggml-cpu-haswell.so``, ``-skylakex``, ``-icelake``, ``-zen4``, ...) next to ``libllama.so``, minus the
AMX one. Before the first model is created, :func:`load_cpu_backend` scores each variant with its own
``ggml_backend_score`` (0 when this CPU lacks a feature it needs), skips any variant compiled with AMX
(``ggml_cpu_has_amx_int8() == 1``: AMX kernels crash in ``ggml_backend_amx_mul_mat`` on some Sapphire/Granite
Rapids machines, llama.cpp#20824), and registers the best one. Because a backend is then registered,
llama.cpp's own search (the executable's folder and the current directory) never runs.

A build without variants (a plain ``pip install llama-cpp-python``: one ``libggml-cpu.so`` built for the
build machine) is refused when its CPU library was compiled with AMX; otherwise it is used as it is and
``ragclinic check`` reports that it was not built by ragclinic's set-up.
"""

from __future__ import annotations

import _ctypes
import ctypes
import importlib.util
import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from ragclinic.errors import ModelError

VARIANT_RE = re.compile(r"^libggml-cpu-([A-Za-z0-9_.]+)\.so$")
EXCLUDED = ("sapphirerapids",)  # variants whose kernels include AMX (checked by symbol too)
FIX = "run `make install` (rebuilds llama-cpp-python portably: scripts/install-llama.sh)"

_lock = threading.Lock()
_loaded: "CpuBackend | None" = None


@dataclass(frozen=True)
class CpuBackend:
    variant: str  # "zen4", "haswell", ..., or "builtin" (a build without variants)
    path: str
    score: int  # ggml's score for this CPU (higher: more features used); 0 for builtin
    candidates: dict  # variant -> score (0: this CPU cannot run it; -1: excluded, AMX)
    built_by_ragclinic: bool

    def to_json(self) -> dict:
        return asdict(self)


def lib_dir() -> Path:
    """``llama_cpp/lib`` of the installed llama-cpp-python (found without importing it)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"llama-cpp-python is not installed; {FIX}, or use --llm none")
    return Path(list(spec.submodule_search_locations)[0]) / "lib"


def build_info(directory: Path | None = None) -> dict | None:
    """What install-llama.sh recorded about the build (flags, variants kept and removed); None if absent."""
    try:
        return json.loads(((directory or lib_dir()) / "ragclinic-build.json").read_text())
    except (OSError, ValueError):
        return None


def variant_files(directory: Path) -> dict[str, Path]:
    return {m.group(1): p for p in sorted(directory.glob("libggml-cpu-*.so")) if (m := VARIANT_RE.match(p.name))}


def has_amx(lib: ctypes.CDLL) -> bool:
    """Whether the CPU library was compiled with AMX kernels; one that cannot say is treated as having them."""
    fn = getattr(lib, "ggml_cpu_has_amx_int8", None)
    if fn is None:
        return True
    fn.restype = ctypes.c_int
    return bool(fn())


def lib_file(directory: Path, stem: str) -> Path:
    """The copy of ``stem`` (``libggml``, ``libggml-base``) that libllama links against.

    A wheel holds ``libggml.so``, ``libggml.so.0`` and ``libggml.so.0.25.3`` as separate files (zip has no
    symlinks), and opening another copy than the loaded one gives a second ggml whose backend registry
    libllama never sees. So: the copy already mapped into this process, else the soname file (``.so.N``)."""
    mapped = [p for p in _mapped() if re.fullmatch(re.escape(stem) + r"\.so(\.\d+)*", p.name)]
    if mapped:
        if mapped[0].parent != directory:  # LD_LIBRARY_PATH / LLAMA_CPP_LIB_PATH brought in another build
            raise ModelError(f"this process runs {mapped[0]}, not the llama.cpp build in {directory}; unset "
                             f"LD_LIBRARY_PATH / LLAMA_CPP_LIB_PATH, or {FIX}")
        return mapped[0]
    versioned = sorted(directory.glob(f"{stem}.so.*"), key=lambda p: len(p.name))
    return versioned[0] if versioned else directory / f"{stem}.so"


def _mapped() -> list[Path]:
    """Files mapped into this process (Linux); empty where /proc is missing."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    return list(dict.fromkeys(Path(ln.split()[-1]) for ln in lines if ln.rstrip().split()[-1].startswith("/")))


def load_base(directory: Path) -> None:
    """libggml-base, which the variant modules link against (they carry no rpath), loaded globally first."""
    if not any(directory.glob("libggml-base.so*")):
        return
    ctypes.CDLL(str(lib_file(directory, "libggml-base")), mode=ctypes.RTLD_GLOBAL)


def score_variants(directory: Path) -> dict[str, int]:
    """ggml's own score of each variant on this CPU; -1 for the excluded (AMX) ones."""
    scores = {}
    load_base(directory)
    for name, path in variant_files(directory).items():
        if any(x in name for x in EXCLUDED):
            scores[name] = -1
            continue
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            scores[name] = 0
            continue
        scores[name] = _score(lib)
        _ctypes.dlclose(lib._handle)  # as ggml does after scoring; the chosen one is opened again to load it
    return scores


def _score(lib: ctypes.CDLL) -> int:
    if has_amx(lib):
        return -1
    fn = getattr(lib, "ggml_backend_score", None)
    if fn is None:
        return 0
    fn.restype = ctypes.c_int
    return int(fn())


def choose(scores: dict[str, int], forced: str = "") -> str:
    """The variant to load: ``forced`` if given (and allowed), else the highest score."""
    if forced:
        if forced not in scores:
            raise ModelError(f"llm_cpu_variant {forced!r} is not installed; installed: {', '.join(sorted(scores))}")
        if scores[forced] < 0:
            raise ModelError(f"llm_cpu_variant {forced!r} carries AMX kernels and is never loaded")
        if scores[forced] == 0:
            raise ModelError(f"llm_cpu_variant {forced!r} needs CPU features this machine lacks; "
                             f"usable here: {', '.join(v for v, s in sorted(scores.items()) if s > 0)}")
        return forced
    usable = {v: s for v, s in scores.items() if s > 0}
    if not usable:
        raise ModelError(f"no llama.cpp CPU variant runs on this CPU (scores {scores}); it needs at least "
                         f"SSE4.2; {FIX}")
    return max(sorted(usable), key=lambda v: usable[v])


def load_cpu_backend(forced: str = "") -> CpuBackend:
    """Register llama.cpp's CPU backend once per process (before the first model); returns what runs."""
    global _loaded
    with _lock:
        if _loaded is not None:
            if forced and forced != _loaded.variant:
                raise ModelError(f"this process already runs the {_loaded.variant!r} CPU variant")
            return _loaded
        directory = lib_dir()
        import llama_cpp  # noqa: F401  # on use: loads libllama, libggml and libggml-base (not the CPU backend)

        built = build_info(directory) is not None
        variants = variant_files(directory)
        if not variants:
            _loaded = _builtin(directory, built)
            return _loaded
        scores = score_variants(directory)
        name = choose(scores, forced)
        ggml = ctypes.CDLL(str(lib_file(directory, "libggml")))
        ggml.ggml_backend_load.restype = ctypes.c_void_p
        ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
        if not ggml.ggml_backend_load(str(variants[name]).encode()):
            raise ModelError(f"llama.cpp could not load its CPU backend {variants[name]}; {FIX}")
        _loaded = CpuBackend(name, str(variants[name]), scores[name], scores, built)
        return _loaded


def _builtin(directory: Path, built: bool) -> CpuBackend:
    path = directory / "libggml-cpu.so"
    if path.exists():
        try:
            amx = has_amx(ctypes.CDLL(str(path)))
        except OSError as e:
            raise ModelError(f"cannot load {path}: {e}; {FIX}") from e
        if amx:
            raise ModelError(f"this llama-cpp-python build has AMX kernels ({path}: built with -march=native "
                             f"on a CPU with AMX), which crash llama.cpp on some CPUs; {FIX}")
    return CpuBackend("builtin", str(path), 0, {}, built)


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine
