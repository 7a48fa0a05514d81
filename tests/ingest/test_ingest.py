"""Ingest end to end (fake embedder): incremental, idempotent, crash-consistent bookkeeping, bad input."""

from __future__ import annotations

import zipfile

import pytest

from ragclinic.demo.writers import write_pdf
from ragclinic.ingest.runner import IngestAborted, ingest
from ragclinic.store.kb import KnowledgeBase

EN = "# Bonds\n\nThe risk-free rate is the return on a riskless investment. Bills are the proxy.\n\n" \
     "## Yields\n\nYields are quoted per year. Prices fall when rates rise.\n"
ZH = "检索增强生成先检索相关段落，再让语言模型作答。检索质量决定答案质量的上限。"


def _corpus(root):
    (root / "sub").mkdir(parents=True)
    (root / "bonds.md").write_text(EN, encoding="utf-8")
    (root / "sub" / "rag.txt").write_bytes(ZH.encode("gbk"))
    (root / "notes.txt").write_text("Chunking ends at sentence boundaries. Overlap carries context.\n")
    return root


@pytest.fixture
def kb(make_settings):
    base = KnowledgeBase.open(make_settings(), create=True)
    base.lock()
    yield base
    base.close()


def _chunk_ids(kb):
    return sorted(r[0] for r in kb.db.conn.execute("SELECT chunk_id FROM chunks"))


