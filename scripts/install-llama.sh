#!/usr/bin/env bash
# Builds llama-cpp-python portably and installs it into the given venv, never reusing a wheel built with
# other flags.
#
# - GGML_NATIVE=OFF: nothing depends on the build machine's CPU (-march=native switches on AMX kernels on
#   Sapphire/Granite Rapids, which crash in ggml_backend_amx_mul_mat, llama.cpp#20824).
# - GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: every x86-64 CPU variant is built as its own module and the best
#   one the CPU allows is chosen at load time (ragclinic loads them itself from llama_cpp/lib, see
#   ragclinic/models/runtime.py; strip_wheel.py moves them there from the wheel's bin/ folder). No
#   GGML_BACKEND_DIR: it would be compiled in as an extra search path. The AMX variant (sapphirerapids) is deleted from the wheel before it is
#   stored, so no install can load AMX kernels; AVX-512 variants (skylakex ... zen4) stay: measured faster
#   here (bench/RESULTS.md, "llama.cpp build variants").
# - The wheel is kept in $RAGCLINIC_WHEELS/llama-cpp-python-$VERSION-$TAG, TAG being a hash of the version,
#   the CMake flags and the compiler, and installed from there with --no-index: pip's own wheel cache (keyed
#   by version only) is never read for it, so a natively built wheel in it is never picked up.
set -euo pipefail

PY=${1:?usage: install-llama.sh VENV_PYTHON}
VERSION=0.3.36
CMAKE_FLAGS="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DLLAVA_BUILD=OFF \
 -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF"
EXCLUDE="sapphirerapids"   # variants that carry AMX kernels

# Flags that scikit-build-core or the compiler would also read (a -march=native in CFLAGS would give every
# variant the build machine's ISA, AMX included): the build runs without them.
unset CFLAGS CXXFLAGS CPPFLAGS SKBUILD_CMAKE_ARGS SKBUILD_CMAKE_DEFINE CMAKE_ARGS

CC_ID=$( (${CC:-cc} --version 2>/dev/null || echo unknown) | head -1)
STRIP_ID=$(sha256sum "$(dirname "$0")/strip_wheel.py" | cut -c1-16)
TAG=$(printf '%s\n%s\n%s\n%s\n%s\n' "$VERSION" "$CMAKE_FLAGS" "$EXCLUDE" "$CC_ID" "$STRIP_ID" | sha256sum | cut -c1-12)
ROOT=${RAGCLINIC_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ragclinic/wheels}
DIR="$ROOT/llama-cpp-python-$VERSION-$TAG"

have_wheel() { ls "$DIR"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; }

if ! have_wheel; then
  echo "building llama-cpp-python $VERSION (portable, all CPU variants; about 10 minutes on 2 cores, once per machine) into $DIR"
  mkdir -p "$ROOT"
  TMP=$(mktemp -d "$ROOT/.build-XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  CMAKE_ARGS="$CMAKE_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
      "llama-cpp-python==$VERSION" -w "$TMP/wheel"
  "$PY" "$(dirname "$0")/strip_wheel.py" "$TMP"/wheel/llama_cpp_python-*.whl --exclude "$EXCLUDE" \
    --flags "$CMAKE_FLAGS" --tag "$TAG"
  mkdir -p "$TMP/final" && mv "$TMP"/wheel/llama_cpp_python-*.whl "$TMP/final/"
  rm -rf "$DIR" && mv "$TMP/final" "$DIR"   # the folder appears whole or not at all
fi

# The wheel file itself, --isolated: no pip.conf / PIP_* find-links or index can offer another llama wheel.
"$PY" -m pip install --quiet --isolated --no-deps --force-reinstall "$DIR"/llama_cpp_python-"$VERSION"-*.whl
echo "llama-cpp-python $VERSION installed from $DIR"
