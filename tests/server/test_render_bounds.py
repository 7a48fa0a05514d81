"""Pictures drawn on request are bounded (issue 51, item 1): a 1.4 KB PDF whose page is 30000 × 30000 pt took the
server from 165 MB to 1.37 GB with one GET of its page picture (3 at once: 3.65 GB). The page is now rendered at
the resolution that makes its longer side MAX_SIDE pixels, a picture too large to decode is refused with 413,
at most two pictures are drawn at once (429 with Retry-After past that), and a drawn picture is cached."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time

import pytest
from PIL import Image

from .conftest import HOSTS
from .test_ui import _login

ACME, GLOBEX = "acme-render-key-1", "globex-render-key-1"


def huge_page_pdf(side_pt: int = 30000) -> bytes:
    """A small PDF of one page ``side_pt`` points a side with a line of text (what the probe uploaded)."""
    text = b"BT /F1 400 Tf 1000 28000 Td (The relief valve opens at 7.5 bar.) Tj ET"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>" % (side_pt, side_pt),
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (n, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over exec from the forking parent (pytest's own peak)
PEAK = """
import re, sys
from ragclinic.ingest.parse.page_image import page_png
png = page_png(sys.argv[1], 1)
hwm = re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print(len(png) if png else 0, int(hwm) // 1024)
"""


def test_a_huge_pdf_page_is_drawn_in_bounded_memory(tmp_path):
    pdf = tmp_path / "huge.pdf"
    pdf.write_bytes(huge_page_pdf())
    assert len(pdf.read_bytes()) < 2000
    size, peak_mb = map(int, subprocess.run([sys.executable, "-c", PEAK, str(pdf)], capture_output=True, text=True,
                                            check=True, timeout=120).stdout.split())
    assert size > 0
    assert peak_mb < 300, f"drawing the page took the process to {peak_mb} MB"  # the bug: ~1.4 GB
    from ragclinic.ingest.parse.page_image import MAX_SIDE, page_png

    assert max(Image.open(io.BytesIO(page_png(pdf, 1))).size) <= MAX_SIDE


def test_a_picture_too_large_to_decode_is_refused_before_it_is_decoded(tmp_path):
    from ragclinic.ingest.parse.page_image import PageTooLarge, page_png

    bomb = tmp_path / "bomb.png"
    Image.new("1", (20000, 20000), 1).save(bomb)  # 400 M pixels in a few kB
    with pytest.raises(PageTooLarge, match="40,000,000 pixels"):
        page_png(bomb, 1)
    tall = tmp_path / "tall.png"
    Image.new("1", (2000, 30000), 1).save(tall)  # 60 M: under Pillow's bound, over ours
    with pytest.raises(PageTooLarge, match="2000 × 30000"):
        page_png(tall, 1)
    big_jpeg = tmp_path / "big.jpg"
    Image.new("L", (9000, 6000), 200).save(big_jpeg, quality=50)  # decoded at 1/8 scale: allowed
    assert max(Image.open(io.BytesIO(page_png(big_jpeg, 1))).size) <= 1400


@pytest.fixture
def huge(tmp_path):
    from fastapi.testclient import TestClient

    from ragclinic import Clinic
    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "huge.pdf").write_bytes(huge_page_pdf())
    settings = {"embedder": "fake", "judge": "llm", "cache_dir": tmp_path / "cache", "answer_cache": False}
    with Clinic.open(tmp_path / "kb", llm="none", **settings) as c:
        assert not c.ingest(tmp_path / "acme", tags={"tenant": "acme"}).failed
        (chunk,) = [r[0] for r in c.kb.db.conn.execute("SELECT chunk_id FROM chunks")]
    app = create_app(Settings.load(tmp_path / "kb", **settings, allowed_hosts=HOSTS),
                     Keys([f"{ACME}:tenant=acme", f"{GLOBEX}:tenant=globex"]), model=None)
    with TestClient(app) as client:
        yield client, chunk


def test_the_page_route_draws_once_caches_and_bounds_concurrent_draws(huge, monkeypatch):
    client, chunk = huge
    _login(client, ACME)
    renders = client.app.state.rc.renders
    r = client.get(f"/passage/{chunk}/page.png")
    assert r.status_code == 200 and max(Image.open(io.BytesIO(r.content)).size) <= 1400
    assert renders.drawn == 1
    assert client.get(f"/passage/{chunk}/page.png").content == r.content and renders.drawn == 1  # the cache
    # two draws at once at most: a third waits, then gets 429 with Retry-After
    import ragclinic.server.ui_scans as ui_scans

    release = threading.Event()
    monkeypatch.setattr(ui_scans, "page_png", lambda *a: (release.wait(10), b"png")[1])
    renders._cache.clear()
    renders.wait_s = 0.3
    results = []
    threads = [threading.Thread(target=lambda: results.append(client.get(f"/passage/{chunk}/page.png")))
               for _ in range(2)]
    try:
        for t in threads:
            t.start()
        time.sleep(0.3)
        third = client.get(f"/passage/{chunk}/page.png")
        assert third.status_code == 429 and int(third.headers["retry-after"]) > 0
        assert "at once" in json.dumps(third.json())
    finally:
        release.set()
        for t in threads:
            t.join(10)
    assert [x.status_code for x in results] == [200, 200]
