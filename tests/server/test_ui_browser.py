"""The web UI in a real browser (Playwright driving Debian's chromium, on 127.0.0.1): log in, ask, watch the
answer stream in, click a citation and see the passage in its document, open the trace page, diagnose from
it, upload a document, the API docs; log out (the old cookie then opens nothing); a form on another origin that
posts to the server is refused. Every page works under the Content-Security-Policy (no violation is reported).
Screenshots of the ask, trace and knowledge-base pages go to test-output/screenshots/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import ADMIN, auth

SHOTS = Path(os.environ.get("RAGCLINIC_SCREENSHOTS", Path(__file__).resolve().parents[2] / "test-output" / "screenshots"))
Q = "What is usually used as a proxy for the risk-free rate?"


def _chromium() -> str:
    path = os.environ.get("RAGCLINIC_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("the browser tests need Debian's chromium: apt-get install -y --no-install-recommends chromium "
                    "(make install does it when run as root)")
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser, live):
    ctx = browser.new_context(viewport={"width": 1200, "height": 900}, base_url=live)
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    violations = []  # what the browser reports the CSP blocked (an inline script, eval, a style attribute)
    pg.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    yield pg
    ctx.close()
    assert not violations, violations


def test_login_ask_stream_and_open_a_citation(page):
    page.goto("/login?next=/")
    page.fill("input[name=key]", "wrong-key-000")
    page.click("button[type=submit]")
    assert "not valid" in page.inner_text("main")
    page.fill("input[name=key]", ADMIN)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    page.fill("input[name=q]", Q)
    page.click("form.ask button[type=submit]")
    page.wait_for_selector("#answer a.cite")
    assert "treasury bills" in page.inner_text("#answer")
    assert "answered" in page.inner_text("#result")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "ask.png"), full_page=True)
    page.click("#result button:has-text('not helpful')")  # an htmx post: it carries the page's CSRF token
    page.wait_for_selector("#result p.ok")
    assert "saved with the trace" in page.inner_text("#result")
    page.click("#answer a.cite")
    page.wait_for_selector("mark#cited")
    assert "treasury bills" in page.inner_text("mark#cited")
    assert "bonds.md" in page.inner_text("main") or "Bonds" in page.inner_text("h1")


def test_the_trace_page_explains_and_diagnoses(page):
    page.goto(f"/?api_key={ADMIN}")
    page.fill("input[name=q]", Q)
    page.click("form.ask button[type=submit]")
    page.wait_for_selector("#answer a.cite")
    page.click("text=why this answer")
    page.wait_for_selector("table.wf")
    body = page.inner_text("main")
    assert "Where the time went" in body and "Retrieved" in body and "The gate" in body
    assert {"retrieve", "scope", "gate", "generate"} <= set(page.locator("table.wf td.layer").all_inner_texts())
    page.fill("input[name=expected]", "treasury bills")
    page.click("text=Diagnose")
    page.wait_for_selector("#diagnosis table")
    assert "verdict: none" in page.inner_text("#diagnosis")
    page.screenshot(path=str(SHOTS / "trace.png"), full_page=True)


def test_upload_from_the_knowledge_base_page(page, tmp_path):
    doc = tmp_path / "coupons.md"
    doc.write_text("# Coupons\n\nThe coupon of the 2031 bond is 2.5 percent a year.\n", encoding="utf-8")
    page.goto(f"/kb?api_key={ADMIN}")
    page.set_input_files("input[name=files]", str(doc))
    page.fill("#upload input[name=tags]", "team=treasury")
    page.click("text=Upload and ingest")
    page.wait_for_selector("#uploaded p")
    assert "1 added" in page.inner_text("#uploaded")
    page.reload()
    assert "coupons.md" in page.inner_text("main")
    page.screenshot(path=str(SHOTS / "kb.png"), full_page=True)
    page.fill("input[name=q] >> nth=0", "coupon 2031 bond")
    page.click("text=Search")
    page.wait_for_selector("#hits table")
    assert "2.5 percent" in page.inner_text("#hits")


def test_logging_out_revokes_the_cookie(page, browser, live):
    page.goto("/login?next=/traces")
    page.fill("input[name=key]", ADMIN)
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_url("**/traces")
    (old,) = [c for c in page.context.cookies() if c["name"] == "ragclinic_session"]
    assert ADMIN not in old["value"] and old["httpOnly"]
    page.click("header button:has-text('log out')")
    page.wait_for_url("**/login")
    other = browser.new_context(base_url=live)  # someone who kept a copy of the cookie
    try:
        other.add_cookies([{k: old[k] for k in ("name", "value", "domain", "path")}])
        again = other.new_page()
        again.goto("/traces")
        assert again.url.endswith("/login?next=%2Ftraces") and again.locator("input[name=key]").count() == 1
        assert other.request.get("/v1/traces").status == 401
    finally:
        other.close()


ATTACK = """<!doctype html><title>win a prize</title>
<form id="f" method="post" action="{target}/v1/ingest" enctype="multipart/form-data">
  <input type="file" name="files"><input name="tags" value="planted=yes"></form>
<script>
  const data = new DataTransfer();
  data.items.add(new File(["The planted rule is 97 points."], "planted-cross-origin.txt", {{type: "text/plain"}}));
  document.querySelector("input[type=file]").files = data.files;
  document.getElementById("f").submit();
</script>"""


@pytest.fixture
def attacker(tmp_path, live):
    """A page on another origin (another port of 127.0.0.1: the same site, so the Lax cookie goes along) whose
    form posts a file to the server as soon as it loads."""
    import functools
    import http.server
    import threading

    (tmp_path / "attack.html").write_text(ATTACK.format(target=live), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/attack.html"
    server.shutdown()


def test_a_form_on_another_origin_cannot_post_to_the_server(page, attacker, served):
    page.goto(f"/kb?api_key={ADMIN}")  # logged in: the browser holds a session cookie for 127.0.0.1
    with page.expect_response(lambda r: r.url.endswith("/v1/ingest")) as posted:
        page.goto(attacker)
    response = posted.value
    assert response.status == 403 and "cross_origin" in response.text()
    found = served.post("/v1/retrieval", json={"query": "planted rule 97 points", "k": 20}, headers=auth(ADMIN))
    assert not [h for h in found.json()["hits"] if "planted" in h["text"]]
    page.goto("/kb")
    assert "planted-cross-origin" not in page.inner_text("main")


def test_the_api_docs_render_from_vendored_files(page):
    page.goto(f"/docs?api_key={ADMIN}")
    page.wait_for_selector(".swagger-ui .opblock")
    assert "/v1/ask" in page.inner_text(".swagger-ui")
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.reload()
    page.wait_for_selector(".swagger-ui .opblock")
    assert requested and all(u.startswith(page.url.split("/docs")[0]) for u in requested), requested
    page.screenshot(path=str(SHOTS / "docs.png"))
    # "Try it out" rides on the session: the POST carries the page's CSRF token (static/swagger-init.js)
    op = page.locator(".opblock-post", has_text="/v1/retrieval")
    op.locator(".opblock-summary").click()
    op.locator("button.try-out__btn").click()
    op.locator("textarea.body-param__text").fill('{"query": "treasury bills", "k": 3}')
    op.locator("button.execute").click()
    status = op.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip().startswith("200"), op.locator(".live-responses-table").inner_text()
