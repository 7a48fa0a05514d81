"""The local backends (``local``: Qwen2.5-Coder-1.5B, ``local-small``: 0.5B): the model in the shared model
worker (service.py) by default, or loaded into this process (llama.py) with ``llm_isolation = inline``."""

from __future__ import annotations

from ragclinic.models.llama import load_llama
from ragclinic.models.llm import LANGUAGE_MODELS
from ragclinic.models.service import ServiceModel, shared_service
from ragclinic.models.weights import WEIGHTS, weights_path


def create_local(name: str, settings):
    """``local`` / ``local-small``: in the shared model worker (``llm_isolation = process``, the default), so a
    native crash costs one answer, not the process; ``inline`` loads the model into this process."""
    if settings.llm_isolation == "inline":
        return load_llama(name, settings)
    spec = WEIGHTS[name]
    weights_path(spec, settings.cache_dir)  # missing or corrupt weights: ModelError now, before any worker
    return ServiceModel(shared_service(name, settings), model_id=f"{spec.name}:{spec.sha256[:12]}")


LANGUAGE_MODELS.register("local", lambda settings: create_local("local", settings))
LANGUAGE_MODELS.register("local-small", lambda settings: create_local("local-small", settings))
