"""PDFium is not thread-safe (issue 51): the server draws two page pictures at once and an upload's OCR draws
pages beside them. Without one lock around every PDFium call, four threads drawing pages crashed the process
("free(): corrupted unsorted chunks", "double free or corruption") on most runs; each run here is a fresh process."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

RACE = textwrap.dedent("""
    import sys, threading
    from ragclinic.ingest.parse.page_image import page_png
    from tests.server.test_render_bounds import huge_page_pdf
    path = sys.argv[1]
    open(path, "wb").write(huge_page_pdf(2000))
    failed = []
    def work():
        for _ in range(20):
            if not page_png(path, 1):
                failed.append(1)
    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print("drawn", 80 - len(failed))
""")


def test_pages_drawn_from_four_threads_at_once_do_not_crash_the_process(tmp_path):
    for run in range(2):
        p = subprocess.run([sys.executable, "-c", RACE, str(tmp_path / f"page{run}.pdf")], cwd=ROOT,
                           capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}:{ROOT / 'tests'}", "OMP_WAIT_POLICY": "PASSIVE",
                                "PATH": "/usr/bin:/bin"})
        assert p.returncode == 0 and "drawn 80" in p.stdout, (p.returncode, p.stderr[-1500:])
