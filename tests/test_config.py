from __future__ import annotations

import pytest

from ragclinic.config import SETTINGS_FILE, Settings, write_settings_file
from ragclinic.errors import ConfigError


def test_precedence_flag_over_env_over_file_over_default(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    kb.mkdir()
    assert Settings.load(kb).chunk_max_tokens == Settings.model_fields["chunk_max_tokens"].default
    write_settings_file(kb / SETTINGS_FILE, {"chunk_max_tokens": 200, "embed_batch_size": 8})
    assert Settings.load(kb).chunk_max_tokens == 200
    monkeypatch.setenv("RAGCLINIC_CHUNK_MAX_TOKENS", "250")
    assert Settings.load(kb).chunk_max_tokens == 250
    assert Settings.load(kb, chunk_max_tokens=300).chunk_max_tokens == 300
    assert Settings.load(kb, chunk_max_tokens=None).chunk_max_tokens == 250  # None = flag not given
    assert Settings.load(kb).embed_batch_size == 8


def test_bad_values_name_the_setting_and_the_fix(tmp_path):
    with pytest.raises(ConfigError, match="embedder='bogus'.*valid names"):
        Settings.load(tmp_path, embedder="bogus")
    with pytest.raises(ConfigError, match="chunk_min_tokens"):
        Settings.load(tmp_path, chunk_min_tokens=400, chunk_max_tokens=300)
    with pytest.raises(ConfigError, match="keep_hyphens.*'cashflow' is not a hyphenated compound.*word-word"):
        Settings.load(tmp_path, keep_hyphens=["cash-flow", "cashflow"])
    assert Settings.load(tmp_path, keep_hyphens=[" Cash-Flow "]).keep_hyphens == ["cash-flow"]


def test_unknown_key_in_settings_file(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text("chunk_size = 3\n")
    with pytest.raises(ConfigError, match="chunk_size"):
        Settings.load(tmp_path)


def test_unreadable_settings_file(tmp_path):
    (tmp_path / SETTINGS_FILE).write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="cannot read settings file"):
        Settings.load(tmp_path)


def test_the_builtin_backend_names_are_the_ones_the_models_register():
    """config/names.py lists the built-ins so that settings check a name without importing the model code."""
    from ragclinic.config.names import BUILTIN
    from ragclinic.models.embedder import EMBEDDERS
    from ragclinic.models import factory  # noqa: F401  (registers the built-ins)
    from ragclinic.models.llm import LANGUAGE_MODELS

    for setting, registry in (("llm", LANGUAGE_MODELS), ("embedder", EMBEDDERS)):
        ours = {n for n in registry.names() if registry.get(n).__module__.startswith("ragclinic.models.")}
        assert ours == set(BUILTIN[setting])


def test_a_plugin_backend_name_is_accepted_once_registered(tmp_path):
    from helpers import register_slowfake

    with pytest.raises(ConfigError, match="llm='slowllm'.*valid names: none, fake, local"):
        Settings.load(tmp_path, llm="slowllm")
    register_slowfake()
    assert Settings.load(tmp_path, embedder="slowfake").embedder == "slowfake"
