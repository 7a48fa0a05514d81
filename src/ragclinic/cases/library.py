"""``Cases``: one knowledge base's failed answers — filed from ratings and the doctor, listed, shown, given an
expected answer, diagnosed in bulk by the debugger (which layer broke, how often, the fix ``diagnose --apply`` would
make and its side effects on the other cases), exported as an evaluation set (``eval --dataset cases:KB``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragclinic.debugger import Expectation
from ragclinic.errors import RagclinicError
from ragclinic.store import cases as records
from ragclinic.store.experiments import enforced_json
from ragclinic.trace.model import Trace
from ragclinic.trace.owner import enforced_of
from ragclinic.trace.store import load_trace

UNLOCALISED = "unlocalised"  # no expected answer and no symptom: the table's row for cases nothing could place


class NoCase(RagclinicError):
    """An id that names no case of this knowledge base (or none the caller's tenant may see)."""


class Cases:
    """``diagnose``: the Clinic's ``diagnose`` (the debugger over this knowledge base's pipeline)."""

    def __init__(self, db, diagnose: Callable[..., Any] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.db, self._diagnose, self.clock = db, diagnose, clock

    # ------------------------------------------------------------------ filing
    def file(self, trace: Trace, *, source: str = "rating", comment: str = "", expected: Sequence[str] = (),
             expect_refusal: bool = False) -> int:
        """The case of ``trace`` (filed, or added to: one case per trace) → its id. ``expected``: the answer that
        would have been right (alternatives); ``expect_refusal``: the documents do not answer it."""
        _check(expected, expect_refusal)
        answer = trace.final or {}
        return records.upsert(self.db, {
            "trace_id": trace.id, "created": self.clock(), "source": source, "question": trace.query,
            "answer": str(answer.get("answer", "")), "refused": bool(answer.get("refused")), "comment": comment,
            "expected": [e for e in expected if e.strip()], "expect_refusal": expect_refusal,
            "enforced": enforced_json(enforced_of(trace)),
            "arm": "/".join(str(trace.experiment[k]) for k in ("name", "arm")) if trace.experiment else ""})

    def expect(self, case_id: int, expected: Sequence[str] = (), enforced: dict[str, str] | None = None, *,
               refusal: bool = False) -> dict:
        """Give a case the answer that would have been right (accepted alternatives), or say it should have been
        refused (``refusal``: the documents do not answer it) → the case."""
        self.show(case_id, enforced)
        texts = [e for e in expected if e.strip()]
        if not texts and not refusal:
            raise RagclinicError("give the expected answer's text (one or more accepted alternatives), or say the "
                                 "answer should have been a refusal (--refusal)")
        _check(texts, refusal)
        records.set_expected(self.db, case_id, texts, refusal)
        return self.show(case_id, enforced)

    # ------------------------------------------------------------------ reading
    def listed(self, *, enforced: dict[str, str] | None = None, source: str | None = None,
               limit: int = 1000) -> list[dict[str, Any]]:
        """Newest first; ``enforced``: a tenant's tags — only its own cases."""
        if source not in (None, "rating", "doctor"):
            raise RagclinicError(f"source {source!r}: rating or doctor")
        cases = records.listed(self.db, enforced=enforced_json(enforced) if enforced is not None else None,
                               source=source, limit=limit)
        return [tenant_view(c) for c in cases] if enforced is not None else cases

    def show(self, case_id: int, enforced: dict[str, str] | None = None) -> dict[str, Any]:
        case = records.get(self.db, int(case_id)) if 0 < int(case_id) < 2 ** 63 else None  # SQLite's integers
        if case is None or (enforced is not None and case["enforced"] != dict(enforced)):
            raise NoCase(f"no case {case_id} in this knowledge base; `ragclinic cases list` shows them")
        return tenant_view(case) if enforced is not None else case

    # ------------------------------------------------------------------ the debugger over them
    def diagnose(self, ids: Iterable[int] | None = None, *, apply: bool = False, limit: int | None = None,
                 on_progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Each case localised: by the debugger when it has an expected answer (its verdict layer, evidence and
        fixes; ``apply``: the fix carried out on a copy and every other case with an expected answer re-asked for
        side effects), else by the doctor's symptoms on its trace, else left unlocalised. Each diagnosis is kept on
        its case. → {"cases": [...], "layers": {layer: count}, "fixes": [...]}."""
        if self._diagnose is None:
            raise RagclinicError("this case library has no debugger (open it through the Clinic)")
        cases = [self.show(i) for i in ids] if ids else list(reversed(self.listed()))
        cases = cases[:limit] if limit else cases
        others = [(c["question"], _expectation(c)) for c in self.listed() if _expectation(c) is not None]
        out = []
        for n, case in enumerate(cases, start=1):
            found = self._one(case, apply, [o for o in others if o[0] != case["question"]])
            records.set_diagnosis(self.db, case["id"], found, self.clock())
            out.append({"id": case["id"], "question": case["question"], **found})
            if on_progress:
                on_progress(n, len(cases))
        return {"cases": out, "layers": dict(Counter(c["layer"] for c in out).most_common()),
                "fixes": _fixes(out)}

    def _one(self, case: dict[str, Any], apply: bool, others: list) -> dict[str, Any]:
        if (expect := _expectation(case)) is not None:
            d = self._diagnose(trace_id=case["trace_id"], expect=expect, apply=apply,
                               eval_set=others if apply else (), rebuild=False)
            j = d.to_json()
            found = {"layer": d.verdict, "by": "debugger", "why": d.suggestion, "answer_right": d.answer_right,
                     "fixes": j["fixes"]}
            if "applied" in j:
                found["applied"] = j["applied"]
            return found
        symptoms = load_trace(self.db, case["trace_id"], exact=True).symptoms
        if symptoms:
            top = max(symptoms, key=lambda s: s.score)
            return {"layer": top.layer or UNLOCALISED, "by": "doctor", "why": f"{top.name}: {top.evidence}",
                    "answer_right": None, "fixes": []}
        return {"layer": UNLOCALISED, "by": "", "answer_right": None, "fixes": [],
                "why": f"no expected answer and no symptom: give one (`ragclinic cases expect {case['id']} TEXT`, or "
                       "--refusal when the documents do not answer it)"}

    # ------------------------------------------------------------------ export
    def export(self, *, enforced: dict[str, str] | None = None, with_unexpected: bool = False) -> list[dict]:
        """The cases as evaluation records (the ``jsonl`` dataset's fields, and ``trace_id``, ``comment``, ``case``):
        those with an expected answer (``with_unexpected``: the others too, with ``answers`` empty)."""
        out = []
        for c in reversed(self.listed(enforced=enforced)):
            if c["expected"] or c["expect_refusal"] or with_unexpected:
                out.append({"id": f"case-{c['id']}", "question": c["question"], "answers": c["expected"],
                            "expect_refusal": c["expect_refusal"],
                            "case": c["id"], "trace_id": c["trace_id"], "comment": c["comment"],
                            "rejected_answer": c["answer"], "source": c["source"], "arm": c["arm"]})
        return out


def _expectation(case: dict[str, Any]) -> Expectation | None:
    """What would have been right for a case: its expected answer, a refusal, or nothing known (None)."""
    if case["expect_refusal"]:
        return Expectation(expect_refusal=True)
    return Expectation((tuple(case["expected"]),)) if case["expected"] else None


def _check(expected: Sequence[str], refusal: bool) -> None:
    if refusal and any(e.strip() for e in expected):
        raise RagclinicError("a case expects an answer or a refusal, not both: drop the expected text or the refusal")


def _fixes(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixes the diagnoses propose, each with the cases it would fix and (after ``apply``) what it did."""
    by: dict[str, dict[str, Any]] = {}
    for c in found:
        for f in c.get("fixes", ())[:1]:  # the first fix is what `diagnose --apply` tries
            key = f.get("what") or str(f)
            entry = by.setdefault(key, {"fix": f, "layer": c["layer"], "cases": [], "applied": []})
            entry["cases"].append(c["id"])
            if "applied" in c:
                entry["applied"].append({"case": c["id"], **c["applied"]})
    return sorted(by.values(), key=lambda e: -len(e["cases"]))


def tenant_view(case: dict[str, Any]) -> dict[str, Any]:
    """A case as its tenant reads it. An applied fix was tried by the admin over the whole knowledge base: its
    answers, and the other cases' questions and answers its side effects re-asked, may come from any tenant's
    documents, so the tenant gets the verdict, each fix and whether it worked, and the side effects' counts."""
    diagnosis = case.get("diagnosis") or {}
    applied = diagnosis.get("applied")
    if not applied:
        return case
    applied = {**applied,
               "attempts": [{k: v for k, v in a.items() if k not in ("answer", "trace_id", "error")}
                            for a in applied.get("attempts", [])],
               "side_effects": {k: v for k, v in (applied.get("side_effects") or {}).items() if k != "rows"}}
    return {**case, "diagnosis": {**diagnosis, "applied": applied}}
