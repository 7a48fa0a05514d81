"""What a browser page on another origin, or a DNS-rebinding host, can make the server do (issue 32): nothing.
The Host header names this server or the request is refused; a request a browser could send on its own (no key
in a header) that changes state must come from the server's own origin, and the UI's forms carry a CSRF token
tied to the session; every response sends the security headers; the API docs and metrics need a key and load
nothing from a CDN; wrong keys from one address are limited."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import ACME, ADMIN, HOSTS, auth

SERVER = Path(__file__).resolve().parents[2] / "src" / "ragclinic" / "server"
OTHER_ORIGIN = "http://127.0.0.1:9999"  # another port of the same host: the same *site*, another origin


def _app(tmp_path, keys=(), **settings):
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    base = {"embedder": "fake", "judge": "llm", "cache_dir": tmp_path / "cache"}
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bonds.md").write_text("# Bonds\n\nTreasury bills are the usual proxy for the risk-free rate.\n",
                                   encoding="utf-8")
    with Clinic.open(tmp_path / "kb", llm="none", **base) as c:
        c.ingest(docs)
    app = create_app(Settings.load(tmp_path / "kb", llm="none", **base, **settings), Keys(list(keys)))
    return TestClient(app, base_url="http://127.0.0.1:8080")


def _documents(client, headers=None) -> set[str]:
    page = client.get("/kb", headers=headers or {})
    assert page.status_code == 200, page.text[:300]
    return set(re.findall(r'<span class="small muted">([^<]+)</span>', page.text))


def _token(client, path="/") -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text[:300]
    return re.search(r'"X-CSRF-Token": "([0-9a-f]+)"', page.text).group(1)


# ---------------------------------------------------------------------- DNS rebinding: the Host header
def test_a_rebinding_host_is_refused_and_loopback_names_with_any_port_are_answered(tmp_path):
    with _app(tmp_path) as client:  # keyless: loopback only, which is what a rebinding page reaches
        bad = client.get("/healthz", headers={"Host": "rebind.attacker.example"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_host"
        assert "--allowed-host" in bad.json()["error"]["message"]
        assert client.post("/v1/ask", json={"question": "risk-free rate?"},
                           headers={"Host": "rebind.attacker.example:8080"}).status_code == 400
        for host in ("127.0.0.1:8080", "localhost:1234", "LOCALHOST", "[::1]:8080", "127.0.0.1"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
        assert client.get("/healthz", headers={"Host": "testserver"}).status_code == 400  # not by default


def test_allowed_hosts_names_and_subdomains(tmp_path):
    from ragclinic.config import Settings
    from ragclinic.errors import ConfigError

    with _app(tmp_path, allowed_hosts=["rag.example.org", ".corp.example"]) as client:
        for host, status in (("rag.example.org:443", 200), ("a.corp.example", 200), ("corp.example", 200),
                             ("evilcorp.example", 400), ("127.0.0.1:8080", 400)):
            assert client.get("/healthz", headers={"Host": host}).status_code == status, host
    with pytest.raises(ConfigError, match="rag.example.org:8080"):
        Settings.load(tmp_path / "kb", allowed_hosts=["rag.example.org:8080"])


def test_serve_adds_its_host_and_each_allowed_host(tmp_path, monkeypatch):
    import uvicorn
    from typer.testing import CliRunner

    from ragclinic.cli.main import app as cli
    from ragclinic.server.guard import bind_hosts

    assert bind_hosts("0.0.0.0", ["rag.example.org"]) == ["rag.example.org"]
    assert bind_hosts("::", []) == [] and bind_hosts("10.0.0.5", []) == ["10.0.0.5"]
    assert bind_hosts("[fd00::5]", []) == ["fd00::5"]
    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.update(app=application, **kw))
    _app(tmp_path).close()  # a knowledge base to serve
    r = CliRunner().invoke(cli, ["serve", "--kb", str(tmp_path / "kb"), "--llm", "none", "--host", "10.0.0.5",
                                 "--api-key", ADMIN, "--allowed-host", "Rag.Example.org"])
    assert r.exit_code == 0, r.output
    assert served["app"].state.rc.settings.allowed_hosts == ["127.0.0.1", "localhost", "::1", "rag.example.org",
                                                             "10.0.0.5"]
    r = CliRunner().invoke(cli, ["serve", "--kb", str(tmp_path / "kb"), "--llm", "none"])  # 127.0.0.1: no change
    assert r.exit_code == 0 and served["app"].state.rc.settings.allowed_hosts == ["127.0.0.1", "localhost", "::1"]
    served.clear()
    r = CliRunner().invoke(cli, ["serve", "--kb", str(tmp_path / "kb"), "--llm", "none", "--allowed-host", "*"])
    assert r.exit_code == 2 and "needs --api-key" in r.output and not served  # keyless + any name: refused


# ---------------------------------------------------------------------- Origin: state-changing requests
def test_keyless_mode_refuses_a_cross_origin_upload_and_stores_nothing(tmp_path):
    planted = [("files", ("planted.txt", b"The planted rule is 99 points.\n", "text/plain"))]
    with _app(tmp_path) as client:
        before = _documents(client)
        for headers in ({"Origin": OTHER_ORIGIN}, {"Origin": "null"}, {"Sec-Fetch-Site": "same-site"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Referer": OTHER_ORIGIN + "/attack.html"},
                        {"Origin": "http://localhost:8080"}):
            r = client.post("/v1/ingest", files=planted, headers=headers)
            assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin", headers
            assert client.post("/ui/upload", files=planted, headers=headers).status_code == 403, headers
        asked = client.post("/v1/ask", json={"question": "risk-free?"}, headers={"Origin": OTHER_ORIGIN})
        assert asked.status_code == 403
        assert client.get("/ui/ask?q=risk", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert _documents(client) == before and "planted.txt" not in str(before)
        # this server's own origin, and a client that is not a browser (curl sends no Origin), still work
        assert client.post("/v1/ask", json={"question": "risk-free?"},
                           headers={"Origin": "http://127.0.0.1:8080"}).status_code == 200
        assert client.post("/v1/ask", json={"question": "risk-free?"},
                           headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
        assert client.post("/v1/ask", json={"question": "risk-free?"}).status_code == 200
        r = client.post("/ui/retrieval", data={"q": "treasury"}, headers={"X-CSRF-Token": _token(client)})
        assert r.status_code == 200 and "Treasury bills" in r.text


def test_the_session_cookie_alone_does_not_authorise_a_cross_origin_request(served):
    served.cookies.clear()
    assert served.get(f"/?api_key={ADMIN}", follow_redirects=False).status_code == 303
    planted = [("files", ("planted-by-cookie.txt", b"The planted rule is 98 points.\n", "text/plain"))]
    r = served.post("/v1/ingest", files=planted, headers={"Origin": OTHER_ORIGIN})
    assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin"
    r = served.post("/v1/ingest", files=planted)  # no Origin: the session needs the page's CSRF token
    assert r.status_code == 403 and r.json()["error"]["code"] == "csrf"
    for path, data in (("/ui/feedback", {"trace_id": "x", "rating": "1"}),
                       ("/ui/rerun", {"trace_id": "x", "layer": "gate"}),
                       ("/ui/diagnose", {"trace_id": "x", "expected": "y"}), ("/ui/retrieval", {"q": "bills"})):
        assert served.post(path, data=data, headers={"Origin": OTHER_ORIGIN}).status_code == 403, path
        assert served.post(path, data=data).json()["error"]["code"] == "csrf", path
    assert "planted-by-cookie.txt" not in str(_documents(served))
    token = _token(served)
    ok = served.post("/v1/retrieval", json={"query": "treasury bills"}, headers={"X-CSRF-Token": token})
    assert ok.status_code == 200 and ok.json()["hits"]
    # a key in a header is not something another origin's page can send: a script or a server is asking
    keyed = served.post("/v1/retrieval", json={"query": "treasury bills"},
                        headers={**auth(ACME), "Origin": OTHER_ORIGIN})
    assert keyed.status_code == 200


def test_an_empty_or_malformed_authorization_header_is_no_key(served):
    """Issue 51 (5): ``Authorization: Bearer `` with nothing after it (or a key with a space in it) beside an
    admin's session cookie was taken as "a key in a header" and skipped the Origin and CSRF checks, while the
    cookie's session still authorised the request."""
    served.cookies.clear()
    assert served.get(f"/?api_key={ADMIN}", follow_redirects=False).status_code == 303
    for header in ("Bearer ", "Bearer    ", "bearer", "Bearer a b", "Bearer a\tb"):
        bare = {"Authorization": header, "Origin": OTHER_ORIGIN}
        r = served.post("/v1/diagnose", json={"question": "risk-free?", "expected": ["bills"], "apply": True},
                        headers=bare)
        assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin", (header, r.text[:200])
        r = served.post("/ui/diagnose", data={"trace_id": "x", "expected": "y"}, headers=bare)
        assert r.status_code == 403, header
        r = served.post("/v1/ingest", headers={"Authorization": header},
                        files=[("files", ("empty-bearer.txt", b"Planted.\n", "text/plain"))])
        assert r.status_code == 403 and r.json()["error"]["code"] == "csrf", header
    r = served.post("/v1/retrieval", json={"query": "bills"}, headers={"X-API-Key": " ", "Origin": OTHER_ORIGIN})
    assert r.status_code == 403
    assert "empty-bearer.txt" not in str(_documents(served))
    served.cookies.clear()
    r = served.post("/v1/retrieval", json={"query": "bills"}, headers={"Authorization": "Bearer "})
    assert r.status_code == 401  # no session, no key


