"""The query pipeline runner: retrieve → scope → gate → generate, one span per layer, one trace per run.

``Pipeline.ask`` runs every layer. ``Pipeline.rerun`` restarts from any layer with the state rebuilt
from a recorded trace (optionally changed): the doctor's treatments, the debugger's counterfactuals and
deterministic replay (model outputs frozen from the trace) all go through it.

The layer table (trace/layers.py, the one place a layer is defined: its function, span types, probe, span kind and
the doctor's routes) — each layer a function ``(RunContext, AskState) → (AskState, its typed output)`` in its folder,
and the reasoning stage's hooks (pipeline/reason/stage.py, ``RunContext.stage``) at the points where each calls them:

    retrieve   pipeline/retrieve/layer.py   scope pre-filter, search, rerank
    scope      pipeline/scope/layer.py      reason: rank (causal chains) · passages · reason: expand (graph)
    gate       pipeline/gate/layer.py       evidence, route · reason: after_gate (tools path, ambiguity, graph)
    generate   pipeline/generate/layer.py   reason: tools · draft, check, repair · reason: revise, chain
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ragclinic import cancel
from ragclinic.config import Settings
from ragclinic.errors import (LayerError, ModelCrashed, ModelTimeExceeded, OutsideScope,
                              RagclinicError)
from ragclinic.models.judge import Judge, LexicalJudge
from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.native import in_layer
from ragclinic.pipeline.context import RunContext
from ragclinic.pipeline.generate import Generator, create_generator
from ragclinic.pipeline.reason import stage
from ragclinic.pipeline.request import Hooks, SpanCallback, as_request
from ragclinic.pipeline.retrieve import RETRIEVERS, Retriever
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace import codec
from ragclinic.trace.model import QUERY_LAYERS, ModelCall, Span, Trace, active_span, change_span, new_trace_id, start_of
from ragclinic.trace.owner import outside
from ragclinic.trace.recorder import RecordingModel, Tape
from ragclinic.trace.store import save_trace
from ragclinic.trace.layers import SPECS, input_for, resolve
from ragclinic.trace.views import LayerOutput
from ragclinic.types import AskRequest, AskState, Scope
from ragclinic.verify import cheap, create_judge

_SECRET_SETTINGS = {"openai_api_key"}
LAYERS: dict[str, Callable[[RunContext, AskState], tuple[AskState, LayerOutput]]] = {
    s.name: resolve(s.function) for s in SPECS if s.query}  # the layer table (trace/layers.py)


def search_again(ctx: RunContext, state: AskState) -> AskState:
    """The retrieve, scope and gate layers run again on ``state`` (its request's ``search_queries`` instead of the
    question): the second search generate's active retrieval asks for through ``RunContext.search``."""
    for layer in QUERY_LAYERS[:QUERY_LAYERS.index("generate")]:
        state, _ = LAYERS[layer](ctx, state)
    return state


