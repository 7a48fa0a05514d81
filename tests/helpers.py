"""Shared test helpers: small knowledge bases the tests write themselves."""

from __future__ import annotations

import json
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.ingest.runner import ingest
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Chunk, Claim, DocInfo, Hit, Passage


def build_kb(tmp: Path, docs: dict[str, str], meta: dict[str, dict] | None = None, **overrides) -> KnowledgeBase:
    """Write ``docs`` (name → text; Markdown/text) with optional sidecar tags, ingest them with the fake embedder."""
    root = tmp / "docs"
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
        if meta and name in meta:
            (root / (name + ".meta.json")).write_text(json.dumps(meta[name]), encoding="utf-8")
    overrides.setdefault("embedder", "fake")
    overrides.setdefault("llm", "none")
    overrides.setdefault("judge", "llm")  # exact word-overlap scores without a model (see conftest._isolated_env)
    settings = Settings.load(tmp / "kb", cache_dir=tmp / "cache", **overrides)
    kb = KnowledgeBase.open(settings, create=True)
    kb.lock()
    result = ingest(kb, [root])
    assert not result.failed, result.failed
    kb.unlock()
    return kb


BOND_DOCS = {
    "bonds.md": "# Bonds\n\nThe risk-free rate is the return on an investment with no default risk. "
                "Short-dated treasury bills are the usual proxy for the risk-free rate.\n",
    "duration.md": "# Duration\n\nDuration measures how much a bond price moves when interest rates change "
                   "by one percentage point.\n",
    "rag.md": "# RAG\n\nRetrieval augmented generation grounds answers in retrieved passages. "
              "A passage that is never retrieved cannot be cited.\n",
    "zh.md": "# 检索\n\n检索增强生成先检索相关段落，再让语言模型依据这些段落作答。检索质量决定了答案质量的上限。\n",
    "cats.md": "# Cats\n\nThe cat sat on the warm kitchen floor all afternoon.\n",
}


def plugin_cli_script(embed_body: str, *, imports: str = "", entry: str = "ragclinic.cli.main") -> str:
    """The source of a child process that registers a fake ``slowfake`` embedder (the plugin path the built-ins
    use) whose ``_embed(self, texts)`` body is ``embed_body`` (indented 8 spaces, ending in a return of
    ``super()._embed(texts)``), then runs the CLI through ``entry``'s main with its own argv."""
    import os
    import textwrap

    tests = os.path.dirname(os.path.abspath(__file__))
    body = textwrap.indent(textwrap.dedent(embed_body).strip(), " " * 8)
    return "\n".join([
        "import os, signal, sys, time", f"sys.path.insert(0, {tests!r})", "import netguard; netguard.install()",
        "from ragclinic.models.embedder import EMBEDDERS", "from ragclinic.models.fake import FakeEmbedder",
        textwrap.dedent(imports).strip(), "",
        '@EMBEDDERS.register("slowfake")', "class Slow(FakeEmbedder):", '    model_id = "slowfake"',
        "    def _embed(self, texts):", body, "    embed_passages = _embed", "    embed_queries = _embed", "",
        f"from {entry} import main", 'sys.argv = ["ragclinic"] + sys.argv[1:]', "main()", ""])


def register_slowfake() -> None:
    """The ``slowfake`` embedder in this process too (the parent opens the child's knowledge bases)."""
    from ragclinic.models.embedder import EMBEDDERS
    from ragclinic.models.fake import FakeEmbedder

    if "slowfake" not in EMBEDDERS.names():
        EMBEDDERS.register("slowfake", type("Slow", (FakeEmbedder,), {"model_id": "slowfake"}))


def passage(n: int, text: str, lang: str = "en", support: float = 0.9) -> Passage:
    """Passage [n] holding ``text`` alone (one chunk of its own document), as the generate layer's checks see it."""
    c = Chunk(f"c{n}", f"d{n}", text, 0, len(text), (), None, lang, 20, 0)
    return Passage(n, Hit(c, 1.0, (), n), DocInfo(f"d{n}", f"/d{n}.md", f"Doc {n}"), support=support)


def claim(text: str, *cited: int) -> Claim:
    """A supported claim of an answer, citing passages ``cited``."""
    return Claim(text, cited, "supported", 0.9, "", "test")