def test_a_csrf_token_is_tied_to_its_session(served):
    served.cookies.clear()
    served.get(f"/?api_key={ADMIN}")
    mine = _token(served)
    served.cookies.clear()
    served.get(f"/?api_key={ADMIN}")  # another session (another browser)
    assert served.post("/ui/retrieval", data={"q": "bills"}, headers={"X-CSRF-Token": mine}).status_code == 403
    ok = served.post("/ui/retrieval", data={"q": "bills"}, headers={"X-CSRF-Token": _token(served)})
    assert ok.status_code == 200


def test_the_login_form_needs_its_token(served):
    served.cookies.clear()
    r = served.post("/login", data={"key": ADMIN, "next": "/"}, follow_redirects=False)
    assert r.status_code == 403 and "ragclinic_session" not in r.headers.get("set-cookie", "")
    form = served.get("/login").text
    token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form).group(1)
    r = served.post("/login", data={"key": ADMIN, "next": "/", "csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and "ragclinic_session=" in r.headers["set-cookie"]


# ---------------------------------------------------------------------- headers on every response
def test_every_response_sends_the_security_headers(served):
    served.cookies.clear()
    served.get(f"/?api_key={ADMIN}")
    for path in ("/", "/kb", "/login", "/healthz", "/static/app.css", "/v1/traces", "/no-such-page", "/docs"):
        r = served.get(path)
        csp = r.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, path
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, path
        assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["referrer-policy"] == "same-origin", path
    refused = served.get("/healthz", headers={"Host": "rebind.attacker.example"})
    assert refused.headers["x-frame-options"] == "DENY"


def test_no_page_has_inline_script_or_style_or_eval_attributes():
    for template in (SERVER / "templates").glob("*.html"):
        text = template.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template.name
        assert not re.search(r"\s(style|on\w+|hx-on[\w:-]*)=", text), template.name
    ours = (SERVER / "templates" / "docs.html").read_text() + (SERVER / "static" / "swagger-init.js").read_text()
    assert "http://" not in ours and "https://" not in ours


# ---------------------------------------------------------------------- docs and metrics
def test_docs_schema_and_metrics_need_a_key_and_load_nothing_from_a_cdn(served):
    served.cookies.clear()
    for path in ("/openapi.json", "/metrics"):
        assert served.get(path).status_code == 401, path
    assert served.get("/docs", follow_redirects=False).headers["location"].startswith("/login")
    assert served.get("/redoc").status_code == 404
    assert served.get("/openapi.json", headers=auth(ACME)).json()["paths"]["/v1/ask"]
    assert served.get("/metrics", headers=auth(ACME)).status_code == 403  # totals over every tenant
    assert "ragclinic_http_request_duration_seconds" in served.get("/metrics", headers=auth(ADMIN)).text
    served.get(f"/?api_key={ADMIN}")
    docs = served.get("/docs").text
    scripts = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', docs)
    assert scripts and all(s.startswith("/static/") for s in scripts), scripts
    for s in scripts:
        assert served.get(s).status_code == 200, s
    assert served.get("/openapi.json").status_code == 200  # what Swagger UI fetches, on the session
    for f in SERVER.rglob("*"):
        if f.is_file() and f.suffix in (".py", ".html", ".js") and "vendor" not in f.parts:
            assert not re.search(r"cdn\.jsdelivr|unpkg\.com|cdnjs", f.read_text(encoding="utf-8")), f


# ---------------------------------------------------------------------- wrong keys
def test_wrong_keys_from_one_address_are_limited(tmp_path):
    from fastapi.testclient import TestClient

    with _app(tmp_path, keys=[ADMIN], login_failures_max=3, login_failures_window_s=60) as client:
        for _ in range(3):
            assert client.get("/v1/traces", headers=auth("wrong-key-000")).status_code == 401
        r = client.get("/v1/traces", headers=auth("wrong-key-000"))
        assert r.status_code == 429 and 0 < int(r.headers["retry-after"]) <= 60
        assert client.get("/v1/traces", headers=auth(ADMIN)).status_code == 429  # else the answer still tells
        form = client.get("/login").text
        token = re.search(r'name="csrf_token" value="([0-9a-f]+)"', form).group(1)
        for _ in range(3):  # the browser channel (login form, ?api_key=) counts in a bucket of its own
            assert client.post("/login", data={"key": "wrong-key-000", "csrf_token": token}).status_code == 200
        assert client.get(f"/kb?api_key={ADMIN}").status_code == 429
        r = client.post("/login", data={"key": ADMIN, "csrf_token": token}, follow_redirects=False)
        assert r.status_code == 429 and "retry-after" in r.headers
        other = TestClient(client.app, base_url="http://127.0.0.1:8080", client=("10.0.0.9", 5000))
        assert other.get("/v1/traces", headers=auth(ADMIN)).status_code == 200  # per client address
        rc = client.app.state.rc
        rc.limiter._clock = lambda: __import__("time").monotonic() + 61  # the window has passed
        assert client.get("/v1/traces", headers=auth(ADMIN)).status_code == 200


def test_the_limiter_counts_failures_in_a_sliding_window():
    from ragclinic.server.sessions import LoginLimiter

    now = [100.0]
    lim = LoginLimiter(2, 10, clock=lambda: now[0])
    lim.failed("a", "header")
    now[0] = 104
    lim.failed("a", "header")
    assert lim.retry_after("a", "header") == 6 and lim.retry_after("b", "header") == 0
    assert lim.retry_after("a", "browser") == 0  # another channel: another bucket
    now[0] = 110.5
    assert lim.retry_after("a", "header") == 0  # the first failure left the window
    lim.failed("a", "header")
    assert lim.retry_after("a", "header") == 4


def test_hosts_in_tests_are_explicit():
    from ragclinic.config import Settings

    assert "testserver" not in Settings.model_fields["allowed_hosts"].default
    assert set(Settings.model_fields["allowed_hosts"].default) < set(HOSTS)


# ---------------------------------------------------------------------- a page on another site cannot lock a key out
CROSS_SITE = {"Referer": "http://evil.example/", "Sec-Fetch-Site": "cross-site"}  # what an <img> on evil.example sends


def test_a_cross_site_page_cannot_lock_out_the_header_key(tmp_path):
    with _app(tmp_path, keys=[ADMIN], login_failures_max=3, login_failures_window_s=60) as client:
        for _ in range(10):  # <img src="http://127.0.0.1:8080/v1/models?api_key=wrong"> on a malicious page
            r = client.get("/v1/models?api_key=wrong-key-000", headers=CROSS_SITE)
            assert r.status_code == 401 and "Authorization" in r.json()["error"]["message"]  # as if no key
        assert client.get(f"/v1/models?api_key={ADMIN}", headers=CROSS_SITE).status_code == 401  # not accepted
        assert client.get("/v1/models", headers=auth(ADMIN)).status_code == 200
        assert client.get(f"/v1/models?api_key={ADMIN}", headers={"Sec-Fetch-Site": "none"}).status_code == 200


def test_each_channel_has_its_own_bucket_of_failures(tmp_path):
    with _app(tmp_path, keys=[ADMIN], login_failures_max=3, login_failures_window_s=60) as client:
        for _ in range(3):  # the browser channel, from this server's own origin (Referer stripped, say)
            assert client.get("/v1/models?api_key=wrong-key-000").status_code == 401
        assert client.get(f"/v1/models?api_key={ADMIN}").status_code == 429  # that channel is locked, any key
        assert client.get(f"/traces?api_key={ADMIN}", follow_redirects=False).status_code == 429
        assert client.get("/v1/models", headers=auth(ADMIN)).status_code == 200  # the header channel is not
        assert client.get("/v1/models", headers={"X-API-Key": ADMIN}).status_code == 200
        for _ in range(3):
            assert client.get("/v1/models", headers=auth("wrong-key-000")).status_code == 401
        assert client.get("/v1/models", headers=auth(ADMIN)).status_code == 429


# ---------------------------------------------------------------------- X-Forwarded-For from a client
def _serve_options(tmp_path, monkeypatch, *extra) -> tuple:
    """What `ragclinic serve` hands uvicorn (the app and its options), with a wrong-key limit of 3 a minute."""
    import uvicorn
    from typer.testing import CliRunner

    from ragclinic.cli.main import app as cli

    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.update(app=application, **kw))
    (tmp_path / "kb").exists() or _app(tmp_path).close()
    monkeypatch.setenv("RAGCLINIC_LOGIN_FAILURES_MAX", "3")
    r = CliRunner().invoke(cli, ["serve", "--kb", str(tmp_path / "kb"), "--llm", "none", "--api-key", ADMIN, *extra])
    assert r.exit_code == 0, r.output
    application = served.pop("app")
    return application, {k: v for k, v in served.items() if k not in ("host", "port", "workers")}


def _guesses(url: str, n: int, forwarded=lambda i: {}) -> list[int]:
    import httpx

    return [httpx.get(f"{url}/v1/traces", headers={**auth(f"wrong-key-{i:03d}"), **forwarded(i)}).status_code
            for i in range(n)]


def test_a_client_cannot_name_the_address_its_wrong_keys_count_against(tmp_path, monkeypatch):
    """Issue 51 (2): uvicorn believes X-Forwarded-For from 127.0.0.1 by default, so each wrong key counted against
    an address the client made up (30 guesses, never a 429), and anyone could lock out an address by naming it.
    `serve` believes forwarded headers only from --forwarded-allow-ips (default: none)."""
    import uvicorn

    from .conftest import on_socket

    original = uvicorn.Config
    application, options = _serve_options(tmp_path, monkeypatch)
    monkeypatch.setattr(uvicorn, "Config", _with_options(original, options))
    with on_socket(application) as url:
        codes = _guesses(url, 30, lambda i: {"X-Forwarded-For": f"203.0.113.{i}"})
        assert codes[:3] == [401] * 3 and set(codes[3:]) == {429}, codes
    # behind a proxy that is named, the address it forwards is the client's (and each gets its own bucket)
    application, options = _serve_options(tmp_path, monkeypatch, "--forwarded-allow-ips", "127.0.0.1,10.0.0.0/8")
    assert options.get("forwarded_allow_ips") == ["127.0.0.1", "10.0.0.0/8"]
    monkeypatch.setattr(uvicorn, "Config", _with_options(original, options))
    with on_socket(application) as url:
        assert set(_guesses(url, 6, lambda i: {"X-Forwarded-For": f"203.0.113.{i}"})) == {401}
        assert _guesses(url, 4, lambda i: {"X-Forwarded-For": "198.51.100.7"})[-1] == 429


def test_forwarded_allow_ips_names_the_bad_value(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from ragclinic.cli.main import app as cli

    _app(tmp_path).close()
    r = CliRunner().invoke(cli, ["serve", "--kb", str(tmp_path / "kb"), "--llm", "none",
                                 "--forwarded-allow-ips", "proxy.example"])
    assert r.exit_code == 2 and "'proxy.example'" in r.output and "10.0.0.0/8" in r.output


def _with_options(config, options):
    def make(app, **kw):
        return config(app, **{**kw, **options})
    return make
