"""``ragclinic.Clinic``: the composition root and the public Python API.

Settings → knowledge base → language model → Pipeline → Doctor are wired here and nowhere else; the CLI,
the eval harness, the debugger and the bench scripts open a Clinic (the server will too)::

    from ragclinic import Clinic

    with Clinic.open("kb", llm="none") as c:
        c.ingest(["docs/"])
        a = c.ask("What is usually used as a proxy for the risk-free rate?")
        print(a.text, [x.path for x in a.citations], a.trace_id)
        assert c.replay(a.trace_id).text == c.trace(a.trace_id).answer.text

The names here are a contract relied on outside the project (docs/api.md): extend, never rename.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import RagclinicError
from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.pipeline.state import AskState
from ragclinic.store.clarifications import ClarificationMemory, ambiguity_key
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.model import QUERY_LAYERS, Trace
from ragclinic.types import Answer

Change = Callable[[AskState], AskState] | dict[str, Any]
LOAD: Any = object()  # Clinic(model=LOAD): load the model the ``llm`` setting names on first use


@dataclass(frozen=True)
class Consultation:
    """What ``Clinic.consult`` gives the CLI and the server: the answer, the `ask --json` object, and the
    doctor's full result when the doctor ran (None for the plain pipeline and for a cached answer)."""

    answer: Answer
    payload: dict[str, Any]
    result: Any = None  # DoctorResult
    cached: bool = False
    trace: Trace | None = None  # the run's trace (the doctor's root trace); None for a cached answer


