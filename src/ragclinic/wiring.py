"""The one wiring module: the parts a question runs on, built from the Settings here and nowhere else.

The knowledge base (opened or created, with the embedder the ``embedder`` setting names; its vector index comes
from the VECTOR_INDEXES registry, store/vector_index.py), the language model, the judge (verify.create_judge: the
one way a judge or verifier is chosen), the generator and the pipeline over them. The Clinic, the CLI, the
server, the evaluation harness, the Ray workers and the health checks ask this module for parts; none builds its
own. ``Parts(settings)`` builds each part on first use and keeps it::

    parts = Parts(Settings.load("kb", llm="none"))
    state, trace = parts.pipeline.ask("What is the risk-free rate?")
    parts.close()
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ragclinic.config import Settings
from ragclinic.errors import ConfigError, ModelError
from ragclinic.graph import sync as graph_sync
from ragclinic.ingest.result import IngestAborted, IngestResult
from ragclinic.ingest.runner import ingest
from ragclinic.learn import gate_fit
from ragclinic.learn import run as learn_run
from ragclinic.learn.run import LearnResult
from ragclinic.models.embedder import Embedder
from ragclinic.models.factory import create_embedder, create_language_model
from ragclinic.models.judge import Judge
from ragclinic.models.llm import LanguageModel
from ragclinic.pipeline.generate import Generator, create_generator
from ragclinic.pipeline.runner import Pipeline
from ragclinic.store.kb import KnowledgeBase
from ragclinic.pipeline.retrieve import create_retriever
from ragclinic.verify import Verifier, cheap, create_judge, create_verifier

Warn = Callable[[str], None]
LOAD: Any = object()  # Parts(model=LOAD): load the model the ``llm`` setting names on first use


# ---------------------------------------------------------------------------------------------- one part each
def embedder(settings: Settings) -> Embedder | None:
    """The embedder the ``embedder`` setting names (None for ``none``: lexical retrieval only)."""
    return create_embedder(settings.embedder)


def open_kb(settings: Settings, *, create: bool = False, sync_indexes: bool = True) -> KnowledgeBase:
    """The knowledge base at ``settings.kb`` with this module's embedder; ``create``: make it when it is not there
    (else StoreError: "run ingest first"); ``sync_indexes``: catch its derived indexes up when no one writes."""
    return KnowledgeBase.open(settings, create=create, sync_indexes=sync_indexes, embedder=embedder)


def language_model(settings: Settings, warn: Warn | None = None, *, strict: bool = False
                   ) -> tuple[LanguageModel | None, list[str]]:
    """The model the ``llm`` setting names, or None with a flag (and a warning) when it cannot load: answers are
    then extractive and say why (``llm_unavailable: ...``). None without a flag for ``llm = "none"``. ``strict``:
    raise the ModelError instead (the health check reports it)."""
    try:
        return create_language_model(settings.llm, settings), []
    except ModelError as e:
        if strict:
            raise
        if warn:
            warn(f"language model {settings.llm!r} unavailable ({e}); answering extractively")
        return None, [f"llm_unavailable: {e}"]


def judge(settings: Settings, lm: LanguageModel | None) -> Judge:
    """The judge the ``judge`` setting names (the learned verifier by default; ``llm``: the model's yes/no
    probabilities, word overlap without a model)."""
    return create_judge(settings.judge, lm)


def verifier(name: str, lm: LanguageModel | None = None) -> Verifier:
    """A verifier by name (``learned``, ``learned-cross``, ``llm``, ``lexical``, ``fake``): the health checks'."""
    return create_verifier(name, lm)


def generator(settings: Settings, lm: LanguageModel | None) -> Generator:
    """The generator: extractive without a model, else the one the ``generator`` setting names."""
    return create_generator(settings, lm)


def pipeline(kb: KnowledgeBase, lm: LanguageModel | None = None, flags: Iterable[str] = (),
             settings: Settings | None = None) -> Pipeline:
    """The query pipeline over ``kb`` and ``lm`` (``settings``: other than the knowledge base's, e.g. a trace's;
    else the knowledge base's, with the gate threshold it learned when it kept one: learn/gate_fit.py)."""
    return Pipeline(kb, lm=lm, lm_flags=flags, settings=settings or gate_fit.calibrated(kb, kb.settings))


