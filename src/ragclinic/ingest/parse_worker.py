"""The parse worker: parses and chunks the files its parent sends, in a process the parent can kill (isolate.py).

Started as ``python -m ragclinic.ingest.parse_worker TO_CHILD FROM_CHILD PARENT_PID`` with two pipe descriptors.
Messages are pickled tuples: ``("run", settings, known_docs)`` starts a run (answered ``("ready",)``);
``("file", source, tags)`` is answered with ``("event", item)`` for each item ``runner.file_events`` yields (a
failure of the whole file is one such item) and then ``("done",)``; ``None`` or the end of the pipe (the parent
died) ends the worker.
"""

from __future__ import annotations

import signal
import sys
from multiprocessing.connection import Connection


def serve(inbox: Connection, outbox: Connection) -> None:
    # isolate registers the pickling of read-only mappings
    from ragclinic.ingest import isolate  # noqa: F401  # on use: after die_with_parent, so a parent dying while the worker imports ends it
    from ragclinic.ingest.runner import failure_of, file_events  # on use: after die_with_parent, so a parent dying while the worker imports ends it
    from ragclinic.native import in_layer  # on use: after die_with_parent, so a parent dying while the worker imports ends it
    from ragclinic.ingest.chunk import TOKEN_COUNTERS, Chunker  # on use: after die_with_parent, so a parent dying while the worker imports ends it

    from ragclinic.ingest.parse import ocr  # on use: as above
    from ragclinic.ingest.parse.ocr_scratch import own_scratch  # on use: as above

    ocr.on_page(lambda: outbox.send(("beat",)))  # each page read by OCR resets the parent's parse_timeout_s
    own_scratch()  # pytesseract's temporary files where a killed worker's are found and removed
    settings = chunker = None
    known: dict[str, str] = {}
    while True:
        try:
            msg = inbox.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        if msg[0] == "run":
            settings, known = msg[1], msg[2]
            chunker = Chunker(settings, TOKEN_COUNTERS.create("e5"))
            outbox.send(("ready",))
            continue
        source, tags = msg[1], msg[2]
        try:
            with in_layer("parse"):
                for item in file_events(source, tags, settings, chunker, known):
                    outbox.send(("event", item))
        except Exception as e:  # the same as in the producer thread: one failed file, the others go on
            outbox.send(("event", failure_of(source.path, e)))
        outbox.send(("done",))


def main(argv: list[str]) -> None:
    from ragclinic.children import die_with_parent  # on use: the worker's first import, nothing heavy before it

    to_child, from_child, parent = (int(a) for a in argv[1:4])
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent decides
    serve(Connection(to_child, writable=False), Connection(from_child, readable=False))


if __name__ == "__main__":
    main(sys.argv)