class Clinic:
    """One knowledge base with its models. Open with ``Clinic.open``; close (or use ``with``) when done."""

    def __init__(self, settings: Settings, *, model: LanguageModel | None = LOAD,
                 on_warning: Callable[[str], None] | None = None, sync_indexes: bool = True,
                 kb: KnowledgeBase | None = None) -> None:
        """Prefer ``Clinic.open``. ``model``: a LanguageModel to use, None for none (extractive answers), or
        LOAD (the ``llm`` setting's, on first use). ``kb``: an already open knowledge base (left open by
        ``close``; its owner closes it)."""
        self.settings = settings
        self._warn = on_warning
        self._sync = sync_indexes
        self._kb, self._owns_kb = kb, kb is None
        self._lm, self._lm_flags, self._lm_loaded = (None if model is LOAD else model), [], model is not LOAD
        self._pipeline = None
        self._judge = None
        self._clarified = None  # ClarificationMemory, opened on the first clarification (False: cannot be)

    @classmethod
    def around(cls, kb: KnowledgeBase, *, model: LanguageModel | None = LOAD,
               on_warning: Callable[[str], None] | None = None) -> "Clinic":
        """A clinic over a knowledge base someone else opened (and will close), with its settings."""
        return cls(kb.settings, model=model, on_warning=on_warning, kb=kb)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, kb: str | Path | None = None, *, model: LanguageModel | None = LOAD,
             on_warning: Callable[[str], None] | None = None, sync_indexes: bool = True,
             **settings: Any) -> "Clinic":
        """The knowledge base at ``kb`` (created by the first ``ingest`` when it does not exist yet) with
        ``settings`` over the KB's settings file, the environment and the defaults (``llm="none"`` answers
        extractively, without a model). ``model``: a LanguageModel to use instead of loading ``llm`` (None: no
        model at all)."""
        return cls(Settings.load(kb, **settings), model=model, on_warning=on_warning, sync_indexes=sync_indexes)

    def __enter__(self) -> "Clinic":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._clarified:
            self._clarified.close()
        self._clarified = None
        if self._kb is not None and self._owns_kb:
            self._kb.close()
        self._kb = None
        self._pipeline = None

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            self._kb = KnowledgeBase.open(self.settings, sync_indexes=self._sync)  # raises: "run ingest first"
        return self._kb

    @property
    def lm(self) -> LanguageModel | None:
        """The language model, loaded on first use (None when ``llm="none"`` or it cannot load: answers are
        then extractive and flagged ``llm_unavailable``)."""
        if not self._lm_loaded:
            from ragclinic.pipeline.runner import load_language_model

            self._lm, self._lm_flags = load_language_model(self.settings, self._warn)
            self._lm_loaded = True
        return self._lm

    @property
    def model_flags(self) -> list[str]:
        """Why answers are extractive when the model could not load (``llm_unavailable: ...``), else []."""
        self.lm  # noqa: B018 - loads it
        return list(self._lm_flags)

    @property
    def judge(self):
        """The judge the ``judge`` setting names (the learned verifier by default; ``llm``: the language
        model's yes/no probabilities)."""
        if self._judge is None:
            from ragclinic.verify import create_judge

            self._judge = create_judge(self.settings.judge, self.lm if self.settings.judge == "llm" else None)
        return self._judge

    @property
    def pipeline(self):
        """The plain pipeline over this knowledge base and model (ragclinic.pipeline.runner.Pipeline)."""
        if self._pipeline is None:
            from ragclinic.pipeline.runner import Pipeline

            lm = self.lm
            self._pipeline = Pipeline(self.kb, lm=lm, lm_flags=self._lm_flags)
        return self._pipeline

    def doctor(self, *, interactive: bool = False):
        """The doctor over this clinic's pipeline (ragclinic.doctor.Doctor)."""
        from ragclinic.doctor import Doctor

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
        import shutil

        from ragclinic.ingest.runner import IngestAborted, ingest

        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        new_folder = not self.settings.kb.exists()
        if self._kb is None:
            self._kb = KnowledgeBase.open(self.settings, create=True, sync_indexes=False)
        self._pipeline = None  # the next question sees the new version
        kb = self._kb
        kb.lock()
        try:
            run = dict(sync=sync, strict=strict, tags=dict(tags or {}), reparse=reparse, on_progress=on_progress)
            if ray:
                from ragclinic.scale.ray_ingest import ingest_on_ray

                result = ingest_on_ray(kb, [Path(p) for p in paths], ray, ray_workers, **run)
            else:
                result = ingest(kb, [Path(p) for p in paths], **run)
            self.sync_graph(on_progress=on_graph_progress, result=result)
            return result
        except IngestAborted:
            if new_folder:
                self.close()
                shutil.rmtree(self.settings.kb, ignore_errors=True)
            raise
        finally:
            kb.unlock()

    def sync_graph(self, mode: str | None = None, *, on_progress=None, result=None):
        """Bring the knowledge graph up to date with the chunks (docs/graph.md): ``mode`` (or the ``graph``
        setting) sets or changes the KB's graph mode; None keeps it (no graph: nothing to do). The caller holds
        the write lock (``ingest`` does). → ``GraphSyncResult`` (also put on ``result.graph`` when given)."""
        from ragclinic.graph import sync

        kb = self.kb
        mode = mode or self.settings.graph or None
        if not mode and not sync.enabled(kb):
            return None
        model = self.lm if (mode or sync.mode_of(kb)) == "model" else None
        done = sync.sync(kb, mode, model=model, on_progress=on_progress)
        self._pipeline = None
        if result is not None:
            result.graph = done.to_json()
        return done

    # ------------------------------------------------------------------ questions
    def ask(self, question: str, scope: dict[str, str] | None = None, doctor: bool = True,
            top_k: int | None = None, *, rerank: bool | None = None, on_token: TokenCallback | None = None,
            cache: bool | None = None) -> Answer:
        """The answer with its citations, confidence, trace id and (with the doctor) symptoms and repairs.
        ``scope`` is a dict like the CLI's ``--scope`` ({"tenant": "acme", "from": "2024-01-01"}). ``cache``:
        None follows the ``answer_cache`` setting."""
        return self.consult(question, scope, doctor, top_k, rerank=rerank, on_token=on_token, cache=cache).answer

    def consult(self, question: str, scope: dict[str, str] | None = None, doctor: bool | None = None,
                top_k: int | None = None, *, rerank: bool | None = None, on_token: TokenCallback | None = None,
                cache: bool | None = None, interactive: bool = False,
                reply: Callable[[str], str] | None = None, enforced: dict[str, str] | None = None,
                on_span=None, conversation: Sequence[str] = (), owner: str = "",
                debug_round_id: str = "") -> Consultation:
        """``ask`` with everything the CLI prints: the `ask --json` payload and the doctor's result.
        ``interactive``: an ambiguous question gets one clarifying question, answered by ``reply``.
        ``enforced``: tags every passage must carry whatever ``scope`` asks (the server's tenant of a key);
        ``on_span(span, state)``: called as each layer of the plain run finishes; ``conversation``: the user's
        earlier questions (a follow-up's "it" / "their" / 它 is resolved from them); ``owner``: who asks (the
        CLI's user, the server's key): an ambiguity the owner has clarified before is not asked about again, the
        remembered reply is merged in (``payload["clarification"]["reused"]``); ``debug_round_id``: continue a
        round (the UI's reply to its clarifying question)."""
        from ragclinic.limits import check_request
        from ragclinic.pipeline.cache import AnswerCacheFront

        check_request(self.settings, question, scope)  # before the cache or a trace stores any of it
        pairs = dict(scope or {})
        keyed = {**pairs, **{f"\x00enforced:{k}": v for k, v in (enforced or {}).items()}}  # the cache's scope
        if interactive:  # an ambiguous question is asked back, not answered per sense: another entry
            keyed["\x00interactive"] = "1"
        use_doctor = self.settings.doctor if doctor is None else doctor
        conversation = tuple(conversation)
        overridden = top_k is not None or rerank is not None or bool(conversation)  # not cache keys
        # the cache needs the knowledge base only: a cached answer loads no model
        front = AnswerCacheFront(self, enabled=False if (overridden or cache is False) else None, warn=self._warn)
        try:
            if (hit := front.lookup(question, keyed, use_doctor)) is not None:
                return Consultation(Answer.from_json(hit), hit, None, True, None)
            if not use_doctor:
                state, trace = self.pipeline.ask(question, pairs, top_k=top_k, rerank=rerank, on_token=on_token,
                                                 enforced=enforced, on_span=on_span, conversation=conversation)
                answer, result = replace(state.answer, model_calls=len(trace.model_calls)), None
                payload = front.keep(question, keyed, False, answer.to_json())
                return Consultation(answer, payload, None, False, trace)
            else:
                result, clarified = self._doctor_ask(
                    question, pairs, top_k, rerank, on_token, interactive, reply, owner,
                    {"enforced": enforced, "on_span": on_span, "conversation": conversation,
                     "debug_round_id": debug_round_id})
                answer = replace(result.answer, symptoms=result.symptoms, repairs=result.repairs,
                                 model_calls=result.summary.get("lm_calls", 0) + len(result.trace.model_calls))
                if clarified:  # the answer to the question with the reply merged in: never kept for the question
                    payload = {**result.to_json(), "cached": False, "clarification": clarified}
                else:
                    payload = front.keep(question, keyed, True, result.to_json())
                return Consultation(answer, payload, result, False, result.trace)
        finally:
            front.close()

    def _doctor_ask(self, question, pairs, top_k, rerank, on_token, interactive, reply, owner, extra):
        """The doctor's answer, and the clarification merged into it (None when none was): the owner's
        remembered reply to the same ambiguity, else what ``reply`` returns for the clarifying question."""
        doc = self.doctor(interactive=interactive)
        result = doc.ask(question, pairs, top_k=top_k, rerank=rerank, on_token=on_token, **extra)
        if not (interactive and result.answer.route == "clarify" and result.repairs):
            return result, None
        gate = result.trace.span("gate")
        key = ambiguity_key(question, (gate.outputs or {}).get("ambiguity", {}) if gate else {})
        memory = self._clarifications() if owner else None
        hit = memory.recall(owner, key) if memory is not None else None
        said = hit["reply"] if hit else (reply(result.answer.text).strip() if reply is not None else "")
        if not said:
            return result, None
        asked_back, round_id = result.answer.text, result.trace.debug_round_id
        doc.interactive = False  # one clarifying question per query
        # the reply continues the same question: its runs share the debug round id
        result = doc.ask(f"{question} {said}", pairs, top_k=top_k, rerank=rerank, on_token=on_token,
                         **{**extra, "debug_round_id": round_id})
        if memory is not None and not hit:
            try:
                memory.remember(owner, key, question=question, clarifying_question=asked_back, reply=said,
                                debug_round_id=round_id)
            except sqlite3.Error as e:
                self._warn(f"clarification not remembered: {e}")
        return result, {"clarifying_question": asked_back, "reply": said, "reused": bool(hit),
                        "debug_round_id": round_id}

    def _clarifications(self):
        """The knowledge base's clarification memory (store/clarifications.py); None when it cannot be opened."""
        if self._clarified is None:
            try:
                self._clarified = ClarificationMemory(self.kb.folder)
            except (sqlite3.Error, OSError) as e:
                self._warn(f"clarifications not remembered: cannot open {self.kb.folder}: {e}")
                self._clarified = False
        return self._clarified or None

    # ------------------------------------------------------------------ traces
    def trace(self, trace_id: str, *, exact: bool = False) -> Trace:
        """A saved trace (id or unique prefix): ``.question``, ``.answer``, ``.spans`` (``.layer``, ``.seconds``,
        ``.input``, ``.output``), ``.state_after(layer)``, ``.parent_id``."""
        from ragclinic.trace.store import load_trace

        return load_trace(self.kb.db, trace_id, exact=exact)

    def replay(self, trace_id: str, *, enforced: dict[str, str] | None = None) -> Answer:
        """The trace's answer rebuilt from what it recorded — the state it started from (a re-run's change
        included) and its model outputs — with no model call (``.model_calls == 0``); it equals the recorded
        answer. Starts at the trace's first layer when the knowledge base is still at the trace's version,
        else at generate, from the gate's recorded decision and passages: retrieval, scope and the gate all read
        the knowledge base (documents, the graph's communities and expansion, tables), so after an ingest they
        would hand the model another context — a call the trace never recorded. ``enforced``: the caller's tenant
        tags (a server key's): the trace must be that tenant's and hold nothing from outside it, else
        ``OutsideScope``."""
        from ragclinic.pipeline.runner import Pipeline
        from ragclinic.trace.recorder import recorded_crashes
        from ragclinic.trace.states import start_of

        trace = self._for_caller(self.trace(trace_id, exact=bool(enforced)), enforced)
        layer = trace.rerun_from or "retrieve"
        if self.kb.db.version != trace.kb_version and QUERY_LAYERS.index(layer) < QUERY_LAYERS.index("generate"):
            layer = "generate"
        pipe = Pipeline(self.kb, lm=None, settings=_recorded_settings(self.settings, trace))
        state, _ = pipe.run(start_of(trace, layer), layer, frozen=trace.model_calls, save=False,
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
        from ragclinic.errors import OutsideScope
        from ragclinic.trace.owner import enforced_of, trace_outside

        if enforced and (enforced_of(trace) != dict(enforced) or trace_outside(self.kb.db, trace, enforced)):
            raise OutsideScope(f"trace {trace.id} is not one of {', '.join(f'{k}={v}' for k, v in enforced.items())}'s "
                               "traces, or holds chunks from outside it", trace_id=trace.id)
        return trace

    def diagnose(self, question: str | None = None, expected: str | Iterable[str] | None = None,
                 trace_id: str | None = None, gold_doc: str | None = None, *, expect_refusal: bool = False,
                 scope: dict[str, str] | None = None, expect=None):
        """Which layer broke the answer → ``Diagnosis`` (``.verdict``: a layer name or "none", ``.evidence``,
        ``.fix``, ``.layers``). Give ``question`` (asked now, no doctor) or ``trace_id``, and what is right:
        ``expected`` (one text or accepted alternatives), ``gold_doc`` or ``expect_refusal`` — or ``expect``, a
        ``debugger.Expectation`` (several required parts, as the eval sets have them)."""
        from ragclinic.debugger import Debugger, Expectation

        if expect is None:
            alts = (expected,) if isinstance(expected, str) else tuple(expected or ())
            expect = Expectation((alts,) if alts else (), gold_doc or "", expect_refusal)
        return Debugger(self.pipeline).diagnose(expect, question=question, scope=scope, trace_id=trace_id)


def _as_change(change: Change | None) -> Callable[[AskState], AskState] | None:
    if change is None or callable(change):
        return change
    if not isinstance(change, dict):
        raise RagclinicError(f"change must be a function of the AskState or a dict of request fields, not "
                             f"{type(change).__name__}")
    from dataclasses import fields

    from ragclinic.pipeline.state import AskRequest

    known = {f.name for f in fields(AskRequest)} - {"scope"}
    bad = sorted(set(change) - known)
    if bad:
        raise RagclinicError(f"unknown request field(s) {', '.join(bad)} in change; known: {', '.join(sorted(known))}")
    items = {k: tuple(v) if isinstance(v, list) else v for k, v in change.items()}
    return lambda st: replace(st, request=replace(st.request, **items))


def _recorded_settings(current: Settings, trace: Trace) -> Settings:
    """The settings the trace ran with (its settings dump) over the KB's; secrets are never dumped, and a
    setting added since the trace keeps its current value."""
    recorded = {k: v for k, v in trace.settings.items() if k in Settings.model_fields and k not in ("kb", "cache_dir")}
    return Settings.load(current.kb, **recorded, cache_dir=current.cache_dir)
