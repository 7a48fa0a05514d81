"""The doctor: perceive → route → treat → verify → accept, within a budget.

``Doctor.ask`` runs the plain pipeline (the baseline answer), examines the run with the detectors (rules
first; higher tiers only for unsure findings that could matter), and — unless the run is healthy — tries
the router's changes through ``Pipeline.rerun`` from the layer each change feeds. A treated answer
replaces the current one only when its verified confidence is higher and it shows no new symptom. Every
symptom and treatment is written to the root trace (all re-runs share its debug_round_id).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragclinic.doctor import detectors  # noqa: F401  (registers the built-in detectors)
from ragclinic.doctor import forecast, refusal
from ragclinic.doctor.budget import Budget, BudgetExceeded, LimitedModel
from ragclinic.doctor.router import plan
from ragclinic.doctor.symptoms import DETECTORS, TIERS, Exam
from ragclinic.doctor.verify import dropped_evidence, judge_better, present, verified_confidence
from ragclinic.pipeline.gate import is_model_judge
from ragclinic.pipeline.gate import evidence_threshold
from ragclinic.errors import ModelCrashed
from ragclinic.models.judge import Judge
from ragclinic.pipeline.gate import render
from ragclinic.text.lang import language_of
from ragclinic.pipeline.request import Hooks, as_request
from ragclinic.pipeline.runner import Pipeline
from ragclinic.pipeline.scope import removal_places
from ragclinic.trace.model import Trace
from ragclinic.trace.store import save_trace
from ragclinic.types import Answer, AskRequest, AskState, Repair, Snapshot, Symptom

_GENERATION = {"unsupported_claim", "contradicted_claim", "ignored_context", "self_contradiction", "off_topic"}
# What the fast path does not treat: symptoms about the context's noise and the retrieval's reach, which an
# answer that a verifier found sufficient and supported has already got past (docs/doctor.md). Everything else —
# injection, conflicts, false premises, unsupported or contradicted claims, a missing part of a compound
# question — is treated in the fast band too.
_SKIPPABLE = {"noisy_context", "low_relevance", "homogeneous_context", "term_mismatch"}
_RETRIED = ("answer_regenerated", "answer_unsupported", "generator_declined", "violation", "invalid_citation",
            "unsupported_citation", "llm_crashed")


@dataclass
class Visit:
    """One run of the pipeline as the doctor sees it."""

    state: AskState
    trace: Trace
    symptoms: list[Symptom]
    score: float
    notes: tuple[str, ...] = ()  # what the change that drafted this answer says beside it (Answer.notes)

    @property
    def answer(self) -> Answer:
        return self.state.answer


@dataclass(frozen=True)
class DoctorResult:
    answer: Answer
    initial: Answer
    symptoms: tuple[Symptom, ...]  # as found, each with the round that found it
    repairs: tuple[Repair, ...]
    trace: Trace  # the root trace (baseline run + the doctor's record)
    summary: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The `ask --json` object: the answer's fields plus symptoms, repairs and the initial answer."""
        return {**self.answer.to_json(), "trace_id": self.trace.id, "symptoms": [x.to_json() for x in self.symptoms],
                "repairs": [r.to_json() for r in self.repairs], "initial_answer": self.initial.to_json(), "doctor": self.summary}


