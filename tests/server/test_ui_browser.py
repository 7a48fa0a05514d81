"""The web UI in a real browser (Playwright driving Debian's chromium, on 127.0.0.1): log in, ask, watch the
answer stream in, click a citation and see the passage in its document, open the trace page, diagnose from
it, upload a document. Screenshots of the ask and trace pages go to test-output/screenshots/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import ADMIN

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
    yield pg
    ctx.close()


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
    page.fill("input[name=q] >> nth=0", "coupon 2031 bond")
    page.click("text=Search")
    page.wait_for_selector("#hits table")
    assert "2.5 percent" in page.inner_text("#hits")