class Pipeline:
    def __init__(self, kb: KnowledgeBase, *, lm: LanguageModel | None = None, lm_flags: Iterable[str] = (),
                 settings: Settings | None = None) -> None:
        """``lm``: the language model (None: extractive answers and the lexical judge)."""
        self.kb = kb
        self.settings = settings or kb.settings
        self.lm = lm
        self.lm_flags = list(lm_flags)
        self.fallback_on_crash = True  # the doctor's re-runs turn this off: a crash ends its repairs instead
        self._retrievers: dict[str, Retriever] = {}  # built once per pipeline, by name (shared with with_model)

    # ------------------------------------------------------------------ public
    def with_model(self, lm: LanguageModel | None) -> "Pipeline":
        """This pipeline (knowledge base, settings, model flags) over another model — the doctor's re-runs use
        the budget-limited wrapper of the same model."""
        other = Pipeline(self.kb, lm=lm, lm_flags=self.lm_flags, settings=self.settings)
        other._retrievers = self._retrievers
        return other

    def judge_for(self, lm: LanguageModel | None) -> Judge:
        """The judge the settings name, over ``lm`` (what every layer of a run with ``lm`` uses)."""
        return create_judge(self.settings.judge, lm)

    def run_layer(self, layer: str, state: AskState, **overrides: Any) -> tuple[AskState, LayerOutput]:
        """One layer's function on ``state`` (no trace; the model only through the live one): what the debugger's
        probes use to ask "what would this layer do with that?". ``overrides``: settings for this call only."""
        if layer not in QUERY_LAYERS:
            raise RagclinicError(f"no query layer {layer!r}; query layers: {', '.join(QUERY_LAYERS)}")
        settings = self.settings.model_copy(update=overrides) if overrides else self.settings
        ctx = RunContext(self.kb, settings, self.lm, self.judge_for(self.lm), self._generator(self.lm),
                         self._retriever(state.request.retriever) if layer == "retrieve" else None,
                         stage=stage, search=search_again)
        return _call(ctx, layer, state)

    def ask(self, request: AskRequest | str, scope_pairs: dict[str, str] | None = None, *,
            hooks: Hooks | None = None, **loose: Any) -> tuple[AskState, Trace]:
        """Every layer on ``request`` (built once: ``request_for``, ``clinic.Question.to_request``), heard and kept
        as ``hooks`` say. For scripts and tests, ``request`` may be the question's text: ``scope_pairs`` and the
        loose keyword arguments — ``top_k``, ``rerank``, ``enforced``, ``conversation`` for the request (see
        ``request_for``); ``on_token``, ``on_span``, ``debug_round_id``, ``save`` for the hooks — build the two
        here."""
        request, hooks = as_request(self.settings, request, scope_pairs, hooks, loose)
        return self.run(AskState(request), "retrieve", on_token=hooks.on_token, debug_round_id=hooks.debug_round_id,
                        save=hooks.save, on_span=hooks.on_span)

    def rerun(self, trace: Trace, from_layer: str, *, change: Callable[[AskState], AskState] | None = None,
              frozen: bool = False, on_token: TokenCallback | None = None, save: bool = True, admin: bool = False,
              start: AskState | None = None) -> tuple[AskState, Trace]:
        """Restart ``trace`` at ``from_layer``; ``change`` may alter the starting state first (a treatment,
        a counterfactual). ``frozen``: answer model calls from the trace's recorded outputs. ``start``: the state
        ``from_layer`` started from, when the caller holds it (default: rebuilt from the trace's typed spans).

        The state may hold only chunks the trace's enforced tags admit (what its tenant's key could retrieve):
        otherwise the re-run raises ``OutsideScope`` — unless ``admin`` (a key without a tenant: the debugger's
        probes, the library), when it is the admin's run: the enforced tags are dropped and it starts a debug round
        of its own, so that no tenant's key can read it (issue 32)."""
        before = state = start if start is not None else start_of(trace, from_layer)
        if change is not None:
            state = change(state)
        round_id = trace.debug_round_id or trace.id
        must = dict(before.request.enforced)
        if must and state.request.enforced != before.request.enforced and not admin:
            raise OutsideScope(f"a re-run of trace {trace.id} may not change the tags its request enforced",
                               trace_id=trace.id)
        if must and (foreign := outside(self.kb.db, state, must)):
            if not admin:
                raise OutsideScope(
                    f"re-running trace {trace.id} from {from_layer} would put in chunks of {len(foreign)} document(s) "
                    f"outside {', '.join(f'{k}={v}' for k, v in sorted(must.items()))} (the tags its request "
                    "enforced); only a key without a tenant may run that", trace_id=trace.id)
            r = state.request
            state = replace(state, request=replace(r, enforced=(), scope=Scope.parse(dict(r.scope_pairs))))
            round_id = ""  # a round of its own: the tenant's round lists only what its key may read
        # recorded, so that the child trace replays to its own answer
        applied = change_span(before, state, from_layer) if state != before else None
        return self.run(state, from_layer, on_token=on_token, debug_round_id=round_id,
                        parent=trace, frozen=trace.model_calls if frozen else None, save=save, change=applied)

    def run(self, state: AskState, from_layer: str, *, on_token: TokenCallback | None = None,
            debug_round_id: str = "", parent: Trace | None = None, frozen: Iterable[ModelCall] | None = None,
            save: bool = True, change: Span | None = None, on_span: SpanCallback | None = None,
            crashes: dict[str, ModelCrashed] | None = None) -> tuple[AskState, Trace]:
        """Run from ``from_layer`` on. ``frozen`` (replay): model calls are answered from these records,
        and a call they lack goes to the live model, or fails when there is none — unless ``crashes`` (by layer,
        trace/recorder.py ``recorded_crashes``) says the recorded run's model died there: the replay then goes
        on without it from that call, as the run did. ``change``: the span of the change a re-run applied to
        ``state`` (kept in the trace before the layers it ran)."""
        if from_layer not in QUERY_LAYERS:
            raise RagclinicError(f"cannot start at layer {from_layer!r}; query layers: {', '.join(QUERY_LAYERS)}")
        tape, t_start = Tape(), time.perf_counter()
        ctx = self._context(state, from_layer, tape, frozen, crashes, on_token)
        spans = _earlier_spans(parent, from_layer, change)
        for layer in QUERY_LAYERS[QUERY_LAYERS.index(from_layer):]:
            cancel.check(f"the {layer} layer")  # a client that left: nothing more is run or saved for it
            tape.layer, t0 = layer, time.perf_counter()
            try:
                with in_layer(layer):
                    state, out = LAYERS[layer](ctx, state)
            except ModelCrashed as e:
                if not self.fallback_on_crash or ctx.lm is None:
                    raise
                spans.append(Span(layer, "error", _ms(t_start, t0), _ms(t0, time.perf_counter()),
                                  input_for(layer, state), None, error=e.reason))
                ctx = self._without_model(ctx, e, on_token)
                state, out = _call(ctx, layer, state)
            except RagclinicError:
                raise
            except Exception as e:  # a bug or a backend failure: name the layer that broke
                raise LayerError(layer, e) from e
            spans.append(Span(layer, "ok", _ms(t_start, t0), _ms(t0, time.perf_counter()), input_for(layer, state),
                              out))
            if on_span is not None:
                on_span(spans[-1], state)
            if (looked := getattr(out, "active", None)) is not None:  # active retrieval's own span (generate/active.py)
                spans.append(active_span(_ms(t_start, t0), looked))
        return self._finish(state, spans, tape, from_layer, debug_round_id, parent, change, save)

    # ------------------------------------------------------------------ helpers
    def _context(self, state: AskState, from_layer: str, tape: Tape, frozen: Iterable[ModelCall] | None,
                 crashes: dict[str, ModelCrashed] | None, on_token: TokenCallback | None) -> RunContext:
        """The run's parts: the model behind the recorder (frozen calls answered from the trace), its judge and
        generator, the request's retriever (built once per pipeline)."""
        lm = None
        frozen = list(frozen) if frozen is not None else None
        if self.lm is not None or frozen or crashes:  # a replay of a run that had no model runs without one too
            lm = RecordingModel(self.lm, tape, frozen or (), max_seconds=self.settings.max_model_seconds,
                                crashes=crashes if self.lm is None else None)
        retriever = self._retriever(state.request.retriever) if from_layer == "retrieve" else None
        return RunContext(self.kb, self.settings, lm, self.judge_for(lm), self._generator(lm), retriever, on_token,
                          tuple(self.lm_flags), stage=stage, search=search_again)

    def _retriever(self, name: str) -> Retriever:
        if name not in self._retrievers:
            self._retrievers[name] = RETRIEVERS.create(name, self.kb)
        return self._retrievers[name]

    def _finish(self, state: AskState, spans: list[Span], tape: Tape, from_layer: str, debug_round_id: str,
                parent: Trace | None, change: Span | None, save: bool) -> tuple[AskState, Trace]:
        trace_id = new_trace_id()
        trace = Trace(id=trace_id, debug_round_id=debug_round_id or trace_id, created=time.time(),
                      query=state.request.question, scope=dict(state.request.scope_pairs),
                      settings=self._settings_dump(), kb_version=self.kb.db.version, spans=tuple(spans),
                      model_calls=tuple(tape.calls), final={},
                      parent_id=parent.id if parent else "",
                      rerun_from=from_layer if parent or change else "",
                      request=codec.request_to_dict(state.request))
        answer = replace(state.answer, trace_id=trace.id)
        trace = replace(trace, final=answer.to_json())
        if save:
            save_trace(self.kb.db, trace)
        return replace(state, answer=answer), trace

    def _without_model(self, ctx: RunContext, crash: ModelCrashed, on_token: TokenCallback | None) -> RunContext:
        """The model died mid-question: this layer and the rest run without it (lexical judge, extractive
        answer), and the answer says why. The next question starts a new worker."""
        note = f"{crash.reason}; answered extractively"
        flag = "llm_time_limit" if isinstance(crash, ModelTimeExceeded) else "llm_crashed"
        if on_token:
            on_token(f"\n[{note}]\n")
        judge = ctx.judge if cheap(ctx.judge) else LexicalJudge()  # the learned verifier needs no model
        return replace(ctx, lm=None, judge=judge, generator=self._generator(None), on_token=on_token,
                       flags=ctx.flags + (f"{flag}: {note}",))

    def _generator(self, lm: LanguageModel | None) -> Generator:
        return create_generator(self.settings, lm)

    def _settings_dump(self) -> dict[str, Any]:
        return self.settings.model_dump(mode="json", exclude=_SECRET_SETTINGS)


def _call(ctx: RunContext, layer: str, state: AskState) -> tuple[AskState, LayerOutput]:
    """One layer on ``state``; an error that is not the project's names the layer that broke."""
    try:
        with in_layer(layer):
            return LAYERS[layer](ctx, state)
    except RagclinicError:
        raise
    except Exception as e:  # a bug or a backend failure: name the layer that broke
        raise LayerError(layer, e) from e


def _earlier_spans(parent: Trace | None, from_layer: str, change: Span | None) -> list[Span]:
    """A re-run's trace starts with its parent's spans of the layers it did not run, and the change it applied."""
    spans = [replace(old, status="replayed", started_ms=0.0, duration_ms=0.0)
             for layer in QUERY_LAYERS[:QUERY_LAYERS.index(from_layer)]
             if parent is not None and (old := parent.span(layer)) is not None]
    return spans + ([change] if change is not None else [])


def _ms(a: float, b: float) -> float:
    return round((b - a) * 1000, 3)
