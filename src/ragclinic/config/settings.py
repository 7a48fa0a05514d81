"""The one settings object. Every default is written here and nowhere else.

Precedence, highest first: explicit arguments (CLI flags), environment variables ``RAGCLINIC_*``, the knowledge
base's ``settings.toml``, the defaults below. See docs/settings.md for why each default is what it is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragclinic.config.files import SETTINGS_FILE, KbFileSource, explain, file_values, read_file, write_file
from ragclinic.config.derived import DerivedSettings
from ragclinic.config.names import check_name
from ragclinic.errors import ConfigError

# Settings that define what is stored: changing them on an existing KB would mix incompatible data,
# so they are written into the KB's settings file when the KB is created.
KB_DEFINING = ("embedder", "chunk_max_tokens", "chunk_min_tokens", "overlap_min_tokens", "overlap_max_tokens",
               "lexical_stem", "chunk_context", "index_plain")
# What a KB made before a setting became KB-defining was built with (when that differs from today's default).
LEGACY_VALUES = {"chunk_context": False, "index_plain": False}
# What a trace recorded before a setting existed ran with: a replay of it must make the same model calls.
TRACE_LEGACY_VALUES = {"answer_prompt": 1, "crosslingual": False, "learned_retrieval": False, "subject_check": False,
                       "need_routing": False}


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragclinic"


class Settings(BaseSettings, DerivedSettings):
    model_config = SettingsConfigDict(env_prefix="RAGCLINIC_", extra="forbid", validate_default=True)

    # --- knowledge base and caches
    kb: Path = Field(Path(".ragclinic"), description="Knowledge-base folder.")
    cache_dir: Path = Field(default_factory=_default_cache_dir,
                            description="User cache (embedding cache shared across knowledge bases).")

    # --- ingest limits
    max_file_size: int = Field(100 * 1024 * 1024, gt=0, description="Bytes; larger files are refused.")
    zip_max_uncompressed: int = Field(500 * 1024 * 1024, gt=0,
                                      description="DOCX: largest total uncompressed size accepted.")
    max_pages: int = Field(5000, ge=1, description="PDF: files with more pages are refused (split them).")
    max_chunks_per_document: int = Field(50_000, ge=1, description="A document that makes more chunks is "
                                                                  "refused (a runaway file, or split it).")
    parse_timeout_s: float = Field(120.0, ge=0, description="Seconds one document's parsing and chunking may "
                                   "take (a file's, for formats of one document); past it the work is stopped "
                                   "(it runs in a worker process) and the file fails. 0: parse in-process, "
                                   "no limit.")
    max_table_columns: int = Field(1000, ge=1, le=2000, description="A file with a wider table is refused (each "
                                   "table is also an SQL table; SQLite stores at most 2000 columns).")
    max_table_cells: int = Field(2_000_000, ge=1, description="A file whose tables hold more cells (rows × "
                                 "columns) is refused: every cell is counted, chunked and indexed.")
    keep_hidden_text: bool = Field(False, description="Index text a reader cannot see (display:none, white or "
                                                      "1-pt text, hidden DOCX runs); off: it is left out and "
                                                      "named in the parse report.")
    zip_max_ratio: float = Field(200.0, gt=1, description="DOCX: largest compression ratio accepted.")
    jsonl_id_fields: list[str] = Field(["_id", "id"], min_length=1,
                                       description="JSONL: the first of these fields present is the record id.")
    jsonl_title_field: str = "title"
    jsonl_text_field: str = "text"

    ocr: str = Field("eng+chi_sim", description="Tesseract languages for pages and images with no text layer "
                                              "(scans, pictures); empty: no OCR, such a page stays empty.")
    ocr_page_seconds: float = Field(60.0, gt=0, description="OCR time one page may take; a page over it fails.")
    ocr_max_pages: int = Field(200, ge=1, description="Pages of one document read by OCR, at most.")
    ocr_workers: int = Field(2, ge=1, le=32, description="Pages read by OCR at once (a tesseract process each).")
    keep_hyphens: list[str] = Field([], description="Compounds whose hyphen at a line break is always kept "
                                     "(\"cash-flow\"): for ones the de-hyphenation joins. Re-ingest with "
                                     "--reparse after changing it.")
    keep_boilerplate: list[str] = Field([], description="HTML globs whose nav/header/footer stay (ingest --reparse).")
    ocr_dpi: int = Field(0, ge=0, le=600, description="Scans rendered at this dpi for OCR; 0: at their own (100-400).")

    # --- parse quality
    keyword_top_n: int = Field(50, gt=0, description="Distinctive tokens checked for keyword retention.")
    keyword_retention_warn: float = Field(0.9, ge=0, le=1)
    garbled_warn: float = Field(0.01, ge=0, le=1)

    # --- chunking (token counts use the embedding model's own tokenizer; see docs/settings.md)
    chunk_max_tokens: int = Field(320, ge=16, le=500)
    chunk_min_tokens: int = Field(48, ge=1)
    overlap_min_tokens: int = Field(16, ge=0)
    overlap_max_tokens: int = Field(96, ge=0)

    # --- embedding and indexes
    embedder: str = Field(
        "e5", description="e5 (quality), wordllama (fast static embedder), none (lexical only), or a plugin.")
    embed_batch_size: int = Field(16, ge=1, le=256)
    dense_exact_max: int = Field(50_000, ge=0,
                                 description="Exact numpy search up to this many chunks, HNSW above.")
    hnsw_m: int = Field(16, ge=4, le=128)
    hnsw_ef_construction: int = Field(200, ge=10)
    hnsw_ef_search: int = Field(128, ge=10)
    lexical_stem: bool = Field(True, description="Snowball-stem English tokens in the lexical index.")
    chunk_context: bool = Field(True, description="Index each chunk with its document title and section path "
                                                  "(contextual header); the cited text is unchanged.")
    index_plain: bool = Field(True, description="Index each chunk without its Markdown markup (table rules and "
                                                "pipes, code fences, backquotes, escapes, heading marks); the cited "
                                                "text keeps it.")

    # --- retrieval
    retriever: str = Field("hybrid", description="lexical, dense or hybrid (fusion of both).")
    answer_prompt: int = Field(2, ge=1, le=2, description="The answer prompt's wording: 2 asks a yes/no question "
                                                         "to be answered with yes or no and the fact that decides it; "
                                                         "1 is the wording before (traces recorded with it replay "
                                                         "with it).")
    crosslingual: bool = Field(True, description="A question in a language the documents hardly use is also searched "
                                                 "in theirs: the model translates it (one short call).")
    fusion: str = Field("convex", pattern="^(convex|rrf)$",
                        description="Hybrid fusion: convex (min-max normalised scores, weighted) or rrf (ranks).")
    top_k: int = Field(10, ge=1, le=1000, description="Hits returned by retrieval.")
    fusion_depth: int = Field(100, ge=1, le=10_000,
                              description="Candidates each retriever contributes to hybrid fusion.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant (Cormack et al. 2009 use 60).")
    fusion_weights: dict[str, float] = Field({"lexical": 1.0, "dense": 1.0},
                                             description="Per-retriever weight in the fused score.")

    rerank: bool = Field(False, description="Judge-rerank the top rerank_depth hits (slow: ~7 s per passage "
                                            "with the local model; the doctor switches it on when needed).")
    rerank_depth: int = Field(20, ge=1, le=200)

    # --- scope policies
    scope_newest_version: bool = Field(True, description="Exclude superseded versions (same family tag, or a "
                                                         "version tag and the same title) before the search.")
    authority_tag: str = "authority"
    authority_levels: dict[str, float] = Field({"official": 3.0, "reviewed": 2.0, "internal": 1.0, "draft": 0.0},
                                               description="Named authority levels (a numeric tag is used as is).")
    authority_boost: float = Field(0.1, ge=0, le=1,
                                   description="Score × (1 + boost × level / max level) for authoritative sources.")
    conflict_top_n: int = Field(5, ge=2, le=50, description="Top passages checked for conflicting values.")
    strip_instructions: bool = Field(True, description="Cut sentences that address the model (planted "
                                                       "instructions) out of passages before the gate and the "
                                                       "generator see them; the rest of the passage is kept.")
    instruction_detector: Literal["learned", "rules"] = Field(
        "learned", description="What finds planted instructions in passages: learned (the rules, and the small "
                               "e5 classifier for the phrasings they do not know) or rules (patterns only).")
    context_k: int = Field(5, ge=1, le=50, description="Passages given to the gate and the generator (passages "
                                                       "per prompt).")
    max_question_chars: int = Field(4000, ge=16, le=100_000, description="Longer questions are refused.")
    # --- request bounds (a request's scope and text are stored in its traces and the answer cache, several times)
    max_scope_keys: int = Field(32, ge=1, le=1000, description="Scope keys (and upload tags) per request; "
                                                               "more are refused.")
    max_scope_key_chars: int = Field(64, ge=1, le=10_000, description="A longer scope or tag key is refused.")
    max_scope_value_chars: int = Field(512, ge=1, le=1_000_000, description="A longer scope or tag value is "
                                                                           "refused.")
    max_chat_messages: int = Field(200, ge=1, le=100_000, description="Chat completions: more messages in one "
                                                                      "request are refused.")
    max_chat_message_chars: int = Field(32_000, ge=16, le=10_000_000, description="Chat completions: a longer "
                                                                                  "message is refused.")
    max_feedback_note_chars: int = Field(2000, ge=1, le=1_000_000, description="A longer feedback note is "
                                                                               "refused.")
    max_upload_files: int = Field(100, ge=1, le=10_000, description="Files per upload request (the server's "
                                                                    "ingest); more are refused. Each file is "
                                                                    "bounded by max_file_size.")
    max_upload_name_bytes: int = Field(200, ge=16, le=240, description="An uploaded file's name, in UTF-8 bytes "
                                                                       "(the file system's limit is 255, its "
                                                                       "tag sidecar adds 10).")
    max_model_seconds: float = Field(600.0, gt=0, description="Model time one run of the pipeline may use; "
                                                              "past it the rest is answered without the model.")

    # --- language model, judge, gate, generate
    llm: str = Field("local", description="local (Qwen2.5-Coder-1.5B), local-small (0.5B), openai, none "
                                          "(extractive answers), or a plugin.")
    llm_n_ctx: int = Field(4096, ge=512, le=32768, description="Context window of the local model (tokens).")
    llm_threads: int = Field(0, ge=0, description="Threads for the local model; 0 = one per core.")
    llm_prefix_cache: bool = Field(True, description="Keep the system turn's KV state between local-model calls "
                                                     "(results are identical either way; off: every prompt is "
                                                     "evaluated whole, for comparison).")
    llm_field_decoding: bool = Field(True, description="Structured answers from a local model: the schema's keys "
                                                       "and punctuation evaluated in batches, only the values "
                                                       "sampled (models/fields.py); false: one grammar over the "
                                                       "whole schema, every token sampled.")
    llm_hidden_capture: bool = Field(False, description="Load the local model with llama.cpp's eval callback, so "
                                                        "a call can read the residual stream at its last prompt "
                                                        "token (models/hidden.py; the answerability probe, issue "
                                                        "36). The greedy output is the same either way; ~1 ms a "
                                                        "generated token.")
    answer_probe: bool = Field(False, description="Short answers from the local model: read its hidden state at the "
                                                  "status token and refuse when the answerability probe, the "
                                                  "verifier and the constraint checks together say the sources do "
                                                  "not hold the answer (verify/probe.py; issue 36). Loads the model "
                                                  "with the eval callback. No effect for models without a shipped "
                                                  "probe (local-small, servers).")
    active_retrieval: float = Field(0.0, ge=0, le=1, description="Active retrieval (FLARE, generate/active.py): a "
                                    "claim with a token less likely than this is searched again, its guessed words "
                                    "masked, and the answer regenerated before it is shown; 0: off.")
    llm_max_tokens: int = Field(384, ge=8, le=8192, description="Longest answer generated (tokens).")
    llm_temperature: float = Field(0.0, ge=0, le=2)
    llm_isolation: Literal["process", "inline"] = Field(
        "process", description="process: the local model runs in a worker process (a native crash costs one "
                               "extractive answer, not the command); inline: in this process.")
    llm_call_timeout: float = Field(900.0, gt=0, description="Seconds one model call may take before its worker "
                                                            "is treated as hung, killed and replaced.")
    llm_warm_seconds: float = Field(300.0, ge=0, description="ask, chat and diagnose use a local-model worker that "
                                                             "stays warm between commands (one per user and model "
                                                             "configuration, on a Unix socket) and exits after "
                                                             "this many idle seconds; 0: each command starts its "
                                                             "own.")
    llm_cpu_variant: str = Field("", description="llama.cpp CPU variant to load (haswell, skylakex, icelake, "
                                                 "zen4, ...); empty = the best this CPU runs (never AMX).")
    seed: int = Field(0, ge=0)
    openai_base_url: Optional[str] = Field(None, description="e.g. http://localhost:8080/v1 (llama.cpp server).")
    openai_model: Optional[str] = None
    openai_api_key: Optional[SecretStr] = Field(None, description="Or OPENAI_API_KEY; not needed by local servers.")
    openai_timeout: float = Field(60.0, gt=0)
    openai_max_retries: int = Field(2, ge=0, le=10)
    judge: str = Field("learned", description="learned (the trained verifier: calibrated P, ~50 ms a passage, no "
                                              "language model needed), learned-cross (with the sufficiency "
                                              "cross-encoder, ~0.1-0.2 s a passage), llm (P(yes) from the language "
                                              "model's logits, ~1 s a passage) or lexical (word overlap).")
    generator: str = Field("llm", description="llm, or extractive (best-supported sentences, no model).")
    answer_cache: bool = Field(True, description="Answer a repeated or near-identical question from the answer it "
                                                 "got before (same knowledge base version, scope, language and "
                                                 "settings; ask --no-cache: off).")
    answer_cache_threshold: float = Field(0.95, ge=0.5, le=1.0, description="e5 cosine at which a question counts "
                                          "as near-identical (with the same content terms, numbers and question word; "
                                          "bench/RESULTS.md).")
    context_select: bool = Field(True, description="Show the generator each passage's answer-bearing sentences and "
                                                   "their neighbours, and not the passages the verifier ruled out "
                                                   "(fewer prompt tokens; the trace keeps the full passages).")
    context_select_floor: float = Field(0.4, ge=0, le=1.01, description="A passage whose best sentence covers "
                                        "less than this (weighted) share of the question's content terms is shown "
                                        "whole: overlap cannot find the answer of a paraphrased question.")
    extractive_sentences: int = Field(2, ge=1, le=10)
    gate_threshold_lexical: float = Field(0.5, ge=0, le=1, description="Evidence needed to answer (lexical score).")
    gate_threshold_judge: Optional[float] = Field(
        None, ge=0, le=1, description="Evidence needed to answer (judge P(yes)); unset = the value calibrated for "
                                      "the judge's model (docs/settings.md), 0.5 for an uncalibrated model.")
    gate_reread: bool = Field(True, description="Read once more as the peer does before a weak-evidence refusal.")
    subject_check: bool = Field(True, description="An answer about another thing than the one asked ('annual leave' "
                                                  "stated, 'bereavement leave' asked) is answered again or refused.")
    gate_judge_max: int = Field(2, ge=0, le=20, description="Passages the judge scores (best word overlap first; "
                                                             "stops at the first it accepts). 0 = never judge.")
    claim_lexical_threshold: float = Field(0.5, ge=0, le=1, description="Claim support by words and numbers.")
    claim_threshold_judge: float = Field(0.5, ge=0, le=1, description="Judge P(yes) above which a claim is "
                                                                      "supported (or contradicted).")
    claim_judge_max: int = Field(4, ge=0, le=50, description="Judge calls for claims the lexical check doubts.")
    ambiguity_threshold: float = Field(0.8, ge=0.0, le=1.01, description="Confidence at which the ambiguity step "
                                       "calls a question ambiguous (interactive: one clarifying question; else answered "
                                       "per sense). Chosen on the dev half of bench/reason/ambiguity_set.py.")
    tools_path: bool = Field(True, description="Route arithmetic and table questions to the planner (sql, calculator, "
                             "search; needs the language model). Off: every question is answered directly.")
    tools_max_calls: int = Field(5, ge=1, le=20, description="Tool calls per question on the tools path (a "
                                 "re-plan's included).")
    claim_judge_contradiction: bool = Field(False, description="Also ask the judge whether an unsupported claim is "
                                            "contradicted (off: the 1.5B judge's answer is not informative on SciFact).")
    decline_retry_evidence: float = Field(0.9, ge=0, le=1.01, description="When the model says the documents do not "
                                          "say but the verifier gives a passage at least this P of answering, ask once "
                                          "more from the verified passages, best first (1.01 = never).")

    # --- the doctor (docs/doctor.md says how each default was chosen)
    doctor: bool = Field(True, description="Examine every answer and repair what can be repaired (ask --no-doctor: off).")
    doctor_max_rounds: int = Field(2, ge=0, le=10, description="Repair rounds per query.")
    doctor_max_lm_calls: int = Field(12, ge=0, le=500,
                                     description="Language-model calls the doctor may add to a query (judge + re-runs).")
    doctor_max_seconds: float = Field(180.0, gt=0, description="Wall time the doctor may add to a query.")
    doctor_threshold: float = Field(0.5, ge=0, le=1, description="Symptom score at which a symptom is present.")
    doctor_escalate_floor: float = Field(0.35, ge=0, le=1,
                                         description="Unsure findings below this are not escalated to e5 / the judge.")
    doctor_candidates: int = Field(2, ge=1, le=5, description="Treatments tried per round (the better verified wins).")
    doctor_fast_evidence: float = Field(0.9, ge=0, le=1.01, description="Fast path: an answer whose best passage a "
                                        "verifier gives at least this P, every claim supported, no conflict, is "
                                        "not treated for context noise or retrieval reach (every other symptom "
                                        "still is); 1.01 = never.")
    doctor_accept_margin: float = Field(0.02, ge=0, le=1,
                                        description="Verified-confidence gain a treated answer needs to replace the current one.")
    doctor_weak_answer: str = Field("note", pattern="^(note|refuse)$",
                                    description="An answer still unconfirmed when the budget ends: note it, or refuse.")
    doctor_refusal_budget_s: float = Field(6.0, gt=0, description="Wall time the doctor may add to a refusal: "
                                           "it tries one retrieval treatment, and only when the first retrieval "
                                           "was weak (docs/settings.md).")
    doctor_forecast: str = Field("kb", pattern="^(kb|shipped|off)$", description="The failure forecast the doctor "
                                 "reads: kb (the knowledge base's own, `doctor train`), shipped (else the shipped "
                                 "heads), off (docs/doctor.md).")
    doctor_forecast_skip: float = Field(0.1, ge=0, le=1.01, description="Forecast: every kind below this → the "
                                        "fast path (noise and reach noted, not treated); 0 = never.")
    doctor_forecast_miss: float = Field(0.5, ge=0, le=1.01, description="Forecast: a refusal with a retrieval miss "
                                        "≥ this gets one retrieval treatment.")
    doctor_forecast_absent: float = Field(0.8, ge=0, le=1.01, description="Forecast: a refusal with 'not in the "
                                          "knowledge base' ≥ this (and a miss < skip) gets none.")
    doctor_refusal_coverage: float = Field(0.6, ge=0, le=1.01, description="A refusal's first retrieval was strong "
                                           "(nothing re-run) when its best passage holds at least this share of the "
                                           "question's content words; 1.01 = always weak.")
    cases_from_doctor: bool = Field(False, description="File every answer the doctor could not repair (symptoms "
                                    "found, no repair kept) in the failed-answer library, beside the answers users "
                                    "rate unhelpful (docs/cases.md).")

    # --- `ragclinic serve`: the doctor in the background (docs/server.md, "Repair in the background")
    repair_queue_max: int = Field(16, ge=0, le=1000, description="`\"repair\": \"async\"`: answers that may wait "
                                  "for the doctor; one more is 'skipped'; 0 = off (docs/server.md).")
    repair_wait_s: float = Field(300.0, gt=0, le=3600, description="An open stream's wait for the repair's outcome.")
    max_concurrent_asks: int = Field(32, ge=1, le=1024, description="Questions `serve` answers at once; then 429.")
    max_concurrent_asks_per_key: int = Field(16, ge=1, le=1024, description="The same for one key (keyless: one address).")

    # --- `ragclinic serve`: the browser side (docs/server.md, "Browsers")
    allowed_hosts: list[str] = Field(["127.0.0.1", "localhost", "::1"], description="Host header names the server "
                                     "answers (any port); others get 400 (DNS rebinding). `serve` adds --host when "
                                     "it is not a wildcard, and each --allowed-host. '*': any; '.example.com': it "
                                     "and its subdomains.")
    session_hours: float = Field(12.0, gt=0, le=24 * 30, description="A UI login lasts this long (the session is "
                                 "held in the server's memory: a restart logs everyone out).")
    login_failures_max: int = Field(10, ge=1, description="Failed logins (wrong keys) one client address may "
                                    "make per window on each channel (browser: login form, ?api_key=; header: "
                                    "Bearer / X-API-Key); then 429 on that channel.")
    login_failures_window_s: float = Field(60.0, gt=0, description="The window of login_failures_max (seconds).")

    @field_validator("allowed_hosts", mode="after")
    @classmethod
    def _host_names(cls, v: list[str]) -> list[str]:
        bad = [h for h in v if not h.strip() or re.search(r"[/\s@?#]", h.strip()) or h.count(":") == 1]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a host name; give a bare name or address such as rag.example.com "
                             "or 10.0.0.5 (no scheme, path or port)")
        return [h.strip().lower().strip("[]") for h in v]

    @field_validator("openai_api_key", mode="before")
    @classmethod
    def _api_key_env(cls, v):
        return v if v is not None else os.environ.get("OPENAI_API_KEY")

    @field_validator("llm", "embedder", mode="after")
    @classmethod
    def _known_backend(cls, v: str, info) -> str:
        return check_name(info.field_name, v)

    @field_validator("keep_hyphens", mode="after")
    @classmethod
    def _compounds(cls, v: list[str]) -> list[str]:
        bad = [w for w in v if not re.fullmatch(r"[^\W_]+(-[^\W_]+)+", w.strip())]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a hyphenated compound; write each as word-word, e.g. cash-flow")
        return [w.strip().lower() for w in v]

    @field_validator("kb", "cache_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return Path(os.path.expanduser(str(v)))

    @model_validator(mode="after")
    def _check_ranges(self) -> "Settings":
        if self.chunk_min_tokens >= self.chunk_max_tokens:
            raise ValueError(f"chunk_min_tokens ({self.chunk_min_tokens}) must be below "
                             f"chunk_max_tokens ({self.chunk_max_tokens})")
        if self.overlap_min_tokens > self.overlap_max_tokens:
            raise ValueError(f"overlap_min_tokens ({self.overlap_min_tokens}) must not exceed "
                             f"overlap_max_tokens ({self.overlap_max_tokens})")
        if self.overlap_max_tokens >= self.chunk_max_tokens // 2:
            raise ValueError(f"overlap_max_tokens ({self.overlap_max_tokens}) must be below half of "
                             f"chunk_max_tokens ({self.chunk_max_tokens})")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return (init_settings, env_settings, KbFileSource(settings_cls))

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, kb: Path | str | None = None, **overrides: Any) -> "Settings":
        """Settings for a knowledge base: overrides (None values ignored) > env > KB file > defaults."""
        overrides = {k: v for k, v in overrides.items() if v is not None}
        kb_dir = Path(kb) if kb is not None else None
        if kb_dir is None:
            env_kb = os.environ.get("RAGCLINIC_KB")
            kb_dir = Path(env_kb) if env_kb else cls.model_fields["kb"].default
        values = read_settings_file(Path(os.path.expanduser(str(kb_dir))) / SETTINGS_FILE)
        token = file_values.set(values)
        try:
            return cls(kb=kb_dir, **overrides)
        except ValidationError as e:
            raise ConfigError(explain(e)) from None
        finally:
            file_values.reset(token)

    def kb_defining(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KB_DEFINING}


def read_settings_file(path: Path) -> dict[str, Any]:
    return read_file(path, Settings.model_fields)


def write_settings_file(path: Path, values: dict[str, Any]) -> None:
    """Write (atomically) the given values; keys already in the file and not given are kept."""
    write_file(path, values, Settings.model_fields)
