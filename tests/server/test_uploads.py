"""Uploads (issue 32): what is refused leaves nothing under KB/uploads, folders of requests cut by a kill are
cleaned when the server starts (never a folder a document points into), one name twice in a request is refused,
the same file uploaded eight times at once is one document, and bad names or sizes are 422s naming the limit."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel

from .conftest import ACME, ADMIN, GLOBEX, HOSTS, KEYS, auth

SMALL = {"max_file_size": 4096, "max_upload_files": 3}


def _app(kb: Path, cache: Path):
    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    settings = Settings.load(kb, embedder="fake", judge="llm", cache_dir=cache, answer_cache=False,
                             allowed_hosts=HOSTS, **SMALL)
    return create_app(settings, Keys(KEYS), model=ScriptedLanguageModel(["ok [1]."], yes_prob=0.9),
                      max_upload_mb=1)


@pytest.fixture(scope="module")
def uploads(tmp_path_factory):
    from fastapi.testclient import TestClient

    tmp = tmp_path_factory.mktemp("uploads")
    (tmp / "docs").mkdir()
    (tmp / "docs" / "base.md").write_text("# Base\n\nThe base document.\n", encoding="utf-8")
    with Clinic.open(tmp / "kb", llm="none", embedder="fake", judge="llm", cache_dir=tmp / "cache") as c:
        c.ingest(tmp / "docs")
    with TestClient(_app(tmp / "kb", tmp / "cache")) as client:
        yield client


def _folder(client) -> Path:
    return client.app.state.rc.settings.kb / "uploads"


def _stored(client) -> list[str]:
    """Every file under KB/uploads (relative), hidden ones included."""
    root = _folder(client)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _paths(client) -> list[str]:
    with client.app.state.rc.pool.searcher() as c:
        return [p for (p,) in c.kb.db.conn.execute("SELECT path FROM documents")]


def _md(name: str, text: str) -> tuple[str, tuple[str, bytes, str]]:
    return ("files", (name, f"# {name}\n\n{text}\n".encode(), "text/markdown"))


def test_refused_files_do_not_stay_on_disk(uploads):
    before = _stored(uploads)
    r = uploads.post("/v1/ingest", files=[_md("kept.md", "a kept file"),
                                          ("files", ("odd.xyz", b"\x00\x01", "application/octet-stream"))],
                     headers=auth(ADMIN))
    body = r.json()
    assert r.status_code == 200 and body["added"] == 1 and len(body["failed"]) == 1
    after = _stored(uploads)
    assert not any(p.endswith("odd.xyz") for p in after), after
    assert [p for p in after if p not in before and p.endswith("kept.md")], after  # the document's source stays
    only_bad = uploads.post("/v1/ingest", files=[("files", ("only.xyz", b"\x00", "application/octet-stream"))],
                            headers=auth(ADMIN))
    assert only_bad.status_code == 200 and only_bad.json()["added"] == 0
    assert _stored(uploads) == after  # not even an empty folder


def test_a_request_over_a_limit_leaves_nothing(uploads):
    before = _stored(uploads)
    big = ("files", ("big.txt", b"x" * (SMALL["max_file_size"] + 1), "text/plain"))
    r = uploads.post("/v1/ingest", files=[_md("small.md", "fine"), big], headers=auth(ADMIN))
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "big.txt" in message and "max_file_size" in message and str(SMALL["max_file_size"]) in message
    many = [_md(f"m{i}.md", "many") for i in range(SMALL["max_upload_files"] + 1)]
    r = uploads.post("/v1/ingest", files=many, headers=auth(ADMIN))
    assert r.status_code == 422 and "max_upload_files" in r.json()["error"]["message"]
    r = uploads.post("/ui/upload", files=many, headers=auth(ADMIN))
    assert r.status_code == 422 and "max_upload_files" in r.json()["error"]["message"]
    assert _stored(uploads) == before
    assert not any(p.endswith(("small.md", "m0.md")) for p in _paths(uploads))


def test_one_name_twice_in_a_request_is_refused(uploads):
    before = _stored(uploads)
    r = uploads.post("/v1/ingest", files=[_md("twice.md", "first"), _md("twice.md", "second")], headers=auth(ADMIN))
    assert r.status_code == 422 and "twice.md" in r.json()["error"]["message"]
    assert _stored(uploads) == before and not any(p.endswith("twice.md") for p in _paths(uploads))


@pytest.mark.parametrize("name, says", [("nul\x00byte.md", "control"), ("x" * 300 + ".md", "max_upload_name_bytes"),
                                        ("y" * 250 + ".md", "max_upload_name_bytes"),
                                        (".hidden.md", "hidden"), ("é" * 120 + ".md", "max_upload_name_bytes")])
def test_bad_names_are_422s_that_say_why(uploads, name, says):
    before = _stored(uploads)
    # the multipart body by hand: httpx would percent-encode a NUL in the name
    body = (b'--b0undary\r\nContent-Disposition: form-data; name="files"; filename="' + name.encode() +
            b'"\r\nContent-Type: text/markdown\r\n\r\n# T\n\ntext\n\r\n--b0undary--\r\n')
    r = uploads.post("/v1/ingest", content=body,
                     headers={**auth(ADMIN), "Content-Type": "multipart/form-data; boundary=b0undary"})
    assert r.status_code == 422, r.text[:300]
    message = r.json()["error"]["message"]
    assert says in message and (name[:20].replace("\x00", "\\x00") in message), message
    assert _stored(uploads) == before


def test_the_same_upload_at_once_is_one_document(uploads, tmp_path):
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(uploads.app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not (server.started and server.servers):
            thread.join(0.05)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        results: list[dict] = []

        def send() -> None:
            import httpx

            r = httpx.post(f"{base}/v1/ingest", files=[_md("same.md", "eight times at once")],
                           data={"tags": ["team=ops"]}, headers=auth(ADMIN), timeout=60)
            results.append(r.json())

        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert sum(r["added"] for r in results) == 1 and sum(r["unchanged"] for r in results) == 7, results
    assert sum(p.endswith("same.md") for p in _paths(uploads)) == 1
    assert sum(p.endswith("same.md") for p in _stored(uploads)) == 1
    # other tags, or another tenant's key, make another document: never one tenant's document moved to another
    for key in (ACME, GLOBEX):
        r = uploads.post("/v1/ingest", files=[_md("same.md", "eight times at once")], headers=auth(key))
        assert r.json()["added"] == 1
    assert sum(p.endswith("same.md") for p in _paths(uploads)) == 3


def test_folders_of_dead_requests_are_cleaned_when_the_server_starts(uploads):
    root = _folder(uploads)
    uploads.post("/v1/ingest", files=[_md("lives.md", "a document's source")], headers=auth(ADMIN))
    kept = {p for p in _stored(uploads)}
    dead = subprocess.Popen(["true"])
    dead.wait()
    partial = root / f".partial-{dead.pid}-abc123"
    partial.mkdir()
    (partial / "cut.md").write_text("cut by a kill", encoding="utf-8")
    orphan = root / ("0" * 32)  # renamed into place, then killed before the commit
    orphan.mkdir()
    (orphan / "orphan.md").write_text("no document points here", encoding="utf-8")
    (orphan / f".pending-{dead.pid}").write_text("", encoding="utf-8")
    legacy = root / "upload-old1234"  # the old layout: one folder per request
    legacy.mkdir()
    (legacy / "old.md").write_text("refused long ago", encoding="utf-8")

    from ragclinic.server.pool import ClinicPool

    ClinicPool(uploads.app.state.rc.settings, readers=1, model=ScriptedLanguageModel(["ok"])).close()
    assert not partial.exists() and not orphan.exists() and not legacy.exists()
    assert {p for p in _stored(uploads)} == kept  # every folder a document points into is still there
    for p in _paths(uploads):
        assert Path(p).exists(), p


def test_failed_reasons_name_the_upload_not_the_servers_folders(uploads):
    r = uploads.post("/v1/ingest", files=[("files", ("bad.xyz", b"\x00", "application/octet-stream"))],
                     headers=auth(ACME))
    failed = r.json()["failed"]
    assert failed and failed[0]["path"] == "bad.xyz", failed
    text = json.dumps(r.json())
    assert str(uploads.app.state.rc.settings.kb) not in text and "/uploads/" not in text


def test_an_upload_reports_no_skipped_file_of_its_own(uploads):
    """The upload's pending mark is a hidden file of the server's; the ingest skips it, the response never names it
    (it showed a tenant `KB/uploads/<hash>/.pending-PID`)."""
    r = uploads.post("/v1/ingest", files=[_md("skipcheck.md", "Nothing hidden here.")], headers=auth(GLOBEX))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["added"] == 1 and "skipped" not in body, body
    assert str(uploads.app.state.rc.settings.kb) not in r.text and ".pending-" not in r.text


def test_a_tenant_key_may_not_set_the_authority_tag(uploads):
    """The authority tag boosts a document over others (scope/policies.py); a tenant tagging its own uploads
    ``authority=official`` would rank them over other tenants' in the admin's questions (issue 32). Refused with a
    422 naming the tag and why; nothing stored. The admin key still may."""
    before = _stored(uploads)
    r = uploads.post("/v1/ingest", files=[_md("ruling.md", "The tenant's ruling.")],
                     data={"tags": ["authority=official"]}, headers=auth(ACME))
    assert r.status_code == 422, r.text[:300]
    message = r.json()["error"]["message"]
    assert "authority" in message and "admin" in message, message
    assert _stored(uploads) == before and not any(p.endswith("ruling.md") for p in _paths(uploads))
    r = uploads.post("/v1/ingest", files=[_md("standard.md", "The admin's standard.")],
                     data={"tags": ["authority=official"]}, headers=auth(ADMIN))
    assert r.status_code == 200, r.text[:300]
    with uploads.app.state.rc.pool.searcher() as c:
        tags = [json.loads(t) for (t,) in c.kb.db.conn.execute("SELECT tags FROM documents WHERE path LIKE "
                                                              "'%standard.md'")]
    assert tags and tags[0].get("authority") == "official"


@pytest.mark.parametrize("chunked", [False, True])
def test_an_upload_over_the_limit_gets_a_413_naming_it_not_a_closed_connection(live, chunked):
    """Issue 51 (8) reported a 300 MB upload seeing the connection closed instead of a 413. Not reproduced here
    (httpx, requests and curl, with and without Expect: 100-continue, chunked or not, on loopback, against the
    code before and after: each got the 413 naming the limit — uvicorn reads and drops the rest of a refused
    body); this guards that it stays so."""
    import httpx

    size = 24 * 1024 * 1024  # the served test app's limit is 1 MB

    head = b'--b\r\nContent-Disposition: form-data; name="files"; filename="big.txt"\r\n\r\n'

    def body():
        yield head
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            yield block

    files = {"content": body() if chunked else head + b"x" * size}
    r = httpx.post(f"{live}/v1/ingest", headers={**auth(ADMIN), "Content-Type": "multipart/form-data; boundary=b"},
                   timeout=60, **files)
    assert r.status_code == 413, r.text[:200]
    assert r.json()["error"]["code"] == "too_large" and "1 MB" in r.json()["error"]["message"]
    assert "--max-upload-mb" in r.json()["error"]["message"]
    assert httpx.get(f"{live}/healthz").status_code == 200


def test_a_client_that_expects_100_continue_gets_the_413_before_sending(live):
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(live)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(b"POST /v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + ADMIN.encode()
                  + b"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 314572800\r\n"
                  + b"Expect: 100-continue\r\n\r\n")
        head = s.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413") and "100 Continue" not in head, head[:200]
