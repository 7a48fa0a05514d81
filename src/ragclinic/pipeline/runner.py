"""The query pipeline runner: retrieve → scope → gate → generate, one span per layer, one trace per run.

``Pipeline.ask`` runs every layer. ``Pipeline.rerun`` restarts from any layer with the state rebuilt
from a recorded trace (optionally changed): the doctor's treatments, the debugger's counterfactuals and
deterministic replay (model outputs frozen from the trace) all go through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import LayerError, LimitExceeded, ModelCrashed, ModelError, ModelTimeExceeded, RagclinicError
from ragclinic.models.judge import Judge, LexicalJudge
from ragclinic.verify import cheap
from ragclinic.models.llm import LanguageModel, TokenCallback, create_language_model
from ragclinic.native import in_layer
from ragclinic.pipeline.generate import GENERATORS, Generator
from ragclinic.pipeline.generate.extractive import ExtractiveGenerator
from ragclinic.pipeline.generate.llm import LLMGenerator
from ragclinic.pipeline.layers import LAYER_FUNCS
from ragclinic.types import Scope
from ragclinic.types import AskRequest, AskState
from ragclinic.store.kb import KnowledgeBase
from ragclinic.trace.model import QUERY_LAYERS, ModelCall, Span, Trace, new_trace_id
from ragclinic.trace.recorder import RecordingModel, Tape
from ragclinic.trace.states import change_span, request_to_dict, start_of
from ragclinic.trace.store import save_trace

_SECRET_SETTINGS = {"openai_api_key"}
SpanCallback = Callable[[Span, AskState], None]


@dataclass
class RunContext:
    kb: KnowledgeBase
    settings: Settings
    lm: LanguageModel | None
    judge: Judge | None
    generator: Generator
    on_token: TokenCallback | None = None
    flags: list[str] = field(default_factory=list)


def load_language_model(settings: Settings, warn: Callable[[str], None] | None = None
                        ) -> tuple[LanguageModel | None, list[str]]:
    """The configured model, or None with a flag (and a warning) when it cannot load: answers go extractive."""
    try:
        return create_language_model(settings.llm, settings), []
    except ModelError as e:
        msg = f"language model {settings.llm!r} unavailable ({e}); answering extractively"
        if warn:
            warn(msg)
        return None, [f"llm_unavailable: {e}"]


class Pipeline:
    def __init__(self, kb: KnowledgeBase, *, lm: LanguageModel | None = None, lm_flags: Iterable[str] = (),
                 settings: Settings | None = None) -> None:
        """``lm``: the language model (None: extractive answers and the lexical judge)."""
        self.kb = kb
        self.settings = settings or kb.settings
        self.lm = lm
        self.lm_flags = list(lm_flags)
        self.fallback_on_crash = True  # the doctor's re-runs turn this off: a crash ends its repairs instead

    # ------------------------------------------------------------------ public
    def with_model(self, lm: LanguageModel | None) -> "Pipeline":
        """This pipeline (knowledge base, settings, model flags) over another model — the doctor's re-runs use
        the budget-limited wrapper of the same model."""
        return Pipeline(self.kb, lm=lm, lm_flags=self.lm_flags, settings=self.settings)

    def judge_for(self, lm: LanguageModel | None) -> Judge:
        """The judge the settings name, over ``lm`` (what every layer of a run with ``lm`` uses)."""
        return self._judge(lm)

    def run_layer(self, layer: str, state: AskState, **overrides: Any) -> tuple[AskState, dict[str, Any]]:
        """One layer's function on ``state`` (no trace; the model only through the live one): what the debugger's
        probes use to ask "what would this layer do with that?". ``overrides``: settings for this call only."""
        if layer not in QUERY_LAYERS:
            raise RagclinicError(f"no query layer {layer!r}; query layers: {', '.join(QUERY_LAYERS)}")
        settings = self.settings.model_copy(update=overrides) if overrides else self.settings
        ctx = RunContext(self.kb, settings, self.lm, self._judge(self.lm), self._generator(self.lm))
        return self._layer(ctx, layer, state)

    def ask(self, question: str, scope_pairs: dict[str, str] | None = None, *, top_k: int | None = None,
            rerank: bool | None = None, on_token: TokenCallback | None = None, debug_round_id: str = "",
            save: bool = True, enforced: dict[str, str] | None = None, on_span: SpanCallback | None = None,
            conversation: tuple[str, ...] = ()) -> tuple[AskState, Trace]:
        """``enforced``: tags every passage must carry whatever ``scope_pairs`` ask for (a server key's tenant);
        ``on_span(span, state)`` is called as each layer finishes (the server's streamed events);
        ``conversation``: the user's earlier questions — a follow-up's dangling pronoun is resolved from them
        (the request keeps the user's words as ``original``)."""
        from ragclinic.pipeline.reason.ambiguity import resolve_followup

        s = self.settings
        if len(question) > s.max_question_chars:
            raise LimitExceeded(f"the question is {len(question)} characters, more than max_question_chars="
                                f"{s.max_question_chars}; shorten it or raise the limit (RAGCLINIC_MAX_QUESTION_CHARS)")
        original = ""
        if conversation and (resolved := resolve_followup(question, conversation)):
            original, question = question, resolved
        pairs = dict(scope_pairs or {})
        must = tuple(sorted((enforced or {}).items()))
        req = AskRequest(question=question, scope=Scope.parse(pairs).require(must),
                         scope_pairs=tuple(sorted(pairs.items())), top_k=top_k or s.top_k,
                         context_k=min(s.context_k, top_k or s.top_k), retriever=s.retriever,
                         rerank=s.rerank if rerank is None else rerank, enforced=must,
                         conversation=tuple(conversation)[-4:], original=original)
        return self.run(AskState(req), "retrieve", on_token=on_token, debug_round_id=debug_round_id, save=save,
                        on_span=on_span)

    def rerun(self, trace: Trace, from_layer: str, *, change: Callable[[AskState], AskState] | None = None,
              frozen: bool = False, on_token: TokenCallback | None = None, save: bool = True, admin: bool = False
              ) -> tuple[AskState, Trace]:
        """Restart ``trace`` at ``from_layer``; ``change`` may alter the rebuilt state first (a treatment,
        a counterfactual). ``frozen``: answer model calls from the trace's recorded outputs.

        The state may hold only chunks the trace's enforced tags admit (what its tenant's key could retrieve):
        otherwise the re-run raises ``OutsideScope`` — unless ``admin`` (a key without a tenant: the debugger's
        probes, the library), when it is the admin's run: the enforced tags are dropped and it starts a debug round
        of its own, so that no tenant's key can read it (issue 32)."""
        from ragclinic.errors import OutsideScope
        from ragclinic.trace.owner import outside

        before = state = start_of(trace, from_layer)
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
        tape = Tape()
        lm = None
        frozen = list(frozen) if frozen is not None else None
        if self.lm is not None or frozen or crashes:  # a replay of a run that had no model runs without one too
            lm = RecordingModel(self.lm, tape, frozen or (), max_seconds=self.settings.max_model_seconds,
                                crashes=crashes if self.lm is None else None)
        ctx = RunContext(self.kb, self.settings, lm, self._judge(lm), self._generator(lm), on_token,
                         list(self.lm_flags))
        trace_id, t_start, spans = new_trace_id(), time.perf_counter(), []
        start = QUERY_LAYERS.index(from_layer)
        for layer in QUERY_LAYERS[:start]:
            if parent is not None and (old := parent.span(layer)) is not None:
                spans.append(replace(old, status="replayed", started_ms=0.0, duration_ms=0.0))
        if change is not None:
            spans.append(change)
        for layer in QUERY_LAYERS[start:]:
            tape.layer = layer
            t0 = time.perf_counter()
            try:
                state, outputs = self._layer(ctx, layer, state)
            except ModelCrashed as e:
                if not self.fallback_on_crash or ctx.lm is None:
                    raise
                spans.append(Span(layer, "error", _ms(t_start, t0), _ms(t0, time.perf_counter()),
                                  _inputs(layer, state), {}, error=e.reason))
                ctx = self._without_model(ctx, e, on_token)
                state, outputs = self._layer(ctx, layer, state)
            spans.append(Span(layer, "ok", _ms(t_start, t0), _ms(t0, time.perf_counter()),
                              _inputs(layer, state), outputs))
            if on_span is not None:
                on_span(spans[-1], state)
        trace = Trace(id=trace_id, debug_round_id=debug_round_id or trace_id, created=time.time(),
                      query=state.request.question, scope=dict(state.request.scope_pairs),
                      settings=self._settings_dump(), kb_version=self.kb.db.version, spans=tuple(spans),
                      model_calls=tuple(tape.calls), final={},
                      parent_id=parent.id if parent else "",
                      rerun_from=from_layer if parent or change else "",
                      request=request_to_dict(state.request))
        answer = replace(state.answer, trace_id=trace.id)
        trace = replace(trace, final=answer.to_json())
        if save:
            save_trace(self.kb.db, trace)
        return replace(state, answer=answer), trace

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _layer(ctx: RunContext, layer: str, state: AskState) -> tuple[AskState, dict[str, Any]]:
        try:
            with in_layer(layer):
                return LAYER_FUNCS[layer](ctx, state)
        except RagclinicError:
            raise
        except Exception as e:  # a bug or a backend failure: name the layer that broke
            raise LayerError(layer, e) from e

    def _without_model(self, ctx: RunContext, crash: ModelCrashed, on_token: TokenCallback | None) -> RunContext:
        """The model died mid-question: this layer and the rest run without it (lexical judge, extractive
        answer), and the answer says why. The next question starts a new worker."""
        note = f"{crash.reason}; answered extractively"
        flag = "llm_time_limit" if isinstance(crash, ModelTimeExceeded) else "llm_crashed"
        if on_token:
            on_token(f"\n[{note}]\n")
        judge = ctx.judge if cheap(ctx.judge) else LexicalJudge()  # the learned verifier needs no model
        return RunContext(ctx.kb, ctx.settings, None, judge, self._generator(None), on_token,
                          ctx.flags + [f"{flag}: {note}"])

    def _judge(self, lm: LanguageModel | None) -> Judge:
        from ragclinic.verify import create_judge

        return create_judge(self.settings.judge, lm)

    def _generator(self, lm: LanguageModel | None) -> Generator:
        if lm is None:
            return ExtractiveGenerator(self.settings.extractive_sentences)
        if self.settings.generator != "llm":
            return GENERATORS.create(self.settings.generator)
        return LLMGenerator(lm, self.settings.llm_max_tokens, self.settings.llm_temperature)

    def _settings_dump(self) -> dict[str, Any]:
        return self.settings.model_dump(mode="json", exclude=_SECRET_SETTINGS)


state_from_trace = start_of  # the state a trace had when a layer started (trace/states.py)


def _inputs(layer: str, state: AskState) -> dict[str, Any]:
    r = state.request
    if layer == "retrieve":
        return {"query": r.question, "top_k": r.top_k, "retriever": r.retriever, "rerank": r.rerank,
                "scope": dict(r.scope_pairs)}
    if layer == "scope":
        return {"hits": len(state.hits), "context_k": r.context_k}
    if layer == "gate":
        return {"passages": len(state.passages)}
    return {"route": state.decision.route if state.decision else ""}


def _ms(a: float, b: float) -> float:
    return round((b - a) * 1000, 3)
