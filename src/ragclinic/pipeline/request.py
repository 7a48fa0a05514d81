"""The corridor's two objects (issue 54): the ``AskRequest``, built once from a question and the settings
(``request_for``; ``clinic.Question.to_request`` calls it), and ``Hooks`` — what the caller hears of a run as it
goes and how the run is kept. ``Pipeline.ask`` and ``Doctor.ask`` take exactly these two; nothing between the
Clinic and the first layer unpacks the request into keyword arguments and packs it again."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ragclinic.config import Settings
from ragclinic.errors import LimitExceeded
from ragclinic.models.llm import TokenCallback
from ragclinic.pipeline.reason.ambiguity import resolve_followup
from ragclinic.trace.model import Span
from ragclinic.types import AskRequest, AskState, Scope

SpanCallback = Callable[[Span, AskState], None]  # (the finished layer's span, the state after it)
CONVERSATION_KEPT = 4  # earlier questions a request keeps: a follow-up's reference is to the last few


@dataclass(frozen=True)
class Hooks:
    """``on_token(piece)``: the answer text as it is written; ``on_span(span, state)``: each layer as it finishes
    (the server's streamed events); ``debug_round_id``: the round the run belongs to (a clarification's reply, the
    UI's follow-up; "" starts one); ``save``: keep the trace in the knowledge base (False: a probe, a comparison)."""

    on_token: TokenCallback | None = None
    on_span: SpanCallback | None = None
    debug_round_id: str = ""
    save: bool = True


NO_HOOKS = Hooks()


def request_for(settings: Settings, question: str, scope_pairs: Mapping[str, str] | None = None, *,
                top_k: int | None = None, rerank: bool | None = None, enforced: Mapping[str, str] | None = None,
                conversation: Sequence[str] = ()) -> AskRequest:
    """The request for ``question``: ``scope_pairs`` like the CLI's ``--scope``; ``enforced``: tags every passage
    must carry whatever the scope asks (a server key's tenant); ``top_k`` / ``rerank``: None follows ``settings``;
    ``conversation``: the user's earlier questions — a follow-up's dangling pronoun is resolved from them and the
    request keeps the user's words as ``original``. Raises ``LimitExceeded`` for a question over
    ``max_question_chars``."""
    if len(question) > settings.max_question_chars:
        raise LimitExceeded(f"the question is {len(question)} characters, more than max_question_chars="
                            f"{settings.max_question_chars}; shorten it or raise the limit "
                            "(RAGCLINIC_MAX_QUESTION_CHARS)")
    original = ""
    if conversation and (resolved := resolve_followup(question, conversation)):
        original, question = question, resolved
    pairs = dict(scope_pairs or {})
    must = tuple(sorted((enforced or {}).items()))
    k = top_k or settings.top_k
    return AskRequest(question=question, scope=Scope.parse(pairs).require(must),
                      scope_pairs=tuple(sorted(pairs.items())), top_k=k, context_k=min(settings.context_k, k),
                      retriever=settings.retriever, rerank=settings.rerank if rerank is None else rerank,
                      enforced=must, conversation=tuple(conversation)[-CONVERSATION_KEPT:], original=original)


_REQUEST_FIELDS = ("top_k", "rerank", "enforced", "conversation")
_HOOK_FIELDS = ("on_token", "on_span", "debug_round_id", "save")


def as_request(settings: Settings, request: AskRequest | str, scope_pairs: Mapping[str, str] | None,
               hooks: Hooks | None, loose: Mapping[str, object]) -> tuple[AskRequest, Hooks]:
    """(request, hooks) for ``Pipeline.ask`` / ``Doctor.ask``: as given, or — ``request`` a question's text — built
    from ``scope_pairs`` and the loose keyword arguments. A built request given loose arguments as well is an
    error naming them: it would silently ignore them."""
    unknown = sorted(set(loose) - set(_REQUEST_FIELDS) - set(_HOOK_FIELDS))
    if unknown:
        raise TypeError(f"ask() got unexpected keyword argument(s) {', '.join(unknown)}; the request takes "
                        f"{', '.join(_REQUEST_FIELDS)}, the hooks {', '.join(_HOOK_FIELDS)}")
    if isinstance(request, AskRequest):
        if scope_pairs is not None or loose:
            extra = ["scope_pairs"] * (scope_pairs is not None) + sorted(loose)
            raise TypeError(f"ask(request) got {', '.join(extra)} beside a built AskRequest: put them in the request "
                            "(request_for) or in the Hooks")
        return request, hooks or NO_HOOKS
    built = request_for(settings, request, scope_pairs, **{k: v for k, v in loose.items() if k in _REQUEST_FIELDS})
    if hooks is None:
        hooks = Hooks(**{k: v for k, v in loose.items() if k in _HOOK_FIELDS})
    elif any(k in _HOOK_FIELDS for k in loose):
        raise TypeError("ask() got hooks= and loose hook arguments: give one or the other")
    return built, hooks
