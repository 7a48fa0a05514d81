"""What a caller hands the Clinic (``Question``: the data of one question) and what it gets back
(``Consultation``). Configuration — the model, the doctor's and the cache's defaults, the thresholds — is the
clinic's, given to ``Clinic.open``; a Question may only override the per-question choices."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import RagclinicError
from ragclinic.models.llm import TokenCallback
from ragclinic.pipeline.request import Hooks, SpanCallback, request_for
from ragclinic.trace.model import Trace
from ragclinic.types import Answer, AskRequest

Pairs = tuple[tuple[str, str], ...]
REPAIR_MODES = ("sync", "async")


@dataclass(frozen=True)
class Question:
    """One question and what comes with it. ``scope``: KEY=VALUE pairs like the CLI's ``--scope``; ``enforced``:
    tags every passage must carry whatever ``scope`` asks (the server's tenant of a key); ``conversation``: the
    user's earlier questions (a follow-up's "it" / 它 is resolved from them); ``owner``: who asks (a clarification
    they gave before is reused); ``debug_round_id``: continue a round (the UI's reply to a clarifying question).
    ``doctor`` / ``cache`` / ``top_k`` / ``rerank``: None follows the settings. ``interactive``: an ambiguous
    question gets one clarifying question back. ``repair``: "sync" (the doctor examines and repairs before the
    answer is returned) or "async" (the plain answer now; ``Clinic.repair`` runs the doctor on its trace later).
    A cached repaired answer is returned either way. ``session``: what a running experiment assigns the question's
    arm by (a user stays in one arm); "" uses ``owner``."""

    text: str
    scope: Pairs = ()
    doctor: bool | None = None
    top_k: int | None = None
    rerank: bool | None = None
    cache: bool | None = None
    interactive: bool = False
    enforced: Pairs = ()
    conversation: tuple[str, ...] = ()
    owner: str = ""
    debug_round_id: str = ""
    repair: str = "sync"
    session: str = ""  # what an experiment assigns an arm by (the server's session or key); "" → ``owner``

    def __post_init__(self) -> None:  # dicts and lists in, tuples kept: the request stays frozen
        if self.repair not in REPAIR_MODES:
            raise RagclinicError(f"repair={self.repair!r}: one of {', '.join(REPAIR_MODES)}")
        object.__setattr__(self, "scope", _pairs(self.scope))
        object.__setattr__(self, "enforced", _pairs(self.enforced))
        object.__setattr__(self, "conversation", tuple(self.conversation))

    @property
    def scope_dict(self) -> dict[str, str]:
        return dict(self.scope)

    @property
    def enforced_dict(self) -> dict[str, str]:
        return dict(self.enforced)

    def cache_scope(self) -> dict[str, str]:
        """The answer cache's scope: the asked scope, the enforced tags and interactivity (an ambiguous question
        is asked back, not answered per sense) are kept apart."""
        keyed = {**self.scope_dict, **{f"\x00enforced:{k}": v for k, v in self.enforced}}
        if self.interactive:
            keyed["\x00interactive"] = "1"
        return keyed

    def to_request(self, settings: Settings) -> AskRequest:
        """The pipeline's request for this question, built once (``pipeline.request.request_for``): the Clinic
        hands it, and ``hooks``, to the doctor or the plain pipeline unchanged."""
        return request_for(settings, self.text, self.scope_dict, top_k=self.top_k, rerank=self.rerank,
                           enforced=self.enforced_dict, conversation=self.conversation)

    def hooks(self, on_token: TokenCallback | None = None, on_span: SpanCallback | None = None) -> Hooks:
        """What the caller hears of the run (``on_token``, ``on_span``) and the debug round it continues."""
        return Hooks(on_token, on_span, self.debug_round_id)

    def cacheable(self) -> bool | None:
        """False when the cache may not answer (an override that is not part of its key, or ``cache=False``);
        None: the ``answer_cache`` setting decides."""
        overridden = self.top_k is not None or self.rerank is not None or bool(self.conversation)
        return False if (overridden or self.cache is False) else None


@dataclass(frozen=True)
class Clarification:
    """A clarifying question the doctor asked back, and the reply merged into the question (``reused``: the
    owner's remembered reply to the same ambiguity, not asked again)."""

    clarifying_question: str
    reply: str
    reused: bool
    debug_round_id: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Consultation:
    """What ``Clinic.answer`` gives the CLI and the server, typed to the edge: the answer, the doctor's full result
    when the doctor ran (None for the plain pipeline and for a cached answer), the run's trace, the clarification
    merged in. It becomes the `ask --json` object only where it is rendered: ``to_json()`` (also ``payload``), in
    the CLI's ``--json`` and the server's responses. ``stored``: the answer cache's record when the cache answered
    (kept as JSON: that is what a cache holds); ``repair``: the server's ticket for a background repair;
    ``view``: what the caller may see of the JSON (a tenant's key: the knowledge-base folder cut from paths)."""

    answer: Answer
    result: Any = None  # DoctorResult
    cached: bool = False
    trace: Trace | None = None  # the run's trace (the doctor's root trace); None for a cached answer
    repair_pending: bool = False  # repair="async": the plain answer, its trace waiting for ``Clinic.repair``
    clarification: Clarification | None = None
    stored: Mapping[str, Any] | None = None
    repair: Mapping[str, Any] | None = None
    view: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    experiment: Mapping[str, str] | None = None  # {name, arm} when an experiment's arm answered

    def to_json(self) -> dict[str, Any]:
        """The `ask --json` object: the cached record as kept; else the doctor's result (the answer, its symptoms,
        repairs, the initial answer, the doctor's summary) or the plain answer, ``cached: false``; with the
        clarification and the repair ticket when there are."""
        if self.stored is not None:
            out = dict(self.stored)
        else:
            out = {**(self.result.to_json() if self.result is not None else self.answer.to_json()), "cached": False}
        if self.clarification is not None:
            out["clarification"] = self.clarification.to_json()
        if self.repair is not None:
            out["repair"] = dict(self.repair)
        if self.experiment is not None:
            out["experiment"] = dict(self.experiment)
        return self.view(out) if self.view is not None else out

    @property
    def payload(self) -> dict[str, Any]:
        """``to_json()``: exactly the `ask --json` object (docs/api.md)."""
        return self.to_json()


def _pairs(value: Mapping[str, str] | Pairs | None) -> Pairs:
    items = value.items() if isinstance(value, Mapping) else (value or ())
    return tuple((str(k), str(v)) for k, v in items)