class Doctor:
    def __init__(self, pipeline: Pipeline, *, interactive: bool = False) -> None:
        self.pipe = pipeline
        self.settings = pipeline.settings
        self.interactive = interactive
        self.forecaster = forecast.load(pipeline.settings.kb, pipeline.settings.doctor_forecast)

    # ------------------------------------------------------------------ public
    def ask(self, request: AskRequest | str, scope_pairs: dict[str, str] | None = None, *,
            hooks: Hooks | None = None, **loose) -> DoctorResult:
        """The plain run of ``request`` (``Pipeline.ask``: the same request and hooks, or a question's text with
        loose arguments), then ``treat``."""
        request, hooks = as_request(self.settings, request, scope_pairs, hooks, loose)
        state, trace = self.pipe.ask(request, hooks=hooks)
        return self.treat(state, trace)

    def treat(self, state: AskState, trace: Trace) -> DoctorResult:
        """Examine a finished run and repair it round by round; the root trace records everything."""
        s = self.settings
        care = refusal.assess(state, s.doctor_refusal_coverage) if refusal.is_refusal(state.answer) else None
        budget = Budget(s.doctor_max_rounds, s.doctor_max_lm_calls, s.doctor_max_seconds) if care is None else \
            Budget(s.doctor_max_rounds, s.doctor_max_lm_calls, min(s.doctor_max_seconds, s.doctor_refusal_budget_s),
                   "doctor_refusal_budget_s")
        crashed = [f for f in state.answer.flags if f.startswith("llm_crashed")]  # repairs then run without it
        lm = LimitedModel(self.pipe.lm, budget) if self.pipe.lm is not None and not crashed else None
        told = self.forecaster.predict(_before_generation(state, trace)) if self.forecaster is not None else None
        fast = self.confident(state)
        if told is not None and care is None and not fast and state.answer.route == "answer":
            fast = forecast.healthy(told, s.doctor_forecast_skip)
        if told is not None and care is not None and (reach := forecast.refusal_reach(told, s)) is not None:
            care = refusal.RefusalCare(reach, f"the forecast ({told.model}): {told.said()}")
        sess = _Session(self, budget, lm, self._judge(lm), care, told)
        stop, crash = "", ""
        try:
            sess.current = sess.initial = self._visit(state, trace, budget, sess.judge)
            if fast:
                sess.fast_path(fast)
        except ModelCrashed as e:  # the examination's judge died: rules only, and no repairs
            sess = _Session(self, budget, None, None, care, told)
            sess.current = sess.initial = self._visit(state, trace, budget, None)
            stop, crash = "model crashed", e.reason
        sess.note_symptoms(0)
        stop = stop or ("healthy" if not sess.found else "")
        for rnd in range(1, s.doctor_max_rounds + 1):
            if stop:
                break
            try:
                stop = sess.round(rnd)
            except ModelCrashed as e:  # a repair's model call died: keep the best answer so far
                stop, crash = "model crashed", e.reason
        current = sess.current
        answer = self._finish(current)
        if crash:
            crashed.append(f"llm_crashed: {crash}; the doctor stopped and kept the answer it had")
        answer = replace(answer, flags=answer.flags + tuple(f for f in crashed if f not in answer.flags))
        summary = {"outcome": stop or "rounds used", "answer_trace_id": current.trace.id, "fast_path": sess.fast_note,
                   "initial_confidence": sess.initial.score, "final_confidence": current.score, **budget.summary()}
        if care is not None:  # a refusal: how its retrieval went, and what was not tried and why
            summary.update(refusal=care.to_json(), skipped=sess.skipped)
        if told is not None:
            summary["forecast"] = told.to_json()
        root = replace(trace, symptoms=tuple(sess.found), repairs=tuple(sess.repairs), doctor=summary)
        save_trace(self.pipe.kb.db, root)
        return DoctorResult(replace(answer, trace_id=root.id), sess.initial.answer, tuple(sess.found),
                            tuple(sess.repairs), root, summary)

    def confident(self, state: AskState) -> str:
        """Why the answer is in the fast band ('' when it is not): a verifier (not word overlap) gives its best
        passage P ≥ ``doctor_fast_evidence``, every claim is supported, no conflict was marked and nothing was
        retried or withdrawn."""
        a, d, s = state.answer, state.decision, self.settings
        if a is None or d is None or a.route != "answer" or not a.claims or state.conflicts:
            return ""
        best = max(state.passages, key=lambda p: p.support, default=None)
        if best is None or best.support_by in ("", "lexical") or best.support < s.doctor_fast_evidence:
            return ""
        if any(c.verdict != "supported" for c in a.claims) or any(f.startswith(_RETRIED) for f in a.flags):
            return ""
        return f"[{best.n}] P={best.support:.2f} by {best.support_by}, {len(a.claims)}/{len(a.claims)} claims supported"

    # ------------------------------------------------------------------ examination
    def examine(self, state: AskState, trace: Trace, judge: Judge | None = None, budget: Budget | None = None
                ) -> list[Symptom]:
        """Every detector at the rules tier; unsure findings at or above ``doctor_escalate_floor`` are asked
        again with the e5 tier, then the judge tier (while the budget allows)."""
        s = self.settings
        exam = self._exam(state, trace, judge, budget, "rules")
        found: dict[str, Symptom] = {}
        dets = {name: DETECTORS.create(name) for name in DETECTORS.names()}
        for name, det in dets.items():
            if (sym := det.detect(exam)) is not None:
                found[name] = sym
        for tier in TIERS[1:]:
            exam.tier = tier
            for name, sym in list(found.items()):
                det = dets[name]
                if sym.sure or sym.score < s.doctor_escalate_floor or TIERS.index(det.tier) < TIERS.index(tier):
                    continue
                if not exam.allows(tier):
                    continue
                try:
                    again = det.detect(exam)
                except BudgetExceeded:
                    continue  # the budget ended mid-escalation: the cheaper tier's finding stands
                if again is not None:
                    found[name] = again
        return list(found.values())

    def _visit(self, state: AskState, trace: Trace, budget: Budget, judge: Judge | None) -> Visit:
        symptoms = self.examine(state, trace, judge, budget)
        evidence = state.decision.evidence_score if state.decision else 0.0
        return Visit(state, trace, symptoms,
                     verified_confidence(state.answer, evidence, symptoms, self.settings.doctor_threshold))

    def _exam(self, state, trace, judge, budget, tier) -> Exam:
        return Exam(state, trace, self.pipe.kb, self.settings, judge, budget, tier, self.interactive)

    def _judge(self, lm) -> Judge | None:
        judge = self.pipe.judge_for(lm)
        return judge if is_model_judge(judge) else None

    # ------------------------------------------------------------------ outcome
    def _finish(self, current: Visit) -> Answer:
        """The answer with the notes the user must see beside it (Answer.notes, in the question's language; the
        text holds only the answer): quarantined passages, removed or hidden instructions, an answer resting on an
        injected passage, a global question answered from chunks, and what the budget could not repair."""
        a, s, q = current.answer, self.settings, current.state.request.question
        flags, notes = list(a.flags), []
        present_ = present(current.symptoms, s.doctor_threshold)
        if a.route != "clarify":
            notes += self._safety_notes(current, present_, flags)
        partial = [x for x in present_ if x.name == "global_no_community"]
        if partial and a.route != "clarify":  # top-k chunks cannot speak for a collection: say so, and the fix
            fix = partial[0].data.get("fix", "fix_no_graph")
            notes.append(render("global_partial", q, fix=render(fix, q)))
            flags.append(f"global_no_community: {partial[0].evidence[:120]}")
        weak = [x.name for x in present_ if x.name in _GENERATION]
        if weak and a.route == "answer":
            if s.doctor_weak_answer == "refuse":  # the treatment's notes were about the answer refused here
                return replace(a, text=render("no_evidence", q), route="refuse", refused=True, claims=(),
                               citations=(), flags=tuple(flags + [f"doctor_refused: {', '.join(weak)}"]),
                               notes=_unique(a.notes, notes))
            notes.append(render("incomplete", q))
            flags.append(f"doctor_unrepaired: {', '.join(weak)}")
        return replace(a, flags=tuple(flags), notes=_unique(a.notes, current.notes, notes))

    def _safety_notes(self, current: Visit, present_: list[Symptom], flags: list[str]) -> list[str]:
        """Notes (and flags) on instructions to the assistant: passages set aside, instructions cut out or hidden,
        and an answer that still rests on an injected passage. Places are named, never quoted: quoting would
        deliver the payload."""
        a, q, excluded = current.answer, current.state.request.question, current.state.excluded
        zh, notes = language_of(q) == "zh", []
        quarantined = [e for e in excluded if e.rule in ("quarantine", "instruction")]
        if quarantined:
            docs = self.pipe.kb.db.doc_infos([e.doc_id for e in quarantined])
            titles = ", ".join(dict.fromkeys(_doc_name(docs.get(e.doc_id), e.doc_id) for e in quarantined))
            notes.append(render("quarantined", q, k=str(len(quarantined)), titles=titles))
            flags.append(f"quarantined: {len(quarantined)} passage(s) with instructions to the assistant")
        removed = removal_places([e for e in excluded if e.rule == "instruction_removed"], language_of(q))
        if removed:
            notes.append(render("instructions_removed", q, places=("、" if zh else "; ").join(removed)))
        hidden = [t for x in present_ if x.name == "injected_instruction" for t in x.data.get("hidden", ())]
        if hidden:
            notes.append(render("hidden_instructions", q, titles=", ".join(dict.fromkeys(hidden))))
        injected = [x for x in present_ if x.name == "injected_instruction" and x.data.get("chunks")]
        if injected and a.route == "answer":  # no repair beat it: the user must know what the answer rests on
            notes.append(render("injected", q, titles=", ".join(injected[0].data.get("titles", ()))))
            flags.append(f"injected_instruction: {injected[0].evidence[:80]}")
        return notes


