"""The language-model generator: the model fills the answer schema (generate/structured.py); the answer the user
reads is rendered from it, and streams as the model writes its text field. With an answerability probe (verify/probe.py),
a short answer's call also reads the model's hidden state at the status token, and the draft carries the probe's
reading. With active retrieval on, the call asks for the tokens' log-probabilities and the draft carries each claim's
confidence (generate/active.py)."""

from __future__ import annotations

from ragclinic.models.llm import LanguageModel, TokenCallback, call_extras
from ragclinic.pipeline.gate.templates import render as template
from ragclinic.pipeline.generate.confidence import claim_confidence
from ragclinic.pipeline.generate.base import GENERATORS, Draft, GenerateInput
from ragclinic.pipeline.generate.prompt import build_messages, is_zh
from ragclinic.pipeline.generate.structured import SCHEMAS, FieldStream, parse_reply, render, schema_kind
from ragclinic.verify.probe import AnswerabilityProbe


@GENERATORS.register("llm")
class LLMGenerator:
    name = "llm"

    def __init__(self, lm: LanguageModel, max_tokens: int = 384, temperature: float = 0.0,
                 probe: AnswerabilityProbe | None = None, active: float = 0.0) -> None:
        """``active``: the token probability below which a claim is uncertain (generate/active.py); 0: the tokens'
        log-probabilities are not asked for."""
        self.lm, self.max_tokens, self.temperature, self.probe = lm, max_tokens, temperature, probe
        self.active = active

    def generate(self, inp: GenerateInput, on_token: TokenCallback | None = None) -> Draft:
        d = inp.decision
        kind = schema_kind(d.question_type, d.path, len(inp.sub_questions), len(inp.conflicts))
        zh = is_zh(inp.question)
        stream = FieldStream(on_token, zh) if on_token else None
        done = self.lm.chat(build_messages(inp, kind), max_tokens=self.max_tokens, temperature=self.temperature,
                            on_token=stream, schema=SCHEMAS[kind],
                            **call_extras(self.probe.layers if self.probe and kind == "short" else (),
                                          self.active > 0))
        reply = parse_reply(done.text, kind)
        valid = {p.n for p in inp.passages}
        if reply.status == "not_in_documents":
            text = template("no_evidence", inp.question)
        else:
            text = render(reply, zh, numbered=d.question_type == "how-to", valid=valid)
        # the citation marks are not streamed here: the generate layer keeps only the cited passages that state a
        # claim, then completes the stream with the final text (generate/layer.py _Shown)
        return Draft(text, self.lm.model_id, done.prompt_tokens, done.completion_tokens, done.finish_reason,
                     items=reply.items, status=reply.status, reply_form=reply.form,
                     streamed=stream.sent if stream is not None else "",
                     probe=self.probe.score(done.hidden) if self.probe and done.hidden else None,
                     confidence=claim_confidence(done.text, done.logprobs, self.active) if self.active else ())
