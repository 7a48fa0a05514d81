"""``ragclinic.Clinic``: the public Python API over one knowledge base and its models.

The parts (knowledge base, language model, judge, pipeline) come from ragclinic/wiring.py; the Clinic adds the
doctor, the answer cache, clarifications, traces and the debugger. The CLI, the server and the bench scripts open
a Clinic::

    from ragclinic import Clinic

    with Clinic.open("kb", llm="none") as c:
        c.ingest(["docs/"])
        a = c.ask("What is usually used as a proxy for the risk-free rate?")
        print(a.text, [x.path for x in a.citations], a.trace_id)
        assert c.replay(a.trace_id).text == c.trace(a.trace_id).answer.text

The names here are a contract relied on outside the project (docs/api.md): extend, never rename.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ragclinic import wiring
from ragclinic.clinic.clarify import Clarifications
from ragclinic.clinic.from_use import FromUse, unrepaired
from ragclinic.clinic.question import Consultation, Question
from ragclinic.config import TRACE_LEGACY_VALUES, Settings
from ragclinic.pipeline.generate import YES_NO_WORDING
from ragclinic.debugger import Debugger, Expectation
from ragclinic.doctor import Doctor
from ragclinic.errors import OutsideScope, RagclinicError
from ragclinic.ingest.result import IngestAborted
from ragclinic.limits import check_request
from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.pipeline.cache import AnswerCacheFront
from ragclinic.scale.ray_ingest import ingest_on_ray
from ragclinic.scale.ray_learn import on_ray as learn_on_ray
from ragclinic.store.kb import KnowledgeBase
from ragclinic.learn import canary
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.trace.health import health as health_report
from ragclinic.trace.model import QUERY_LAYERS, Trace, start_of, state_after
from ragclinic.trace.owner import enforced_of, trace_outside
from ragclinic.trace.recorder import recorded_crashes
from ragclinic.trace.store import load_trace
from ragclinic.types import Answer, AskRequest, AskState, Hit

Change = Callable[[AskState], AskState] | dict[str, Any]
LOAD = wiring.LOAD  # Clinic(model=LOAD): load the model the ``llm`` setting names on first use


class Clinic(FromUse):
    """One knowledge base with its models. Open with ``Clinic.open``; close (or use ``with``) when done."""

    def __init__(self, settings: Settings, *, model: LanguageModel | None = LOAD,
                 on_warning: Callable[[str], None] | None = None, sync_indexes: bool = True,
                 kb: KnowledgeBase | None = None, experiments: bool = True) -> None:
        """Prefer ``Clinic.open``. ``model``: a LanguageModel to use, None for none (extractive answers), or
        LOAD (the ``llm`` setting's, on first use). ``kb``: an already open knowledge base (left open by
        ``close``; its owner closes it). ``experiments``: False — questions never run in a running experiment's
        arms (the evaluation harness: its questions are not users' traffic)."""
        self.settings, self.in_experiments = settings, experiments
        self._warn = on_warning
        self.parts = wiring.Parts(settings, model=model, warn=on_warning, sync_indexes=sync_indexes, kb=kb)
        self._clarified = Clarifications(lambda: self.kb.folder, on_warning)

    @classmethod
    def around(cls, kb: KnowledgeBase, *, model: LanguageModel | None = LOAD,
               on_warning: Callable[[str], None] | None = None) -> "Clinic":
        """A clinic over a knowledge base someone else opened (and will close), with its settings."""
        return cls(kb.settings, model=model, on_warning=on_warning, kb=kb)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, kb: str | Path | None = None, *, model: LanguageModel | None = LOAD,
             on_warning: Callable[[str], None] | None = None, sync_indexes: bool = True, experiments: bool = True,
             **settings: Any) -> "Clinic":
        """The knowledge base at ``kb`` (created by the first ``ingest`` when it does not exist yet) with
        ``settings`` over the KB's settings file, the environment and the defaults (``llm="none"`` answers
        extractively, without a model; ``doctor``, ``answer_cache``, ``top_k``, ``rerank``: the defaults a
        ``Question`` may override). ``model``: a LanguageModel to use instead of loading ``llm`` (None: no
        model at all). ``experiments=False``: questions never run in a running experiment's arms."""
        return cls(Settings.load(kb, **settings), model=model, on_warning=on_warning, sync_indexes=sync_indexes,
                   experiments=experiments)

    def __enter__(self) -> "Clinic":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._clarified.close()
        self.parts.close()

    @property
    def kb(self) -> KnowledgeBase:
        return self.parts.kb  # raises: "run ingest first"

    @property
    def lm(self) -> LanguageModel | None:
        """The language model, loaded on first use (None when ``llm="none"`` or it cannot load: answers are
        then extractive and flagged ``llm_unavailable``)."""
        return self.parts.lm

    @property
    def model_flags(self) -> list[str]:
        """Why answers are extractive when the model could not load (``llm_unavailable: ...``), else []."""
        return self.parts.model_flags

    @property
    def judge(self):
        """The judge the ``judge`` setting names (the learned verifier by default; ``llm``: the language
        model's yes/no probabilities)."""
        return self.parts.judge

    @property
    def pipeline(self):
        """The plain pipeline over this knowledge base and model (ragclinic.pipeline.runner.Pipeline)."""
        return self.parts.pipeline

    def doctor(self, *, interactive: bool = False) -> Doctor:
        """The doctor over this clinic's pipeline (ragclinic.doctor.Doctor)."""
        return Doctor(self.pipeline, interactive=interactive)

    # ------------------------------------------------------------------ documents
    def ingest(self, paths: Iterable[str | Path] | str | Path, tags: dict[str, str] | None = None,
               sync: bool = False, *, strict: bool = False, reparse: bool = False, on_progress=None,
               ray: str | None = None, ray_workers: int = 0, on_graph_progress=None):
        """Add or update documents (files or folders; ``sync`` also removes what is gone from the folders)
        → ``IngestResult`` (``.added``, ``.updated``, ``.unchanged``, ``.removed``, ``.failed``, ``.chunks``).
        Holds the knowledge base's write lock meanwhile; ``strict`` stops at the first bad file and keeps
        nothing (not even a knowledge base this call created). ``ray``: parse, chunk and embed on the Ray cluster
        at that address (``auto``: a local runtime; the ``ray`` extra), ``ray_workers`` workers (0: one per CPU);
        the commit stays here and the result is the same knowledge base. In a knowledge base with a graph (the
        ``graph`` setting, ``ingest --graph``), the graph is brought up to date after the commit
        (``on_graph_progress(done, total)`` chunks); ``.graph`` holds what that did."""
        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        run = dict(sync=sync, strict=strict, tags=dict(tags or {}), reparse=reparse, on_progress=on_progress)
        via = (lambda kb, found, **opts: ingest_on_ray(kb, found, ray, ray_workers, **opts)) if ray else None
        try:
            return self.parts.ingest([Path(p) for p in paths], via=via, on_graph_progress=on_graph_progress, **run)
        except IngestAborted:
            self._clarified.close()
            raise

    def sync_graph(self, mode: str | None = None, *, on_progress=None, result=None):
        """Bring the knowledge graph up to date with the chunks (docs/graph.md): ``mode`` (or the ``graph``
        setting) sets or changes the KB's graph mode; None keeps it (no graph: nothing to do). The caller holds
        the write lock (``ingest`` does). → ``GraphSyncResult`` (also put on ``result.graph`` when given)."""
        return self.parts.sync_graph(mode, on_progress=on_progress, result=result)

    # ------------------------------------------------------------------ questions
    def learn(self, *, on_progress=None, budget_s: float | None = None, max_chunks: int | None = None,
              should_stop=None, ray: str | None = None, ray_workers: int = 0):
        """Let the knowledge base learn its own documents (docs/learn.md): the model writes questions and keywords
        for each chunk not learned yet, kept when their chunk ranks high for them; the gate's threshold is fitted
        on them (retrieval ranks by them with ``learned_retrieval``). Resumable, incremental, bounded by
        ``budget_s`` / ``max_chunks``. ``ray``: the questions written by the model on each worker of the Ray
        cluster at that address (``auto``: a local runtime; the ``ray`` extra), ``ray_workers`` workers (0: one per
        CPU); ranking and storing stay here. → ``LearnResult``."""
        if ray:
            with learn_on_ray(ray, self.settings.llm, ray_workers) as writer:
                done = self.parts.learn(on_progress=on_progress, budget_s=budget_s, max_chunks=max_chunks,
                                        should_stop=should_stop, writer=writer)
        else:
            done = self.parts.learn(on_progress=on_progress, budget_s=budget_s, max_chunks=max_chunks,
                                    should_stop=should_stop)
        self.parts.changed()
        return done

    def ask(self, question: str, scope: dict[str, str] | None = None, doctor: bool = True,
            top_k: int | None = None, *, rerank: bool | None = None, on_token: TokenCallback | None = None,
            cache: bool | None = None) -> Answer:
        """The answer with its citations, confidence, trace id and (with the doctor) symptoms and repairs.
        ``scope`` is a dict like the CLI's ``--scope`` ({"tenant": "acme", "from": "2024-01-01"}). ``cache``:
        None follows the ``answer_cache`` setting."""
        q = Question(question, scope or (), doctor, top_k, rerank, cache)
        return self.answer(q, on_token=on_token).answer

    def consult(self, question: str, scope: dict[str, str] | None = None, doctor: bool | None = None,
                top_k: int | None = None, *, rerank: bool | None = None, on_token: TokenCallback | None = None,
                cache: bool | None = None, interactive: bool = False,
                reply: Callable[[str], str] | None = None, enforced: dict[str, str] | None = None,
                on_span=None, conversation: Sequence[str] = (), owner: str = "",
                debug_round_id: str = "") -> Consultation:
        """``answer`` with the question's fields as keyword arguments (docs/api.md; see ``Question``)."""
        q = Question(question, scope or (), doctor, top_k, rerank, cache, interactive, enforced or (),
                     tuple(conversation), owner, debug_round_id)
        return self.answer(q, on_token=on_token, on_span=on_span, reply=reply)

    def answer(self, q: Question, *, on_token: TokenCallback | None = None, on_span=None,
               reply: Callable[[str], str] | None = None) -> Consultation:
        """The answer to ``q`` with everything the CLI prints: the `ask --json` payload and the doctor's result.
        From the answer cache when it holds a near-identical question (no model is loaded then), else from the
        doctor or (``doctor=False``) the plain pipeline. ``on_token(piece)``: the answer text as it is written;
        ``on_span(span, state)``: each layer of the plain run as it finishes; ``reply(clarifying_question)``: the
        user's answer when the doctor asks one back (``q.interactive``). While an experiment runs
        (docs/experiments.md), the question runs in the arm its session (else its owner) is assigned to — with the
        arm's settings, its own answer cache, and the arm recorded in the trace and the experiment's record."""
        check_request(self.settings, q.text, q.scope_dict)  # before the cache or a trace stores any of it
        run = self.run_for(q)  # the clinic's settings and pipeline, or a running experiment's arm's (from_use.py)
        front = AnswerCacheFront(self.kb, run.settings, enabled=q.cacheable(), warn=self._warn)
        keyed = {**q.cache_scope(), **run.cache_key}
        try:
            if (hit := front.lookup(q.text, keyed, run.doctor)) is not None:
                return run.finish(self, q, Consultation(Answer.from_json(hit), cached=True, stored=hit))
            request, hooks = q.to_request(run.settings), q.hooks(on_token, on_span)
            later = run.doctor and q.repair == "async" and not q.interactive
            if not run.doctor or later:  # the plain answer (with repair="async": the doctor comes after it)
                state, trace = run.pipeline.ask(request, hooks=hooks)
                answer = replace(state.answer, model_calls=len(trace.model_calls))
                front.keep(q.text, keyed, False, answer.to_json())
                return run.finish(self, q, Consultation(answer, trace=trace, repair_pending=later))
            doctor = Doctor(run.pipeline, interactive=q.interactive)
            result = doctor.ask(request, hooks=hooks)
            result, clarified = self._clarified.follow_up(q, doctor, result, reply, hooks)
            if not clarified:  # the answer to the question with the reply merged in is never kept for the question
                front.keep(q.text, keyed, True, result.to_json())
            if run.settings.cases_from_doctor and unrepaired(result):
                self.cases.file(result.trace, source="doctor", comment=unrepaired(result))
            return run.finish(self, q, Consultation(_doctored(result), result, trace=result.trace,
                                                    clarification=clarified))
        finally:
            front.close()

    def repair(self, q: Question, trace_id: str) -> Consultation:
        """The doctor's examination and repairs of a plain answer already given (``answer`` with
        ``repair="async"`` returned it and its trace): the same as the doctor would have done before answering,
        from the trace's recorded state (no layer runs again unless a treatment re-runs it). The root trace then
        records the symptoms and repairs, and the result is kept in the answer cache for ``q`` (unless the knowledge
        base changed since the trace: its answer would be about documents no longer there). ``q`` must be the
        question the trace answered; its enforced tags are checked against the trace's (``OutsideScope``)."""
        trace = self._for_caller(self.trace(trace_id, exact=True), q.enforced_dict or None)
        if trace.parent_id or (not q.conversation and trace.query != q.text):
            raise RagclinicError(f"trace {trace.id} is not the plain answer to {q.text[:80]!r} (a re-run, or another "
                                 "question's): give the trace id that answer(..., repair='async') returned")
        if trace.doctor:
            raise RagclinicError(f"trace {trace.id} was already examined by the doctor; its outcome is in "
                                 "`ragclinic trace show`")
        settings, pipeline, arm_scope = self.arm_of(trace)  # an experiment's answer: repaired and kept in its arm
        result = Doctor(pipeline).treat(state_after(trace, "generate"), trace)
        if self.kb.db.version == trace.kb_version:  # a newer version's documents are others: not kept
            front = AnswerCacheFront(self.kb, settings, enabled=q.cacheable(), warn=self._warn)
            try:  # keyed by the answer's own version: an ingest landing meanwhile leaves it unreachable
                front.keep(q.text, {**q.cache_scope(), **arm_scope}, True, result.to_json(), version=trace.kb_version)
            finally:
                front.close()
        return Consultation(_doctored(result), result, trace=result.trace)

    def search(self, q: Question) -> tuple[tuple[Hit, ...], str]:
        """The hits of the configured retriever for ``q`` (``q.top_k`` of them; no rerank, no model call) within
        its scope and enforced tags, and the name of the retriever that ran."""
        req = replace(q, rerank=False).to_request(self.settings)
        found, out = self.pipeline.run_layer("retrieve", AskState(req))
        return found.hits, out.retriever

    # ------------------------------------------------------------------ traces
    def health(self, *, window_hours: float = 24.0, baseline_days: float = 7.0, days: float = 30.0,
               now: float | None = None) -> dict:
        """The knowledge base's health from its traces and ratings: per day, per version, and the last
        ``window_hours`` against the ``baseline_days`` before them, with drift alerts (trace/health.py); and once
        the KB has learned its documents, its canary questions' retrieval (learn/canary.py), alerting on a drop."""
        report = health_report(self.kb.db, window_hours=window_hours, baseline_days=baseline_days, days=days, now=now)
        if (reading := canary.retrieval_reading(self.kb, create_retriever(self.kb))) is not None:
            report["canary"] = reading
            if reading["alert"]:
                prev = reading["previous_recall@5"]
                report["alerts"].append({"metric": "canary_recall@5", "current": reading["recall@5"], "baseline": prev,
                                         "change": (reading["recall@5"] - prev) / prev if prev else None,
                                         "why": reading["alert"]})
        return report

    def trace(self, trace_id: str, *, exact: bool = False, enforced: dict[str, str] | None = None) -> Trace:
        """A saved trace (id or unique prefix): ``.question``, ``.answer``, ``.spans`` (``.layer``, ``.seconds``,
        ``.input``, ``.output``), ``.state_after(layer)``, ``.parent_id``. ``enforced``: a tenant's tags — by id
        only, and only a trace asked under exactly these (else "no trace", as for a missing id)."""
        return load_trace(self.kb.db, trace_id, exact=exact, enforced=enforced)

    def replay(self, trace_id: str, *, enforced: dict[str, str] | None = None) -> Answer:
        """The trace's answer rebuilt from what it recorded — the state it started from (a re-run's change
        included) and its model outputs — with no model call (``.model_calls == 0``); it equals the recorded
        answer. Starts at the trace's first layer when the knowledge base is still at the trace's version,
        else at generate, from the gate's recorded decision and passages: retrieval, scope and the gate all read
        the knowledge base (documents, the graph's communities and expansion, tables), so after an ingest they
        would hand the model another context — a call the trace never recorded. ``enforced``: the caller's tenant
        tags (a server key's): the trace must be that tenant's and hold nothing from outside it, else
        ``OutsideScope``."""
        trace = self._for_caller(self.trace(trace_id, exact=bool(enforced)), enforced)
        layer = trace.rerun_from or "retrieve"
        if self.kb.db.version != trace.kb_version and QUERY_LAYERS.index(layer) < QUERY_LAYERS.index("generate"):
            layer = "generate"
        pipe = wiring.pipeline(self.kb, settings=_recorded_settings(self.settings, trace))
        start = start_of(trace, layer)
        if layer == "generate" and (gen := trace.span("generate")) is not None and gen.output.passages is not None \
                and (gen.output.active or {}).get("decision"):  # active retrieval's second search gave the answer
            start = replace(start, passages=gen.output.passages, decision=trace.state_after("generate").decision)
        state, _ = pipe.run(start, layer, frozen=trace.model_calls, save=False,
                            debug_round_id=trace.debug_round_id, crashes=recorded_crashes(trace))
        return replace(state.answer, trace_id=trace.id, model_calls=0)

    def rerun(self, trace_id: str, from_layer: str, change: Change | None = None, *,
              enforced: dict[str, str] | None = None) -> Answer:
        """Run the trace again from ``from_layer`` with the live model, after ``change`` (a function of the
        AskState, or a dict of request fields such as {"top_k": 20}); the new trace's ``parent_id`` is
        ``trace_id`` and it records the change, so it replays to its own answer. ``enforced``: the caller's
        tenant tags (a server key's): the trace must be that tenant's, and the re-run may hold only chunks of the
        tenant's documents (else ``OutsideScope``); without them (the admin, the library) a re-run that holds other
        chunks is the admin's — a debug round of its own, with no tenant's enforced tags (``Pipeline.rerun``)."""
        trace = self._for_caller(self.trace(trace_id, exact=bool(enforced)), enforced)
        fn = _as_change(change)
        state, child = self.pipeline.rerun(trace, from_layer, change=fn, admin=not enforced)
        return replace(state.answer, model_calls=len(child.model_calls))

    def _for_caller(self, trace: Trace, enforced: dict[str, str] | None) -> Trace:
        """``trace``, when a caller whose key enforces ``enforced`` may use it: its own tenant's, and naming no
        document outside it (trace/owner.py)."""
        if enforced and (enforced_of(trace) != dict(enforced) or trace_outside(self.kb.db, trace, enforced)):
            raise OutsideScope(f"trace {trace.id} is not one of {', '.join(f'{k}={v}' for k, v in enforced.items())}'s "
                               "traces, or holds chunks from outside it", trace_id=trace.id)
        return trace

    def diagnose(self, question: str | None = None, expected: str | Iterable[str] | None = None,
                 trace_id: str | None = None, gold_doc: str | None = None, *, expect_refusal: bool = False,
                 scope: dict[str, str] | None = None, expect=None, apply: bool = False, keep: bool = False,
                 others: int = 20, eval_set=(), rebuild: bool = True):
        """Which layer broke the answer → ``Diagnosis`` (``.verdict``: a layer name or "none", ``.evidence``,
        ``.fix``, ``.fixes``, ``.layers``). Give ``question`` (asked now, no doctor) or ``trace_id``, and what is
        right: ``expected`` (one text or accepted alternatives), ``gold_doc`` or ``expect_refusal`` — or
        ``expect``, a ``debugger.Expectation`` (several required parts, as the eval sets have them).
        ``apply``: carry the fix out on a copy and re-ask (``.applied``: fixed, not fixed, or fixed with side
        effects on ``others`` recent questions or ``eval_set``'s (question, Expectation) pairs); ``keep``: promote
        the fix that worked, when nothing got worse (this clinic's knowledge base is closed when a copy replaces
        it); ``rebuild``: fixes that rebuild the knowledge base (chunk sizes) may run."""
        if expect is None:
            alts = (expected,) if isinstance(expected, str) else tuple(expected or ())
            expect = Expectation((alts,) if alts else (), gold_doc or "", expect_refusal)
        return Debugger(self.pipeline).diagnose(expect, question=question, scope=scope, trace_id=trace_id,
                                                apply=apply, keep=keep, others=others, eval_set=eval_set,
                                                rebuild=rebuild)


