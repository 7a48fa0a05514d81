"""The settings of what a knowledge base derives from its documents — cause → effect links, the knowledge graph,
the questions it learned (issue 53; ragclinic/learn/): a part of ``Settings`` (settings.py inherits it), kept
here so each file stays readable."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class DerivedSettings(BaseModel):
    causal_links: bool = Field(False, description="Extract cause → effect links at ingest (`ingest --causal`; once "
                               "set, the knowledge base keeps extracting) for causal-aware ranking and chains.")
    causal_weights: tuple[float, float, float] = Field((0.5, 0.35, 0.15), description="Causal questions' ranking: "
                                                       "α·similarity + β·causal-chain match + γ·recency.")
    graph: Literal["", "fast", "model"] = Field("", description="Build a knowledge graph of entities, relations and "
                                                "communities at ingest (`ingest --graph [fast|model]`; once set, the "
                                                "knowledge base keeps it current) for questions about the whole "
                                                "collection. fast: rules; model: the language model extracts.")
    graph_global_threshold: float = Field(0.31, ge=0.0, le=1.01, description="Score from which the gate treats a "
                                          "question as global (about the whole collection), chosen on the dev half of "
                                          "bench/graph/questions.jsonl (docs/graph.md).")
    graph_communities_k: int = Field(6, ge=1, le=30, description="Communities a global question's answer is mapped "
                                     "over (most relevant first).")
    need_routing: bool = Field(True, description="Route by what the question needs, from its form and what the "
                               "search found (reason/need.py): a set question whose evidence spans documents takes the "
                               "documents path, an explanation asked in any form over a stated cause → effect link is "
                               "causal. False: the cue rules alone (before issue 55).")
    graph_expand: int = Field(1, ge=0, le=5, description="Passages a specific question gains by following the graph "
                              "1-2 hops from the entities it names (0 = no expansion).")
    learn_questions: int = Field(3, ge=1, le=5, description="Questions `kb learn` asks the model to write for each "
                                                            "chunk (each filtered by its chunk's rank).")
    learn_max_tokens: int = Field(160, ge=32, le=1024, description="The model's reply per chunk at most, in tokens "
                                                                   "(the cost bound of `kb learn`).")
    learn_keep_rank: int = Field(10, ge=1, le=100, description="A learned question is kept when its own chunk ranks "
                                                               "within this many hits for it (doc2query--).")
    learn_after_ingest: bool = Field(False, description="Run `kb learn` in the background after each ingest (the "
                                                        "knowledge base answers meanwhile).")
    learned_retrieval: bool = Field(False, description="Hybrid retrieval also ranks chunks by their learned "
                                                       "questions and keywords (rankers questions, question_terms), "
                                                       "once `kb learn` has run. Off by default: on a real manual's "
                                                       "held-out questions it lowered recall@5 (bench/RESULTS.md, "
                                                       "issue 53).")
    query_adapter: bool = Field(True, description="Dense retrieval maps the question's vector through the knowledge "
                                                  "base's own query adapter, when `kb learn` fitted one that beat no "
                                                  "adapter on held-out learned questions.")
    learned_gate: bool = Field(False, description="The gate uses the evidence threshold `kb learn` fitted on the "
                                                  "knowledge base's own questions, when it beat the shipped one on a "
                                                  "held-out half and gate_threshold_judge is not set. Off by "
                                                  "default: on a real manual's held-out questions it refused no more "
                                                  "unanswerable questions than the shipped gate and twice the "
                                                  "answerable ones (bench/RESULTS.md, issue 53).")
