"""A passage read by OCR says so on its page, with the engine's confidence and the page's picture beside the text
(issue 39); the picture follows the passage's rules: another tenant's is the same 404 as a passage that does not
exist, and a source file changed since it was ingested shows no picture (it is no longer the evidence)."""

from __future__ import annotations

import io
import re
import shutil

import pytest
from PIL import Image, ImageDraw, ImageFont

from .conftest import HOSTS
from .test_ui import _login

ACME, GLOBEX = "acme-scan-key-1", "globex-scan-key-1"


def _scan() -> bytes:
    img = Image.new("L", (1500, 700), 255)
    d, font = ImageDraw.Draw(img), ImageFont.load_default(size=36)
    for i, line in enumerate(["Boiler Manual", "The relief valve opens at 7.5 bar.",
                              "Call the service line on 0800 555 0142."]):
        d.text((60, 60 + i * 80), line, font=font, fill=0)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    if not shutil.which("tesseract"):
        pytest.fail("needs Tesseract: make install")
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    tmp = tmp_path_factory.mktemp("scans")
    (tmp / "acme").mkdir()
    (tmp / "acme" / "boiler.png").write_bytes(_scan())
    (tmp / "acme" / "notes.md").write_text("# Notes\n\nThe pump runs at 1400 rpm.\n", encoding="utf-8")
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp / "cache", "answer_cache": False}
    with Clinic.open(tmp / "kb", llm="none", **settings) as c:
        assert not c.ingest(tmp / "acme", tags={"tenant": "acme"}).failed
        ids = dict(c.kb.db.conn.execute("SELECT d.path, c.chunk_id FROM chunks c JOIN documents d "
                                        "ON d.doc_id = c.doc_id").fetchall())
    app = create_app(Settings.load(tmp / "kb", **settings, allowed_hosts=HOSTS),
                     Keys([f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]), model=None)
    with TestClient(app) as client:
        yield client, {p.rsplit("/", 1)[-1]: i for p, i in ids.items()}, tmp / "acme" / "boiler.png"


def test_a_passage_read_by_ocr_says_so_and_shows_its_page(scans):
    client, ids, _ = scans
    _login(client, ACME)
    html = client.get(f"/passage/{ids['boiler.png']}").text
    assert "Read by OCR from a scan of page 1" in html and re.search(r"mean confidence \d+/100", html)
    assert f'src="/passage/{ids["boiler.png"]}/page.png"' in html and "7.5 bar" in html
    png = client.get(f"/passage/{ids['boiler.png']}/page.png")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(png.content)).size == (1400, 653)  # scaled to the page view's 1400 px
    text = client.get(f"/passage/{ids['notes.md']}").text
    assert "Read by OCR" not in text and "1400 rpm" in text


def test_another_tenant_gets_the_same_404_for_the_page_picture(scans):
    client, ids, _ = scans
    _login(client, GLOBEX)
    for url in (f"/passage/{ids['boiler.png']}", f"/passage/{ids['boiler.png']}/page.png", "/passage/0000/page.png"):
        r = client.get(url)
        assert r.status_code == 404, url
    assert client.get(f"/passage/{ids['notes.md']}/page.png").status_code == 404  # no page: a Markdown file


def test_a_changed_source_file_shows_no_page_picture(scans):
    client, ids, path = scans
    _login(client, ACME)
    original = path.read_bytes()
    try:
        path.write_bytes(_scan()[:-10] + b"changed!!!")
        r = client.get(f"/passage/{ids['boiler.png']}/page.png")
        assert r.status_code == 404 and "changed since it was ingested" in r.text
    finally:
        path.write_bytes(original)
    assert client.get(f"/passage/{ids['boiler.png']}/page.png").status_code == 200


@pytest.mark.slow
def test_the_passage_and_its_page_in_a_browser(scans):
    from playwright.sync_api import sync_playwright

    from .conftest import on_socket
    from .test_ui_browser import SHOTS, _chromium

    client, ids, _ = scans
    with on_socket(client.app) as url, sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_context(viewport={"width": 1400, "height": 800}, base_url=url).new_page()
            blocked = []
            page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
            page.goto(f"/?api_key={ACME}")
            page.goto(f"/passage/{ids['boiler.png']}?n=1")
            page.wait_for_function("document.querySelector('#scan-image').complete")
            assert page.evaluate("document.querySelector('#scan-image').naturalWidth") == 1400
            assert "Read by OCR" in page.inner_text("#ocr-note") and "7.5 bar" in page.inner_text("#cited")
            text_box, image_box = page.locator("#document").bounding_box(), page.locator("#scan-image").bounding_box()
            assert image_box["x"] > text_box["x"] + text_box["width"] - 1  # side by side: the page beside the text
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "passage-ocr.png"), full_page=True)
            assert not blocked, blocked
        finally:
            b.close()


@pytest.fixture(scope="module")
def answering(scans):
    """The same knowledge base served with a scripted model that answers from whichever passage it is given."""
    from ragclinic.config import Settings
    from ragclinic.models.fake_llm import ScriptedLanguageModel
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    _, _, png = scans
    root = png.parent.parent
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": root / "cache", "answer_cache": False}
    model = ScriptedLanguageModel(["The relief valve opens at 7.5 bar [1]. The pump runs at 1400 rpm [1]."] * 16,
                                  yes_prob=0.9)
    return create_app(Settings.load(root / "kb", **settings, allowed_hosts=HOSTS), Keys([f"{ACME}:tenant=acme"]),
                      model=model)


def test_the_answer_marks_the_sources_read_by_ocr(scans, answering):
    """In the answer's list of sources, a passage from a scan says so (its page, and a low confidence when it is
    low); a passage from a text file carries no mark."""
    from fastapi.testclient import TestClient

    _, ids, _ = scans
    sources = {}
    with TestClient(answering) as other:
        _login(other, ACME)
        for q in ("When does the relief valve open?", "How fast does the pump run?"):
            with other.stream("GET", "/ui/ask/stream", params={"q": q}) as r:
                text = "".join(r.iter_text())
            final = text[text.index("event: final"):]
            sources |= dict(re.findall(r'<li value="\d+"><a href="/passage/([0-9a-f]+)\?(.*?)</li>', final, re.S))
    assert set(sources) == {ids["boiler.png"], ids["notes.md"]}, sources
    assert 'class="ocr-mark' not in sources[ids["notes.md"]]
    scan = sources[ids["boiler.png"]]
    assert 'class="ocr-mark"' in scan and "scanned, p. 1" in scan and re.search(r"confidence \d+/100", scan)


@pytest.mark.slow
def test_the_scanned_mark_in_a_browser(answering):
    from fastapi.testclient import TestClient
    from playwright.sync_api import sync_playwright

    from .conftest import on_socket
    from .test_ui_browser import SHOTS, _chromium

    with TestClient(answering) as started, on_socket(started.app) as url, sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_context(viewport={"width": 1200, "height": 700}, base_url=url).new_page()
            page.goto(f"/?api_key={ACME}")
            page.fill("input[name=q]", "When does the relief valve open?")
            page.click("form.ask button[type=submit]")
            page.wait_for_selector("#result .ocr-mark")
            mark = page.locator("#result .ocr-mark").first
            assert mark.inner_text().startswith("scanned, p. 1") and "confidence" in mark.get_attribute("title")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "answer-ocr.png"), full_page=True)
        finally:
            b.close()