def _doctored(result) -> Answer:
    """The doctor's answer with its symptoms, repairs and every model call counted (the base run's and its own)."""
    return replace(result.answer, symptoms=tuple(x.to_json() for x in result.symptoms),
                   repairs=tuple(r.to_json() for r in result.repairs),
                   model_calls=result.summary.get("lm_calls", 0) + len(result.trace.model_calls))


def _as_change(change: Change | None) -> Callable[[AskState], AskState] | None:
    if change is None or callable(change):
        return change
    if not isinstance(change, dict):
        raise RagclinicError(f"change must be a function of the AskState or a dict of request fields, not "
                             f"{type(change).__name__}")
    known = {f.name for f in fields(AskRequest)} - {"scope"}
    bad = sorted(set(change) - known)
    if bad:
        raise RagclinicError(f"unknown request field(s) {', '.join(bad)} in change; known: {', '.join(sorted(known))}")
    items = {k: tuple(v) if isinstance(v, list) else v for k, v in change.items()}
    return lambda st: replace(st, request=replace(st.request, **items))


def _recorded_settings(current: Settings, trace: Trace) -> Settings:
    """The settings the trace ran with (its settings dump) over the KB's; secrets are never dumped, and a
    setting added since the trace keeps its current value — unless it changes the model calls (the answer prompt's
    wording, the cross-lingual search): those take the value the trace ran without them (TRACE_LEGACY_VALUES)."""
    recorded = {k: v for k, v in trace.settings.items() if k in Settings.model_fields and k not in ("kb", "cache_dir")}
    recorded |= {k: v for k, v in TRACE_LEGACY_VALUES.items() if k not in trace.settings}
    if "answer_prompt" not in trace.settings and any(  # recorded between the new wording and its setting
            YES_NO_WORDING in (m.content if hasattr(m, "content") else m.get("content", ""))
            for c in trace.model_calls for m in c.messages[:1]):
        recorded["answer_prompt"] = 2
    return Settings.load(current.kb, **recorded, cache_dir=current.cache_dir)
