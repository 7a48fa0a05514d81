"""Lexical index role and its tantivy backend (BM25 over text pre-tokenized by text.analyzer)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import tantivy

from ragclinic.errors import StoreError
from ragclinic.native import native


class LexicalIndex(Protocol):
    def add(self, items: Iterable[tuple[int, str]]) -> None:
        """Add (chunk rowid, analyzed text) pairs; re-adding a rowid replaces it."""
        ...

    def remove(self, rowids: Sequence[int]) -> None: ...

    def commit(self) -> None: ...

    def search(self, tokens: Sequence[str], k: int, allowed: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """Top-k (rowid, BM25 score); ``allowed`` restricts the search to those rows (a pre-filter)."""
        ...

    def __len__(self) -> int: ...


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_integer_field("rowid", stored=True, indexed=True, fast=True)
    # Pre-tokenized text: tantivy only splits on whitespace; lowercasing/stemming/jieba happened before.
    b.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    return b.build()


class TantivyIndex:
    STAMP = "stamp.json"

    def __init__(self, folder: Path, heap_bytes: int = 128 * 1024 * 1024) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._schema = _schema()
        try:
            self._index = tantivy.Index(self._schema, path=str(folder), reuse=True)
        except (OSError, ValueError) as e:
            raise StoreError(f"lexical index at {folder} cannot be opened ({e}); delete the folder to rebuild it") from None
        self._heap = heap_bytes
        self._writer = None

    # ------------------------------------------------------------------ stamp: the KB version it reflects
    def stamp(self) -> int | None:
        try:
            return int(json.loads((self.folder / self.STAMP).read_text())["version"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def set_stamp(self, version: int) -> None:
        tmp = self.folder / (self.STAMP + ".tmp")
        tmp.write_text(json.dumps({"version": version}))
        os.replace(tmp, self.folder / self.STAMP)

    # ------------------------------------------------------------------ writes
    def _w(self):
        if self._writer is None:
            self._writer = self._index.writer(heap_size=self._heap, num_threads=1)
        return self._writer

    def add(self, items: Iterable[tuple[int, str]]) -> None:
        w = self._w()
        with native("tantivy", "add documents", "index"):
            self._add(w, items)

    @staticmethod
    def _add(w, items: Iterable[tuple[int, str]]) -> None:
        for rowid, body in items:
            # Delete-then-add makes replaying the change log after a crash idempotent.
            w.delete_documents_by_term("rowid", rowid)
            w.add_document(tantivy.Document(rowid=rowid, body=body))

    def remove(self, rowids: Sequence[int]) -> None:
        w = self._w()
        for rid in rowids:
            w.delete_documents_by_term("rowid", rid)

    def clear(self) -> None:
        self._w().delete_all_documents()

    def commit(self) -> None:
        if self._writer is not None:
            with native("tantivy", "commit", "index"):
                self._writer.commit()
                self._writer.wait_merging_threads()
                self._writer = None
                self._index.reload()

    # ------------------------------------------------------------------ reads
    def reload(self) -> None:
        """See the last commit now (another clinic's or process's): tantivy's own reload runs on a delay."""
        self._index.reload()

    def __len__(self) -> int:
        return self._index.searcher().num_docs

    def search(self, tokens: Sequence[str], k: int, allowed: Sequence[int] | None = None) -> list[tuple[int, float]]:
        terms = list(dict.fromkeys(t for t in tokens if t))
        if not terms or k <= 0:
            return []
        should = [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "body", t)) for t in terms]
        query = tantivy.Query.boolean_query(should)
        if allowed is not None:
            if not allowed:
                return []
            allow = tantivy.Query.term_set_query(self._schema, "rowid", [int(a) for a in allowed])
            # Zero-weight MUST clause: filters inside the search without changing BM25 scores.
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, query), (tantivy.Occur.Must, tantivy.Query.const_score_query(allow, 0.0))])
        with native("tantivy", f"search {len(terms)} terms"):
            searcher = self._index.searcher()
            # count=False keeps tantivy's block-max WAND top-k; counting all matches disables it.
            result = searcher.search(query, k, count=False)
            return [(int(searcher.doc(addr)["rowid"][0]), float(score)) for score, addr in result.hits]

    def doc_freq(self, token: str) -> int:
        """Chunks containing the (analysed) token: 0 means the corpus never uses it."""
        return int(self._index.searcher().doc_freq("body", token))

    def destroy(self) -> None:
        self._writer = None
        shutil.rmtree(self.folder, ignore_errors=True)
