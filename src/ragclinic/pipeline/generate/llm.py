"""The language-model generator (streams tokens when asked)."""

from __future__ import annotations

from ragclinic.models.llm import LanguageModel, TokenCallback
from ragclinic.pipeline.generate.base import GENERATORS, Draft, GenerateInput
from ragclinic.pipeline.generate.prompt import build_messages


@GENERATORS.register("llm")
class LLMGenerator:
    name = "llm"

    def __init__(self, lm: LanguageModel, max_tokens: int = 384, temperature: float = 0.0) -> None:
        self.lm, self.max_tokens, self.temperature = lm, max_tokens, temperature

    def generate(self, inp: GenerateInput, on_token: TokenCallback | None = None) -> Draft:
        done = self.lm.chat(build_messages(inp), max_tokens=self.max_tokens, temperature=self.temperature,
                            on_token=on_token)
        return Draft(done.text.strip(), self.lm.model_id, done.prompt_tokens, done.completion_tokens,
                     done.finish_reason)
