"""Generate layer: an answer with [n] citations from the passages, checked claim by claim. Its public face
(issue 54): what code outside the pipeline may use of it."""

from ragclinic.config import Settings
from ragclinic.models.llm import LanguageModel
from ragclinic.pipeline.generate.active import CALIBRATED as ACTIVE_CALIBRATED
from ragclinic.pipeline.generate.base import GENERATORS, Draft, Generator, GenerateInput
from ragclinic.pipeline.generate.citations import CITE, check_claims, violations
from ragclinic.pipeline.generate.constraint_check import wordings as constraint_wordings
from ragclinic.pipeline.generate.extractive import ExtractiveGenerator
from ragclinic.pipeline.generate.llm import LLMGenerator
from ragclinic.pipeline.generate.prompt import YES_NO_WORDING
from ragclinic.pipeline.generate.structured import parse_reply
from ragclinic.pipeline.generate.subject_check import wordings as subject_wordings
from ragclinic.verify.probe import probe_for


def create_generator(settings: Settings, lm: LanguageModel | None) -> Generator:
    """The generator for a run over ``lm``: extractive without a model, else the one the ``generator`` setting
    names (the one place a generator is chosen: the wiring and the runner's model-less fallback call it)."""
    if lm is None:
        return ExtractiveGenerator(settings.extractive_sentences)
    if settings.generator != "llm":
        return GENERATORS.create(settings.generator)
    # the probe reads the state at the token closing '{"status": "', which only field decoding evaluates last
    probe = probe_for(settings.llm, lm.model_id) if settings.answer_probe and settings.llm_field_decoding else None
    return LLMGenerator(lm, settings.llm_max_tokens, settings.llm_temperature, probe, settings.active_retrieval)


__all__ = ["ACTIVE_CALIBRATED", "CITE", "GENERATORS", "Draft", "ExtractiveGenerator", "GenerateInput", "Generator",
           "YES_NO_WORDING", "check_claims", "constraint_wordings", "create_generator", "parse_reply", "subject_wordings",
           "violations"]
