"""The OCR path of the ingest on the scanned set (issue 39), as the product reads it — orientation, deskew, ruled
tables, page numbers and running headers — rather than the engine alone (cer.py):

- the character error rate of each scanned page (the image-only PDFs at 300 and 150 dpi) parsed by the PDF
  parser, against the page's ground truth (a table's cells compared in row order, as cer.py does);
- whether the ruled table on the table pages came out as a table (rows × columns as written);
- seconds a page to parse an eight-page scan (every page of the set in one PDF) with ``ocr_workers`` 1 and 2, side
  by side in one run, alternating, median of ``--repeat`` runs.

    .venv/bin/python bench/ocr/make_set.py --out bench/out/ocr-set
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/ocr/ingest_bench.py --set bench/out/ocr-set --out bench/out/ocr-ingest.json
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cer import edit_distance, fold  # noqa: E402
from texts import PAGES  # noqa: E402

from ragclinic.config import Settings  # noqa: E402
from ragclinic.ingest.parse import parse_source  # noqa: E402
from ragclinic.types import SourceFile  # noqa: E402


def parse(path: Path, data: bytes | None = None, **settings):
    data = path.read_bytes() if data is None else data
    source = SourceFile(path.resolve(), data, hashlib.sha256(data).hexdigest(), 0.0, len(data))
    (result,) = list(parse_source(source, Settings.load(Path("/tmp/ocr-bench-kb"), **settings)))
    return result


def plain(text: str) -> str:
    """The parsed text as the ground truth is written: no Markdown table rule lines, cells split by '|'."""
    return "\n".join(line for line in text.split("\n") if not re.fullmatch(r"\|(-+\|)+", line.strip()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=Path("bench/out/ocr-set"))
    ap.add_argument("--out", type=Path, default=Path("bench/out/ocr-ingest.json"))
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    rows = []
    for page in PAGES:
        truth = fold((a.set / f"{page['id']}.txt").read_text(encoding="utf-8"), page["lang"])
        for dpi in (300, 150):
            t0 = time.perf_counter()
            r = parse(a.set / f"{page['id']}-scan-{dpi}.pdf", ocr_workers=1)
            secs = time.perf_counter() - t0
            got = fold(plain(r.document.text), page["lang"])
            want_table = page.get("table")
            tables = [t.rows for t in r.document.tables]
            rows.append({"page": page["id"], "lang": page["lang"], "dpi": dpi,
                         "cer": round(edit_distance(got, truth) / max(1, len(truth)), 4),
                         "table_expected": bool(want_table),
                         "table_found": bool(want_table) and any(len(t) == len(want_table) and
                                                                 len(t[0]) == len(want_table[0]) for t in tables),
                         "tables": [[len(t), len(t[0]) if t else 0] for t in tables],
                         "confidence": r.report.ocr_pages[0]["confidence"] if r.report.ocr_pages else None,
                         "seconds": round(secs, 2)})
            print(json.dumps(rows[-1]), flush=True)
    summary: dict = {}
    for lang in ("en", "zh"):
        for dpi in (300, 150):
            sel = [x for x in rows if x["lang"] == lang and x["dpi"] == dpi]
            summary[f"{lang}@{dpi}"] = {"cer_mean": round(statistics.fmean(x["cer"] for x in sel), 4),
                                        "cer_max": max(x["cer"] for x in sel),
                                        "tables_found": sum(x["table_found"] for x in sel),
                                        "tables_expected": sum(x["table_expected"] for x in sel)}
    summary["speed"] = speed(a.set, a.repeat)
    a.out.write_text(json.dumps({"summary": summary, "pages": rows}, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=1))


def speed(folder: Path, repeat: int) -> dict:
    """Seconds a page for one 8-page 300 dpi scan, ocr_workers 1 and 2 alternating."""
    from PIL import Image

    frames = [Image.open(folder / f"{p['id']}-300.png").convert("L") for p in PAGES]
    buf = io.BytesIO()
    frames[0].save(buf, "PDF", save_all=True, append_images=frames[1:], resolution=300)
    data, times = buf.getvalue(), {1: [], 2: []}
    for _ in range(repeat):
        for workers in (1, 2):
            t0 = time.perf_counter()
            parse(folder / "all-pages.pdf", data, ocr_workers=workers)
            times[workers].append((time.perf_counter() - t0) / len(frames))
    out = {f"workers_{w}": {"s_per_page_median": round(statistics.median(t), 2), "runs": [round(x, 2) for x in t]}
           for w, t in times.items()}
    out["speedup"] = round(out["workers_1"]["s_per_page_median"] / out["workers_2"]["s_per_page_median"], 2)
    return out


if __name__ == "__main__":
    main()