class _Session:
    """One query's repair rounds: the current best run, what was found and tried, the budget."""

    def __init__(self, doctor: Doctor, budget: Budget, lm, judge: Judge | None,
                 care: refusal.RefusalCare | None = None, told: forecast.Forecast | None = None) -> None:
        self.doctor, self.s, self.budget, self.lm, self.judge = doctor, doctor.settings, budget, lm, judge
        self.told = told  # the failure forecast: the likeliest failure's treatment is tried first
        self.care = care  # the first answer was a refusal: how its retrieval went (doctor/refusal.py)
        self.retrievals = 0  # retrieval treatments tried while the answer was a refusal
        self.skipped: list[dict[str, Any]] = []  # treatments a refusal did not try, each with why
        self.pipe = doctor.pipe.with_model(lm)
        self.pipe.fallback_on_crash = False  # a crash during a repair ends the repairs (Doctor.treat)
        self.initial: Visit | None = None
        self.current: Visit | None = None
        self.found: list[Symptom] = []
        self.repairs: list[Repair] = []
        self.tried: set[str] = set()
        self.fast_note = ""  # why the answer took the fast path, and what it did not treat

    def fast_path(self, why: str) -> None:
        """The answer is in the fast band: noise and reach symptoms are not treated, only noted."""
        skipped = [x.name for x in present(self.current.symptoms, self.s.doctor_threshold) if x.name in _SKIPPABLE]
        kept = [x for x in self.current.symptoms if x.name not in _SKIPPABLE]
        self.current = self.initial = replace(self.current, symptoms=kept)
        self.fast_note = why + (f"; not treated: {', '.join(skipped)}" if skipped else "")

    def note_symptoms(self, rnd: int) -> None:
        seen = {f.name for f in self.found}
        self.found += [x.found_in(rnd) for x in present(self.current.symptoms, self.s.doctor_threshold)
                       if x.name not in seen]

    def round(self, rnd: int) -> str:
        """Run up to ``doctor_candidates`` changes; keep the best if it beats the current run. Returns why to
        stop ('' to go on)."""
        exam = self.doctor._exam(self.current.state, self.current.trace, self.judge, self.budget, "rules")
        exam.symptoms = present(self.current.symptoms, self.s.doctor_threshold)
        steps = forecast.ordered(plan(exam.symptoms, exam, self.tried), self.told)
        if self.care is not None and refusal.is_refusal(self.current.answer):
            steps, skipped = refusal.select(steps, self.care, self.retrievals)
            noted = {x["treatment"] for x in self.skipped}  # each skipped treatment once, with its first reason
            self.skipped += [dict(x, round=rnd) for x in skipped if x["treatment"] not in noted]
            self.retrievals += sum(not c.terminal for _, c in steps)
            if not steps and skipped:
                return "refusal kept: " + ("one retrieval treatment tried" if self.retrievals else
                                           "no treatment can change it")
        if not steps:
            return "no treatment left for the symptoms"
        terminal = [(sym, c) for sym, c in steps if c.terminal]
        visits, stop = [], ""
        for sym, change in terminal[:1] or steps[:self.s.doctor_candidates]:
            self.tried.add(change.treatment)
            visit, why = self._try(change)
            if visit is None:
                self.repairs.append(_record(rnd, sym, change, self.current, None, False, why, self.s.doctor_threshold))
                stop = "budget"
            else:
                visits.append((sym, change, visit))
        winner = self._choose(visits)
        for sym, change, v in visits:
            won = winner is not None and v is winner[0]
            why = winner[1] if won else self._verdict(v)[1]
            self.repairs.append(_record(rnd, sym, change, self.current, v, won, why, self.s.doctor_threshold))
        if winner is not None:
            self.current = winner[0]
            self.note_symptoms(rnd)
            if winner[2]:
                return "clarify"
            if not present(self.current.symptoms, self.s.doctor_threshold):
                return "repaired"
        return stop or ("budget" if self.budget.out_of_time() else "")

    def _try(self, change) -> tuple[Visit | None, str]:
        if self.budget.out_of_time() or (change.uses_model and self.lm is not None and not self.budget.can_call()):
            return None, "budget exhausted before the treatment"
        try:
            st, tr = self.pipe.rerun(self.current.trace, change.layer, change=change.apply)
        except BudgetExceeded as e:
            return None, str(e)
        visit = self.doctor._visit(st, tr, self.budget, self.judge)
        # a note stays with the drafted text it speaks of: kept while the re-run keeps the current draft
        kept = self.current.notes if st.draft is not None and st.draft == self.current.state.draft else ()
        visit.notes = _unique(kept, change.notes)
        return visit, ""

    def _verdict(self, v: Visit) -> tuple[bool, str]:
        c = self.current
        sufficient = evidence_threshold(c.state.passages, self.s, self.judge)  # as the gate decided
        dropped = dropped_evidence(c.state.answer, c.state.passages, v.state.answer, v.state.passages, sufficient,
                                   c.state.request.question)
        return judge_better(v.score, v.symptoms, c.score, c.symptoms, self.s.doctor_threshold,
                            self.s.doctor_accept_margin, c.state.answer, v.state.answer, dropped)

    def _choose(self, visits) -> tuple[Visit, str, bool] | None:
        """The best candidate, if it is accepted: (visit, why, terminal)."""
        best = max(visits, key=lambda t: t[2].score, default=None)
        if best is None:
            return None
        _, change, v = best
        if change.terminal:
            return v, "interactive: the question goes back to the user", True
        ok, why = self._verdict(v)
        return (v, why, False) if ok else None


def _before_generation(state: AskState, trace: Trace) -> AskState:
    """The state the forecast reads: as the gate left it (the tools path replaces the passages while it
    generates), else the state as it is."""
    try:
        return trace.state_after("gate")
    except Exception:  # noqa: BLE001 - a trace without a gate span (a crash, an old trace): the state as it is
        return state


def _unique(*groups) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for g in groups for n in g if n))


def _doc_name(doc, fallback: str) -> str:
    if doc is None:
        return fallback
    return doc.title or Path(doc.path).name or fallback


def _record(rnd: int, sym: Symptom, change, before: Visit, after: Visit | None, accepted: bool,
            why: str, threshold: float) -> Repair:
    return Repair(rnd, change.treatment, sym.name, change.layer, change.describe, accepted, why,
                  _snapshot(before, threshold), _snapshot(after, threshold) if after else None)


def _snapshot(v: Visit, threshold: float) -> Snapshot:
    return Snapshot(v.answer.text, v.answer.route, v.score, tuple(x.name for x in v.symptoms if x.score >= threshold),
                    v.trace.id)
