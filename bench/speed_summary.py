"""Speed figures of `eval rag --arms naive,plain,doctor` runs side by side (issue 14): per noise setting and arm,
accuracy (answer present) or refusal (negative-only), median seconds, time to first token, prompt tokens given
and evaluated; the plain and doctor medians as a multiple of the naive peer's in the same run; a projection of
100 cases with the doctor (mean seconds of the plain and doctor arms per case); how many answers took the
doctor's fast path (read from each case's root trace) and how many of those were right.

    python bench/speed_summary.py bench/out/eval/rgb-speed-before bench/out/eval/rgb-speed-after2
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from output import emit  # noqa: E402

ARMS = ("naive", "baseline", "doctor")


def _med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 1) if xs else None


def summary(rows: list[dict]) -> dict:
    out: dict = {}
    for setting in sorted({r["setting"] for r in rows}):
        sub = [r for r in rows if r["setting"] == setting]
        per = {}
        for arm in ARMS:
            arms = [(r, r[arm]) for r in sub if r.get(arm)]
            if not arms:
                continue
            ok = [a["refused"] if r["expect_refusal"] else a["correct"] for r, a in arms]
            per[arm] = {"n": len(arms), "right": round(sum(ok) / len(ok), 3), "p50_s": round(_med(a["ms"] for _, a in arms) / 1000, 2),
                        "p50_ttft_s": (lambda v: round(v / 1000, 2) if v else None)(_med(a.get("ttft_ms") for _, a in arms)),
                        "p50_prompt_tokens": _med(a.get("prompt_tokens") for _, a in arms),
                        "p50_prompt_evaluated": _med(a.get("prompt_evaluated") for _, a in arms)}
        if "naive" in per:
            for arm in ("baseline", "doctor"):
                if arm in per:
                    per[arm]["x_naive_p50"] = round(per[arm]["p50_s"] / per["naive"]["p50_s"], 2)
        out[setting] = per
    both = [r for r in rows if r.get("baseline") and r.get("doctor")]
    if both:
        out["per_case_mean_s"] = {"plain": round(statistics.mean(r["baseline"]["ms"] for r in both) / 1000, 2),
                                  "doctor": round(statistics.mean(r["doctor"]["ms"] for r in both) / 1000, 2)}
        out["projected_100_cases_with_doctor_min"] = round(100 * out["per_case_mean_s"]["doctor"] / 60, 1)
    return out


def fast_path(rows: list[dict], folder: Path) -> dict:
    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase
    from ragclinic.trace.store import load_trace

    took, right, by = 0, 0, {}
    for r in rows:
        if not (r.get("doctor") and r.get("kb")):
            continue
        where = Path(r["kb"])
        if not where.exists():  # the run's folder was moved: its kbs/ came along
            where = folder / "kbs" / where.parent.name / "kb"
        kb = KnowledgeBase.open(Settings.load(where), sync_indexes=False)
        try:
            note = (load_trace(kb.db, r["doctor"]["trace_id"]).doctor or {}).get("fast_path", "")
        finally:
            kb.close()
        if note:
            ok = bool(r["doctor"]["refused"] if r["expect_refusal"] else r["doctor"]["correct"])
            took, right = took + 1, right + ok
            s = by.setdefault(r["setting"], {"fast_path": 0, "right": 0, "keys": []})
            s["fast_path"], s["right"] = s["fast_path"] + 1, s["right"] + ok
            s["keys"].append(r["key"] + ("" if ok else " (wrong)"))
    return {"fast_path": took, "fast_path_right": right, "cases": sum(1 for r in rows if r.get("doctor")),
            "by_setting": by}


def main() -> None:
    result = {}
    for d in sys.argv[1:]:
        rows = [json.loads(x) for x in (Path(d) / "items.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
        result[d] = {**summary(rows), "doctor_fast_path": fast_path(rows, Path(d))}
    emit(result, None)


if __name__ == "__main__":
    main()
