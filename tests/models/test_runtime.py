"""llama.cpp's CPU backend as ragclinic loads it: the best variant this CPU runs, never one with AMX kernels."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from ragclinic.errors import ModelError
from ragclinic.models import runtime

EVIL_C = textwrap.dedent("""
    int ggml_cpu_has_amx_int8(void) { return 1; }
    int ggml_backend_score(void) { return 1000000; }
""")


def test_choose_takes_the_highest_score_and_never_an_excluded_or_unusable_variant():
    scores = {"haswell": 10, "zen4": 40, "sapphirerapids": -1, "evil": -1, "x64": 1, "avx10": 0}
    assert runtime.choose(scores) == "zen4"
    assert runtime.choose(scores, "haswell") == "haswell"
    with pytest.raises(ModelError, match="carries AMX kernels"):
        runtime.choose(scores, "sapphirerapids")
    with pytest.raises(ModelError, match="needs CPU features this machine lacks"):
        runtime.choose(scores, "avx10")
    with pytest.raises(ModelError, match="not installed; installed:"):
        runtime.choose(scores, "nehalem")
    with pytest.raises(ModelError, match="no llama.cpp CPU variant runs on this CPU"):
        runtime.choose({"sapphirerapids": -1, "zen4": 0})


def test_a_variant_compiled_with_amx_is_excluded_whatever_its_name_or_score(tmp_path):
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    src = tmp_path / "evil.c"
    src.write_text(EVIL_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libggml-cpu-zzz.so"), str(src)], check=True)
    shutil.copy(tmp_path / "libggml-cpu-zzz.so", tmp_path / "libggml-cpu-sapphirerapids.so")
    scores = runtime.score_variants(tmp_path)
    assert scores == {"zzz": -1, "sapphirerapids": -1}
    with pytest.raises(ModelError):
        runtime.choose(scores)


def test_the_installed_build_is_ragclinics_and_has_no_amx_variant():
    directory = runtime.lib_dir()
    build = runtime.build_info(directory)
    assert build is not None, "llama-cpp-python was not installed by scripts/install-llama.sh"
    assert "-DGGML_NATIVE=OFF" in build["cmake_flags"] and "sapphirerapids" in build["removed"]
    files = runtime.variant_files(directory)
    runtime.load_base(directory)
    assert "haswell" in files and not any("sapphirerapids" in v for v in files)
    for name, path in files.items():
        assert not runtime.has_amx(ctypes.CDLL(str(path))), name


def test_the_process_maps_exactly_the_chosen_variant_and_it_is_the_fastest_this_cpu_runs():
    # In a fresh process: a process registers its CPU backend only once.
    code = ("import json; from ragclinic.models import runtime; b = runtime.load_cpu_backend(); "
            "maps = [p.name for p in runtime._mapped() if p.name.startswith('libggml-cpu')]; "
            "print(json.dumps({'backend': b.to_json(), 'maps': maps}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    b = got["backend"]
    assert got["maps"] == [f"libggml-cpu-{b['variant']}.so"]  # the scored ones were closed again; no AMX one
    assert b["built_by_ragclinic"] and b["score"] > 0
    flags = runtime.cpu_flags()
    if {"avx512f", "avx512_vnni", "avx512_bf16", "avx512vbmi"} <= flags:  # Zen 4, Sapphire Rapids, ...
        assert b["variant"] == "zen4"  # the widest variant llama.cpp builds without AMX
    elif {"avx2", "fma", "f16c"} <= flags and "avx512f" not in flags:
        assert b["variant"] in ("haswell", "alderlake")