def test_first_ingest_then_rerun_does_no_work(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    r1 = ingest(kb, [root])
    assert (r1.added, r1.updated, r1.unchanged, r1.failed) == (3, 0, 0, [])
    assert r1.chunks == kb.stats()["chunks"] > 0
    version = kb.stats()["version"]
    r2 = ingest(kb, [root])
    assert (r2.added, r2.updated, r2.unchanged, r2.chunks) == (0, 0, 3, 0)
    assert kb.stats()["version"] == version  # nothing was written
    assert len(kb.lexical()) == kb.stats()["chunks"]


def test_changed_file_replaces_its_chunks_and_keeps_unchanged_ones(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    ingest(kb, [root])
    before = set(_chunk_ids(kb))
    (root / "bonds.md").write_text(EN + "\n## Duration\n\nDuration measures price sensitivity to rates.\n")
    r = ingest(kb, [root])
    assert (r.added, r.updated, r.unchanged) == (0, 1, 2)
    after = set(_chunk_ids(kb))
    assert after != before and len(kb.lexical()) == len(after)
    hits = kb.lexical().search(["durat"], 5)
    assert hits and all(rid in kb.db.chunk_rows([rid]) for rid, _ in hits)


def test_sync_removes_documents_whose_files_are_gone(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    ingest(kb, [root])
    (root / "notes.txt").unlink()
    r = ingest(kb, [root])
    assert r.removed == 0 and kb.stats()["documents"] == 3  # without --sync nothing is removed
    r = ingest(kb, [root], sync=True)
    assert r.removed == 1 and kb.stats()["documents"] == 2
    assert len(kb.lexical()) == kb.stats()["chunks"]


def test_jsonl_records_are_documents_and_removed_records_go(kb, tmp_path):
    f = tmp_path / "corpus.jsonl"
    f.write_text('{"_id": "a", "title": "Alpha", "text": "Alpha text about bonds."}\n'
                 '{"_id": "b", "title": "Beta", "text": "Beta text about rates."}\n'
                 'not json\n')
    r = ingest(kb, [f])
    assert r.added == 2 and len(r.failed) == 1 and "line 3" in r.failed[0]["reason"]
    f.write_text('{"_id": "a", "title": "Alpha", "text": "Alpha text about bonds."}\n')
    r = ingest(kb, [f])
    assert (r.unchanged, r.removed) == (1, 1)
    assert kb.stats()["documents"] == 1


def test_bad_inputs_get_one_line_each_and_the_rest_is_ingested(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    bad = tmp_path / "docs" / "bad"
    bad.mkdir()
    (bad / "empty.txt").write_bytes(b"")
    (bad / "binary.txt").write_bytes(b"\x00\x01\x02\xff" * 100)
    (bad / "corrupt.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (bad / "big.md").write_text("x" * 300_000)
    (bad / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 50)
    with zipfile.ZipFile(bad / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", "0" * (60 * 1024 * 1024))
    (bad / "loop").symlink_to(bad / "loop")
    (bad / "undecodable.txt").write_bytes(bytes(range(0x80, 0x100)) * 40)
    write_pdf(bad / "locked.pdf", title="Secret", paragraphs=["Only with the password."], user_password="pw")
    kb.settings = kb.settings.model_copy(update={"max_file_size": 200_000, "zip_max_uncompressed": 10 * 1024 * 1024})
    before = kb.stats()
    r = ingest(kb, [root])
    reasons = {f["path"].rsplit("/", 1)[-1]: f["reason"] for f in r.failed}
    assert "empty" in reasons["empty.txt"]
    assert "binary" in reasons["binary.txt"]
    assert "pdf" in reasons["corrupt.pdf"].lower()
    assert "max_file_size" in reasons["big.md"] or "max-file-size" in reasons["big.md"]
    assert "not a readable picture" in reasons["image.png"]  # pictures are read by OCR now; this one is broken
    assert "zip bomb" in reasons["bomb.docx"]
    assert "password" in reasons["locked.pdf"]
    assert "symlink loop" in reasons["loop"]
    assert "undecodable.txt" in reasons  # either decoded as something or refused, never a crash
    assert r.added == 3 and before["documents"] == 0


def test_nothing_stored_is_lost_when_a_changed_file_turns_bad(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    ingest(kb, [root])
    before = _chunk_ids(kb)
    (root / "bonds.md").write_bytes(b"")
    r = ingest(kb, [root])
    assert len(r.failed) == 1 and _chunk_ids(kb) == before


def test_strict_stops_at_first_failure_and_keeps_nothing(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    (root / "zzz-empty.txt").write_bytes(b"")
    with pytest.raises(IngestAborted, match="zzz-empty.txt"):
        ingest(kb, [root], strict=True)
    assert kb.stats()["documents"] == 0 and kb.stats()["chunks"] == 0


def test_missing_path_is_reported(kb, tmp_path):
    r = ingest(kb, [tmp_path / "nope"])
    assert r.failed and "no such file" in r.failed[0]["reason"]


def test_permission_error_is_one_line(kb, tmp_path, monkeypatch):
    import ragclinic.ingest.discover as discover

    root = _corpus(tmp_path / "docs")
    real_open = open

    def guarded(path, *a, **k):
        if str(path).endswith("notes.txt"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)

    monkeypatch.setattr(discover, "open", guarded, raising=False)
    r = ingest(kb, [root])
    assert r.added == 2 and r.failed[0]["reason"] == "no read permission"


def test_embeddings_are_cached_across_knowledge_bases(make_settings, tmp_path):
    from ragclinic.config import Settings
    from ragclinic.store.embed_cache import EmbeddingCache

    root = _corpus(tmp_path / "docs")
    a = KnowledgeBase.open(make_settings(), create=True)
    ingest(a, [root])
    cache = EmbeddingCache(a.settings.cache_dir)
    n = cache.count("fake-hash-64")
    b = KnowledgeBase.open(Settings.load(tmp_path / "kb2", embedder="fake"), create=True)
    ingest(b, [root])
    assert cache.count("fake-hash-64") == n and b.stats()["chunks"] == a.stats()["chunks"]


def test_progress_counts_jsonl_records_so_the_eta_is_real(kb, tmp_path):
    root = _corpus(tmp_path / "docs")
    with open(root / "many.jsonl", "w") as f:
        for i in range(40):
            f.write(f'{{"_id": "{i}", "title": "T{i}", "text": "Record {i} about bonds."}}\n')
    seen = []
    ingest(kb, [root], on_progress=seen.append)
    last = seen[-1]
    assert last.total == last.done == 43 and last.files_done == last.files_total == 4
    assert max(p.total for p in seen) == 43 and all(p.done <= p.total for p in seen)


def test_a_bad_jsonl_line_never_deletes_the_stored_record_and_is_reported_again(kb, tmp_path):
    f = tmp_path / "c.jsonl"
    good_b = '{"_id": "b", "title": "Beta", "text": "Beta text about rates."}'
    f.write_text('{"_id": "a", "title": "Alpha", "text": "Alpha about bonds."}\n' + good_b + "\n")
    ingest(kb, [f])
    f.write_text('{"_id": "a", "title": "Alpha", "text": "Alpha about bonds."}\n{"_id": "b", broken\n')
    r = ingest(kb, [f])
    assert r.removed == 0 and len(r.failed) == 1 and kb.stats()["documents"] == 2
    again = ingest(kb, [f])  # the file is not recorded as done while a line fails
    assert len(again.failed) == 1 and kb.stats()["documents"] == 2


def test_an_unexpected_parser_error_fails_one_file_not_the_run(kb, tmp_path, monkeypatch):
    import ragclinic.ingest.runner as runner

    root = _corpus(tmp_path / "docs")
    real = runner.parse_source

    def flaky(source, settings):
        if source.path.name == "notes.txt":
            raise KeyError("boom")
        return real(source, settings)

    monkeypatch.setattr(runner, "parse_source", flaky)
    monkeypatch.setattr(kb, "settings", kb.settings.model_copy(update={"parse_timeout_s": 0}))  # in this process
    r = ingest(kb, [root])
    assert r.added == 2 and r.failed[0]["reason"] == "internal error: KeyError: 'boom'"


def test_sync_keeps_documents_it_cannot_check(kb, tmp_path, monkeypatch):
    import ragclinic.ingest.runner as runner

    root = _corpus(tmp_path / "docs")
    ingest(kb, [root])
    real_stat = runner.os.stat

    def denied(path, *a, **k):
        if str(path).endswith("notes.txt"):
            raise PermissionError(13, "Permission denied")
        return real_stat(path, *a, **k)

    monkeypatch.setattr(runner.os, "stat", denied)
    r = runner._gone(str(root / "notes.txt"))
    assert r is False


def test_strict_rolls_back_what_it_already_wrote(kb, tmp_path, monkeypatch):
    import ragclinic.ingest.runner as runner

    monkeypatch.setattr(runner, "FLUSH_SECONDS", -1.0)  # write after every item: the rollback must undo it
    root = _corpus(tmp_path / "docs")
    (root / "zzz-empty.txt").write_bytes(b"")
    with pytest.raises(IngestAborted):
        ingest(kb, [root], strict=True)
    assert kb.stats() == {"documents": 0, "chunks": 0, "version": 0}
    assert kb.db.conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 0


def test_a_table_too_wide_for_sqlite_fails_its_file_not_the_run(kb, tmp_path):
    """A 3,000-column CSV took 33 s and then a 500: SQLite refused its SQL table and the whole ingest with it."""
    root = _corpus(tmp_path / "docs")
    (root / "wide.csv").write_text("\n".join(",".join(f"r{r}c{c}" for c in range(3000)) for r in range(3)) + "\n")
    r = ingest(kb, [root])
    assert r.added == 3 and [f["path"] for f in r.failed] == [str(root / "wide.csv")]
    assert "max_table_columns=1000" in r.failed[0]["reason"]


def test_hidden_entries_in_a_folder_are_reported_as_skipped_and_a_named_one_is_ingested(kb, tmp_path):
    """Issue 32: a dot-file was skipped with "added 0, failed []" and nothing else said."""
    root = _corpus(tmp_path / "docs")
    (root / ".notes.txt").write_text("Hidden notes about bonds and their coupons.\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("ref: refs/heads/main\n")
    r = ingest(kb, [root])
    assert (r.added, r.failed) == (3, [])
    assert [s["path"] for s in r.skipped] == [str(root / ".git"), str(root / ".notes.txt")]
    assert all("hidden" in s["reason"] and "on its own to ingest it" in s["reason"] for s in r.skipped)
    assert r.to_json()["skipped"] == r.skipped
    named = ingest(kb, [root / ".notes.txt"])  # named on its own: the user asked for it
    assert (named.added, named.skipped, named.failed) == (1, [], [])
    assert "skipped" not in named.to_json()  # the --json keys stay as they were when nothing was skipped


def test_failure_reasons_name_files_relative_to_what_was_ingested(kb, tmp_path, monkeypatch):
    """Issue 32: reasons carried the server's absolute paths (an upload's folder under the knowledge base)."""
    import ragclinic.ingest.runner as runner

    root = _corpus(tmp_path / "docs")
    real = runner.parse_source

    def denied(source, settings):
        if source.path.name == "rag.txt":
            raise OSError(13, "Permission denied", str(source.path))
        return real(source, settings)

    monkeypatch.setattr(runner, "parse_source", denied)
    monkeypatch.setattr(kb, "settings", kb.settings.model_copy(update={"parse_timeout_s": 0}))  # in this process
    r = ingest(kb, [root])
    [f] = r.failed
    assert f["path"] == str(root / "sub" / "rag.txt")  # the path field is unchanged
    assert str(tmp_path) not in f["reason"] and "'sub/rag.txt'" in f["reason"], f["reason"]