# ---------------------------------------------------------------------------------------------- the set
class Parts:
    """The parts for one Settings, each built on first use and kept until ``close``.

    ``model``: a LanguageModel to use, None for none (extractive answers), or LOAD (the ``llm`` setting's, on
    first use). ``kb``: an already open knowledge base (left open by ``close``: its owner closes it)."""

    def __init__(self, settings: Settings, *, model: LanguageModel | None = LOAD, warn: Warn | None = None,
                 sync_indexes: bool = True, kb: KnowledgeBase | None = None) -> None:
        self.settings, self.warn, self._sync = settings, warn, sync_indexes
        self._kb, self._owns_kb = kb, kb is None
        self._lm, self._flags, self._lm_loaded = (None if model is LOAD else model), [], model is not LOAD
        self._judge: Judge | None = None
        self._pipeline: Pipeline | None = None
        self._arm_pipelines: dict[str, Pipeline] = {}

    @property
    def kb(self) -> KnowledgeBase:
        """The knowledge base (StoreError "run ingest first" when there is none)."""
        if self._kb is None:
            self._kb = open_kb(self.settings, sync_indexes=self._sync)
        return self._kb

    def kb_for_writing(self) -> KnowledgeBase:
        """The knowledge base, created when it is not there yet (an ingest's); its indexes are caught up by it."""
        if self._kb is None:
            self._kb = open_kb(self.settings, create=True, sync_indexes=False)
        return self._kb

    @property
    def opened(self) -> bool:
        return self._kb is not None

    @property
    def lm(self) -> LanguageModel | None:
        if not self._lm_loaded:
            self._lm, self._flags = language_model(self.settings, self.warn)
            self._lm_loaded = True
        return self._lm

    @property
    def model_flags(self) -> list[str]:
        """Why answers are extractive when the model could not load (``llm_unavailable: ...``), else []."""
        self.lm  # noqa: B018 - loads it
        return list(self._flags)

    @property
    def judge(self) -> Judge:
        """The judge the settings name; loads the model only when the judge is the model (``judge = "llm"``)."""
        if self._judge is None:
            self._judge = judge(self.settings, self.lm if self.settings.judge == "llm" else None)
        return self._judge

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline over the knowledge base and the model, rebuilt after ``changed``."""
        if self._pipeline is None:
            lm = self.lm
            self._pipeline = pipeline(self.kb, lm, self._flags)
        return self._pipeline

    def pipeline_for(self, key: str, settings: Settings) -> Pipeline:
        """The pipeline over the same knowledge base and model with other query-time settings (an experiment's
        arm, ``key`` naming it), with the gate threshold the knowledge base learned; kept until ``changed``."""
        if key not in self._arm_pipelines:
            lm = self.lm
            self._arm_pipelines[key] = pipeline(self.kb, lm, self._flags, gate_fit.calibrated(self.kb, settings))
        return self._arm_pipelines[key]

    def ingest(self, paths: Iterable[Path], *, via: Callable[..., IngestResult] | None = None,
               on_graph_progress=None, **run: Any) -> IngestResult:
        """``paths`` ingested (``via``: another ingest with the same arguments, e.g. on Ray) under the knowledge
        base's write lock, then its graph brought up to date; an aborted ingest (``strict``) that made the folder
        removes it again. ``run``: ingest.runner.ingest's options."""
        new_folder = not self.settings.kb.exists()
        kb = self.kb_for_writing()
        self.changed()  # the next question sees the new version
        kb.lock()
        try:
            result = (via or ingest)(kb, list(paths), **run)
            self.sync_graph(on_progress=on_graph_progress, result=result)
            return result
        except IngestAborted:
            if new_folder:
                self.close()
                shutil.rmtree(self.settings.kb, ignore_errors=True)
            raise
        finally:
            kb.unlock()

    def sync_graph(self, mode: str | None = None, *, on_progress=None, result: IngestResult | None = None):
        """The knowledge graph brought up to date with the chunks (``mode`` or the ``graph`` setting; None keeps
        the KB's; none: nothing to do) → GraphSyncResult, also put on ``result.graph``. The caller holds the
        write lock."""
        kb = self.kb
        mode = mode or self.settings.graph or None
        if not mode and not graph_sync.enabled(kb):
            return None
        model = self.lm if (mode or graph_sync.mode_of(kb)) == "model" else None
        done = graph_sync.sync(kb, mode, model=model, on_progress=on_progress)
        self.changed()
        if result is not None:
            result.graph = done.to_json()
        return done

    def learn(self, *, on_progress=None, budget_s: float | None = None, max_chunks: int | None = None,
              should_stop=None, writer=None) -> LearnResult:
        """The chunks not learned yet get the model's questions and keywords (learn/run.py), one run at a time;
        ConfigError naming the fix without a language model. ``writer``: who writes them (the Ray workers of
        ``kb learn --ray``); default this process's model."""
        if writer is None and self.lm is None:
            raise ConfigError("kb learn needs a language model to write the questions: install it (pip install -e "
                              "'.[local]') and use --llm local, or --llm server with an OpenAI-compatible server")
        kb = self.kb
        with learn_run.one_run(kb.folder):
            res = learn_run.learn(kb, self.lm if writer is None else None, on_progress=on_progress,
                                  budget_s=budget_s, max_chunks=max_chunks, should_stop=should_stop, writer=writer)
            if (res.learned or res.dropped) and cheap(self.judge):  # the gate on the KB's own questions (~1 min)
                res.gate = gate_fit.fit(kb, self.judge, create_retriever(kb), self.settings).to_json()
        return res

    def changed(self) -> None:
        """The knowledge base was written (an ingest, a graph sync): the next question gets a new pipeline."""
        self._pipeline = None
        self._arm_pipelines.clear()

    def close(self) -> None:
        if self._kb is not None and self._owns_kb:
            self._kb.close()
        self._kb, self._pipeline = None, None
        self._arm_pipelines.clear()
