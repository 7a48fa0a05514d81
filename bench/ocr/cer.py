"""Character error rate of Tesseract on the scanned test set (issue 39), before the OCR path exists: what the engine
itself reads from each page image — orientation detected first (Tesseract's OSD), then the page read in its
language (eng / chi_sim, page segmentation 3: automatic, columns found) — against the page's ground truth.

    .venv/bin/python bench/ocr/make_set.py --out bench/out/ocr-set
    OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/ocr/cer.py --set bench/out/ocr-set --out bench/out/ocr-cer.json

CER = edit distance / characters of the truth, after folding whitespace (all of it, for Chinese, which is written
without spaces; single spaces for English) and the table's cell separators. Needs tesseract-ocr with eng, chi_sim
and osd (Debian packages; `make install` installs them).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import pytesseract
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from texts import PAGES  # noqa: E402

LANG = {"en": "eng", "zh": "chi_sim"}


def fold(text: str, lang: str) -> str:
    text = text.replace("|", " ")
    return re.sub(r"\s+", "", text) if lang == "zh" else " ".join(text.split())


def edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def upright(img: Image.Image) -> tuple[Image.Image, int]:
    """The page turned upright by Tesseract's orientation detection (0 when it cannot tell)."""
    try:
        osd = pytesseract.image_to_osd(img, config="--psm 0 -c min_characters_to_try=10",
                                       output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError:
        return img, 0
    turn = int(osd.get("rotate", 0))
    return (img.rotate(-turn, expand=True, fillcolor=255) if turn else img), turn


def read(path: Path, lang: str) -> tuple[str, float, int, float]:
    """(text, mean word confidence, rotation applied, seconds)."""
    t0 = time.perf_counter()
    img, turn = upright(Image.open(path).convert("L"))
    data = pytesseract.image_to_data(img, lang=LANG[lang], config="--psm 3",
                                     output_type=pytesseract.Output.DICT)
    confs = [float(c) for c, w in zip(data["conf"], data["text"]) if str(w).strip() and float(c) >= 0]
    text = pytesseract.image_to_string(img, lang=LANG[lang], config="--psm 3")
    return text, (statistics.fmean(confs) if confs else 0.0), turn, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=Path("bench/out/ocr-set"))
    ap.add_argument("--out", type=Path, default=Path("bench/out/ocr-cer.json"))
    a = ap.parse_args()
    rows = []
    for page in PAGES:
        truth = fold((a.set / f"{page['id']}.txt").read_text(encoding="utf-8"), page["lang"])
        for dpi in (300, 150):
            text, conf, turn, secs = read(a.set / f"{page['id']}-{dpi}.png", page["lang"])
            got = fold(text, page["lang"])
            cer = edit_distance(got, truth) / max(1, len(truth))
            rows.append({"page": page["id"], "lang": page["lang"], "layout": page["layout"], "dpi": dpi,
                         "rotated": bool(page.get("rotated")), "turned": turn, "cer": round(cer, 4),
                         "confidence": round(conf, 1), "seconds": round(secs, 2)})
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for lang in ("en", "zh"):
        for dpi in (300, 150):
            sel = [r for r in rows if r["lang"] == lang and r["dpi"] == dpi]
            summary[f"{lang}@{dpi}"] = {"cer_mean": round(statistics.fmean(r["cer"] for r in sel), 4),
                                        "cer_max": max(r["cer"] for r in sel),
                                        "seconds_per_page": round(statistics.median(r["seconds"] for r in sel), 2)}
    a.out.write_text(json.dumps({"summary": summary, "pages": rows}, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
