"""Local language models through llama-cpp-python (built from source), weights from registry packages.

``local`` runs Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the default), ``local-small`` the 0.5B model (fast tests,
low-end machines; weaker: it invents answers to unanswerable questions). The chat template is the one in
the GGUF; greedy decoding at temperature 0; ``n_threads`` = cores unless set.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import replace
from collections.abc import Sequence

import numpy as np

from ragclinic import cancel
from ragclinic.errors import ModelError
from ragclinic.models.fields import decode, plan
from ragclinic.models.hidden import HiddenCapture, wants_hidden
from ragclinic.models.kv_prefix import PrefixStates
from ragclinic.models.llm import Completion, Message, TokenCallback, candidate_variants
from ragclinic.models.runtime import load_cpu_backend
from ragclinic.models.weights import WEIGHTS, WeightSpec, weights_path
from ragclinic.native import native

_LOADED: dict[tuple[str, int, int], "LlamaModel"] = {}
MEMO = 256  # greedy results kept per loaded model (see _fresh_state)
_LOAD_LOCK = threading.Lock()


class LlamaModel:
    def __init__(self, spec: WeightSpec, settings) -> None:
        try:
            from llama_cpp import Llama  # on use: loads llama.cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # on use: loads llama.cpp
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ModelError(f"llama-cpp-python is not installed ({e}); run `make install` or use --llm none") from e
        self.backend = load_cpu_backend(getattr(settings, "llm_cpu_variant", ""))  # before the first Llama
        path = weights_path(spec, settings.cache_dir)
        threads = settings.llm_threads or os.cpu_count() or 1
        # the eval callback that reads hidden states (models/hidden.py) is part of the context: installed at load
        self._hidden = HiddenCapture() if wants_hidden(settings) else None
        try:
            with self._hidden.installed() if self._hidden else contextlib.nullcontext():
                self._llm = Llama(model_path=str(path), n_ctx=settings.llm_n_ctx, n_threads=threads,
                                  n_threads_batch=threads, seed=settings.seed, verbose=False)
        except (ValueError, RuntimeError) as e:
            raise ModelError(f"cannot load {path}: {e}; delete the file to re-assemble it") from e
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError(f"{path} has no chat template in its metadata")
        eos_id = self._llm.token_eos()
        eos = self._llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        self._format = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token="", add_generation_prompt=True)
        self._stop = sorted({s for s in (eos, "<|im_end|>", "<|endoftext|>") if s})
        self.model_id = f"{spec.name}:{spec.sha256[:12]}"
        self._lock = threading.Lock()  # one llama context serves one call at a time
        self._memo: OrderedDict[tuple, object] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._grammars: dict[str, object] = {}
        self.field_decoding = getattr(settings, "llm_field_decoding", True)  # models/fields.py  # not the call lock: a recall need not wait for a running call
        self.memo_hits = 0
        self.prefix_hits = self.prefix_tokens_reused = 0  # system turns reused from the KV cache (see _prime)
        self.prefix_cache = getattr(settings, "llm_prefix_cache", True)
        self._prefixes = PrefixStates(self._llm)  # other recent system turns' KV states

    # _fresh_state: a call's result must be a function of its prompt alone (greedy answers and judge scores
    # must not depend on what was asked before). llama.cpp's own prefix reuse (the longest common prefix with
    # the previous call) breaks that: where the reused part ends decides how the rest is batched, and the
    # batching changes the floating-point result. So every prompt is evaluated in the same two segments —
    # the system turn, then the rest — whether or not the first is still in the KV cache: the system turn's
    # KV state is kept between calls (the live one, and the last few others in kv_prefix.PrefixStates) and
    # reused only at that boundary, and the rest is always evaluated from it the same way
    # (tests/models/test_llama_prefix.py: a reused prefix gives exactly a fresh cache's output).
    # The last MEMO results are also kept, so an identical call (the doctor's re-runs repeat the claim checks'
    # calls on unchanged passages) is answered from them — the same result, without the ~2-10 s.

    def _prompt(self, messages: Sequence[Message]) -> str:
        """The chat template's prompt. A last ``assistant`` message is a prefix the reply continues (the planner
        starts its reply with ``[{"step": 1,`` so the model writes JSON); the reply excludes the prefix."""
        prefix = ""
        if len(messages) > 1 and messages[-1].role == "assistant":
            prefix, messages = messages[-1].content, messages[:-1]
        return self._format(messages=[{"role": m.role, "content": m.content} for m in messages]).prompt + prefix

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def chat(self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0,
             on_token: TokenCallback | None = None, schema: dict | None = None,
             hidden_layers: Sequence[int] = (), logprobs: bool = False) -> Completion:
        layers = tuple(sorted(set(hidden_layers))) if self._hidden else ()  # loaded without the callback: none
        prompt = self._prompt(messages)
        n_prompt = self.count_tokens(prompt)
        if n_prompt + max_tokens > self._llm.n_ctx():
            raise ModelError(f"prompt of {n_prompt} tokens + {max_tokens} to generate exceeds the context of "
                             f"{self._llm.n_ctx()} tokens; lower top_k or raise llm_n_ctx")
        key = ("chat", prompt, max_tokens, json.dumps(schema, sort_keys=True) if schema else "", layers, logprobs)
        if temperature == 0 and (hit := self._recall(key)) is not None:
            if on_token and hit.text:
                on_token(hit.text)
            return replace(hit, prompt_reused=n_prompt)
        fields = plan(schema) if self.field_decoding else None
        hidden: dict = {}
        marks: list[tuple[int, float]] | None = [] if logprobs else None
        with self._lock, native("llama.cpp", f"generate after a {n_prompt}-token prompt"):
            if layers:
                self._hidden.arm(layers)  # disarmed at the first sampling step (_complete)
            try:
                tokens, reused = self._prime(messages, prompt)  # see _fresh_state
                if fields:  # the keys and punctuation evaluated in batches, only the values sampled (models/fields.py)
                    sample = self._sampler(tokens, temperature, hidden, marks)
                    text, n_out, finish = decode(fields, sample, max_tokens, on_token)
                else:
                    text, n_out, finish = self._complete(tokens, self._grammar(schema), self._stop, max_tokens,
                                                         temperature, on_token, hidden, marks)
                    n_out = self.count_tokens(text) if text else 0
            finally:
                if self._hidden:
                    self._hidden.armed = False
        done = Completion(text, n_prompt, n_out, finish, reused, hidden=hidden,
                          logprobs=tuple((at, lp) for at, lp in marks or () if at < len(text)))
        if temperature == 0:
            self._keep(key, done)
        return done

    def _complete(self, tokens: list[int], grammar, stop, max_tokens: int, temperature: float, on_token,
                  hidden: dict | None = None, marks: list | None = None, at: int = 0) -> tuple[str, int, str]:
        """One streamed completion from ``tokens``: (text, pieces sampled, finish reason). ``hidden``: filled with
        the captured layers at the first sampling step, when the capture is armed (models/hidden.py). ``marks``:
        each sampled token's (offset in the reply, log-probability) appended, the reply's text so far being ``at``
        characters long."""
        processors = []
        if self._hidden is not None and self._hidden.armed and hidden is not None:
            def take(_ids, scores):  # the prompt is evaluated: what the layers held at its last token
                if self._hidden.armed:
                    hidden.update(self._hidden.take())
                return scores
            processors.append(take)
        tracked = TokenLogprobs() if marks is not None else None
        if tracked is not None:
            processors.append(tracked)
        if processors:
            from llama_cpp import LogitsProcessorList  # on use: loads llama.cpp
        stream = self._llm.create_completion(tokens, max_tokens=max_tokens, temperature=temperature,
                                             top_k=1 if temperature == 0 else 40, stop=stop, stream=True,
                                             grammar=grammar,
                                             logits_processor=LogitsProcessorList(processors) if processors else None)
        pieces, finish, n = [], "stop", 0
        for part in stream:
            if cancel.requested():  # the client left (ragclinic/cancel.py): no token more for nobody
                stream.close()
                raise cancel.Withdrawn("the client disconnected: the reply was stopped")
            choice = part["choices"][0]
            if choice["text"]:
                n += 1  # a piece sampled (the last, empty chunk only carries the finish reason)
                pieces.append(choice["text"])
                if on_token:
                    on_token(choice["text"])
            finish = choice.get("finish_reason") or finish
        if tracked is not None:
            marks.extend((at + off, lp) for off, lp in tracked.offsets(self._llm.detokenize))
        return "".join(pieces), n, finish

    def _sampler(self, prompt_tokens: list[int], temperature: float, hidden: dict | None = None,
                 marks: list | None = None):
        """fields.decode's ``sample``: one value after the prompt and the reply so far, under its own grammar. The
        hidden state is the one before the first value (``{"status": "``: where the model decides whether the
        sources answer)."""
        def sample(text: str, gbnf: str, stops, max_tokens: int, on_token) -> tuple[str, int, str]:
            tokens = prompt_tokens + self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
            return self._complete(tokens, self._gbnf(gbnf), [*stops, *self._stop], max_tokens, temperature, on_token,
                                  hidden, marks, len(text))

        return sample

    def _gbnf(self, gbnf: str):
        from llama_cpp import LlamaGrammar  # on use: loads llama.cpp

        if gbnf not in self._grammars:
            self._grammars[gbnf] = LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[gbnf]

    def _grammar(self, schema: dict | None):
        """llama.cpp's grammar for ``schema`` (llama-cpp-python converts a JSON schema to GBNF), built once."""
        if not schema:
            return None
        from llama_cpp import LlamaGrammar  # on use: loads llama.cpp

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            try:
                self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except (ValueError, RuntimeError) as e:
                raise ModelError(f"cannot build a grammar from the JSON schema {key[:200]}: {e}") from e
        return self._grammars[key]

    def next_token_probs(self, messages: Sequence[Message], candidates: Sequence[str]) -> dict[str, float]:
        prompt = self._prompt(messages)
        key = ("probs", prompt, tuple(candidates))
        if (hit := self._recall(key)) is not None:
            return dict(hit)
        ids = {c: self._token_ids(c) for c in candidates}
        captured: list[np.ndarray] = []

        def capture(_input_ids, scores):
            captured.append(np.array(scores, dtype=np.float64))
            return scores

        with self._lock, native("llama.cpp", "next-token probabilities"):
            tokens, _ = self._prime(messages, prompt)  # see _fresh_state
            self._llm.create_completion(tokens, max_tokens=1, temperature=0.0, top_k=1, logits_processor=[capture])
        if not captured:
            raise ModelError("the model produced no logits")
        logits = captured[0]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        mass = {c: float(sum(p[i] for i in ids[c])) for c in candidates}
        total = sum(mass.values())
        probs = {c: (m / total if total > 0 else 1.0 / len(candidates)) for c, m in mass.items()}
        self._keep(key, dict(probs))
        return probs

    def _prime(self, messages: Sequence[Message], prompt: str) -> tuple[list[int], int]:
        """The prompt's tokens and how many of them were reused: the KV cache then holds exactly the system
        turn (kept from the previous call when it had the same one, else evaluated alone) and nothing after
        it; the caller's completion evaluates the rest as one segment. Without a system turn it starts empty."""
        tokens = self._llm.tokenize(prompt.encode("utf-8"), special=True)
        llm = self._llm
        if not self.prefix_cache:  # the whole prompt in one segment from an empty cache
            llm.reset()
            return tokens, 0
        cut = self._system_cut(messages, prompt, tokens)
        live = cut and llm.n_tokens >= cut and list(llm.input_ids[:cut]) == tokens[:cut]
        if live or (cut and self._prefixes.restore(tuple(tokens[:cut]))):
            llm.n_tokens = cut  # the next eval removes the KV entries past the system turn
            self.prefix_hits += 1
            self.prefix_tokens_reused += cut
            return tokens, cut
        llm.reset()
        if cut:
            llm.eval(tokens[:cut])
            self._prefixes.save(tuple(tokens[:cut]))
        return tokens, 0

    def _system_cut(self, messages: Sequence[Message], prompt: str, tokens: list[int]) -> int:
        """How many of the prompt's tokens are its system turn (up to where the next message's text starts),
        0 when it has none or the boundary does not fall between two tokens."""
        if len(messages) < 2 or messages[0].role != "system":
            return 0
        marker = "\x00ragclinic-cut\x00"
        probe = self._prompt([messages[0], Message(messages[1].role, marker)] + list(messages[2:]))
        at = probe.find(marker)
        if at <= 0 or prompt[:at] != probe[:at]:
            return 0
        head = self._llm.tokenize(prompt[:at].encode("utf-8"), special=True)
        n = len(head)
        return n if 0 < n < len(tokens) and tokens[:n] == head else 0

    def _recall(self, key: tuple):
        with self._memo_lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                self.memo_hits += 1
            return hit

    def _keep(self, key: tuple, value) -> None:
        with self._memo_lock:
            self._memo[key] = value
            while len(self._memo) > MEMO:
                self._memo.popitem(last=False)

    def _token_ids(self, word: str) -> set[int]:
        out = set()
        for form in candidate_variants(word):
            toks = self._llm.tokenize(form.encode("utf-8"), add_bos=False, special=False)
            if toks:
                out.add(toks[0])
        return out


class TokenLogprobs:
    """A logits processor that keeps each sampled token's log-probability under the model's own distribution
    (before the grammar and greedy choice): a step's log-softmax is kept until the next step's input shows which
    token was sampled. The last sampled token is never evaluated, so it goes unread (a value's closing quote, the end
    of the reply, or the token a length limit cut)."""

    def __init__(self) -> None:
        self.prev: np.ndarray | None = None
        self.read: list[tuple[int, float]] = []  # (token id, log-probability)

    def __call__(self, ids, scores):
        if self.prev is not None and len(ids):
            token = int(ids[-1])
            self.read.append((token, float(self.prev[token])))
        s = np.asarray(scores, dtype=np.float64)
        top = s.max()
        self.prev = s - (top + np.log(np.exp(s - top).sum()))
        return scores

    def offsets(self, detokenize) -> list[tuple[int, float]]:
        """(character offset in the completion's text where each token starts, log-probability); a token that
        ends inside a multi-byte character starts where the character does."""
        out, raw = [], b""
        for token, lp in self.read:
            out.append((len(raw.decode("utf-8", errors="ignore")), lp))
            raw += detokenize([token])
        return out


def load_llama(name: str, settings) -> LlamaModel:
    """One loaded model per (name, context size, threads) per process: loading costs ~1 s and ~1 GB."""
    key = (name, settings.llm_n_ctx, settings.llm_threads, getattr(settings, "llm_prefix_cache", True),
           getattr(settings, "llm_field_decoding", True), wants_hidden(settings))
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = LlamaModel(WEIGHTS[name], settings)
        return _LOADED[key]


@atexit.register
def _close_all() -> None:
    """Free the models before interpreter teardown (llama.cpp's finaliser fails once modules are gone)."""
    for model in _LOADED.values():
        model._llm.close()
    _LOADED.clear()
