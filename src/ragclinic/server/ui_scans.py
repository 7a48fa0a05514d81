"""The picture of the page a passage was read from by OCR (the passage view shows it beside the text): the same
404 as the passage itself for a chunk the key may not read, and for a page that no longer renders (the source file
gone or changed since it was ingested)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ragclinic.ingest.parse.page_image import PageTooLarge, page_png
from ragclinic.server.deps import state
from ragclinic.server.errors import ApiError
from ragclinic.server.ui import who

router = APIRouter(include_in_schema=False)


@router.get("/passage/{chunk_id}/page.png")
def passage_page_image(request: Request, chunk_id: str):
    caller = who(request)
    with state(request).pool.searcher() as clinic:
        row = clinic.kb.db.conn.execute("SELECT c.page, d.path, d.tags, d.metadata FROM chunks c JOIN documents d "
                                        "ON d.doc_id = c.doc_id WHERE c.chunk_id = ?", [chunk_id]).fetchone()
    if row is None or row[0] is None or (caller.tenant and json.loads(row[2]).get("tenant") != caller.tenant):
        raise ApiError(404, "not_found", "no such passage (its document was changed or removed)")
    png = _drawn(request, row[1], row[0], json.loads(row[3] or "{}").get("file_sha256", ""))
    if png is None:
        raise ApiError(404, "not_found", "the page's source file is gone or changed since it was ingested: ingest "
                                         "it again to see its page")
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


def _drawn(request: Request, path: str, page: int, sha256: str) -> bytes | None:
    """The page's picture through the server's bounded renders (render.py), cached by the file as it is now."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    try:
        return state(request).renders.get(("page", path, page, sha256, st.st_size, st.st_mtime_ns),
                                          lambda: page_png(path, page, sha256))
    except PageTooLarge as e:
        raise ApiError(413, "too_large", f"{e}: the page's text is shown without its picture") from None
