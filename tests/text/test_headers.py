"""Contextual chunk headers: the indexes see title and section; citations keep the chunk's own text."""

from __future__ import annotations

import json

from helpers import build_kb
from ragclinic.text.headers import index_text, plain
from ragclinic.pipeline.retrieve import create_retriever


def test_header_added_only_when_missing():
    assert index_text("The effect was larger.", "Aspirin trial", ("Results",)) == \
        "Aspirin trial › Results\nThe effect was larger."
    assert index_text("Aspirin trial\n\nThe effect...", "Aspirin trial", ()) == "Aspirin trial\n\nThe effect..."
    assert index_text("text", "", ()) == "text"
    assert index_text("The effect was larger.", "T", ("S",), enabled=False) == "The effect was larger."


def test_a_later_chunk_is_found_by_its_document_title(tmp_path):
    body = " ".join(f"Sentence {i} reports a measurement of the cohort." for i in range(120))
    kb = build_kb(tmp_path, {"trial.md": f"# Zanubrutinib outcomes\n\n{body}\n"}, chunk_max_tokens=64,
                  chunk_min_tokens=16, overlap_min_tokens=0, overlap_max_tokens=8)
    last = max(kb.db.iter_chunk_texts())  # the last chunk never names the drug
    assert "Zanubrutinib" not in last[1]
    hits = create_retriever(kb, "lexical").retrieve("zanubrutinib", 100)
    assert last[0] in {h.rowid for h in hits}
    assert all("Zanubrutinib" not in h.chunk.text for h in hits if h.rowid == last[0])  # cited text unchanged
    kb.close()


def test_knowledge_bases_from_before_the_setting_keep_their_behaviour(tmp_path):
    kb = build_kb(tmp_path, {"a.md": "# A\n\ntext\n"})
    stored = json.loads(kb.db.meta("kb_settings"))
    del stored["chunk_context"], stored["index_plain"]
    with kb.db.transaction():
        kb.db.set_meta("kb_settings", json.dumps(stored))
    kb.close()
    (tmp_path / "kb" / "settings.toml").write_text("")  # as an old KB's file: no chunk_context key
    from ragclinic.config import Settings
    from ragclinic.store.kb import KnowledgeBase

    again = KnowledgeBase.open(Settings.load(tmp_path / "kb", embedder="fake"))
    assert json.loads(again.db.meta("kb_settings"))["chunk_context"] is False
    assert again.settings.chunk_context is False  # and it runs with it
    assert Settings.load(tmp_path / "kb").chunk_context is False  # recorded for the next open
    assert again.settings.index_plain is False and Settings.load(tmp_path / "kb").index_plain is False
    again.close()


TABLE = """2.7.9. 限制 APT 的下载带宽

| 软件包 | 流行度 | 说明 |
|---|---|---|
| `apt-cacher-ng` | V:4, I:5 | 分发软件包的**缓存代理** |

```
\\# echo "penguin  ALL=(ALL) NOPASSWD:ALL" >> /etc/sudoers
```
"""


def test_the_indexes_see_a_manual_chunk_without_its_markup():
    """Table pipes and rules, fences, backquotes, emphasis and markdownify's escapes are markup, not meaning: on
    table-heavy manual chunks they were most of what e5 embedded. Words, numbers, paths and line breaks stay."""
    assert plain(TABLE) == ("2.7.9. 限制 APT 的下载带宽\n软件包 流行度 说明\napt-cacher-ng V:4, I:5 分发软件包的缓存代理\n"
                            'echo "penguin ALL=(ALL) NOPASSWD:ALL" >> /etc/sudoers')
    assert plain("## Client Authentication\n\nEdit *pg_hba.conf*: 1000 * 3") == \
        "Client Authentication\nEdit pg_hba.conf: 1000 * 3"
    assert index_text(TABLE, "Debian 参考手册", ("第 2 章",), keep_markup=False).startswith("Debian 参考手册 › 第 2 章\n2.7.9.")
    assert index_text(TABLE, "", (), enabled=False) == TABLE  # kept unless asked


def test_a_table_row_is_found_by_its_words_and_cited_with_its_markup(tmp_path):
    kb = build_kb(tmp_path, {"apt.md": TABLE})
    assert kb.settings.index_plain is True
    [hit] = create_retriever(kb, "lexical").retrieve("apt-cacher-ng 缓存代理", 1)
    assert "| apt-cacher-ng | V:4, I:5 |" in hit.chunk.text
    kb.close()


def test_ingest_and_the_lexical_rebuild_index_the_same_text(tmp_path, monkeypatch):
    """The dense index is written at ingest, the lexical one may be rebuilt later from the store: both must see
    the same text for a chunk (header, no markup)."""
    import ragclinic.ingest.runner as runner

    seen: list[str] = []
    real = runner.embed_with_cache

    def spy(embedder, cache, texts, batch):
        seen.extend(texts)
        return real(embedder, cache, texts, batch)

    monkeypatch.setattr(runner, "embed_with_cache", spy)
    kb = build_kb(tmp_path, {"apt.md": "# 软件包缓存\n\n" + TABLE})
    rebuilt = [t for _, t in kb.db.iter_index_texts(kb.settings.chunk_context, plain=kb.settings.index_plain)]
    assert seen and seen == rebuilt and all("|" not in t and "`" not in t for t in seen)
    kb.close()
