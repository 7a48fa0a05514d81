"""The scanned test set for OCR (issue 39), built here from text this project wrote (bench/ocr/texts.py).

For each page — English and Chinese; one column, two columns, a table, a page turned 90° — it renders:
- ``PAGE-300.png`` / ``PAGE-150.png``: the page as a scanner would give it (300 and 150 dpi), with noise and a
  slight skew (0.6°);
- ``PAGE-300.jpg``: the same at 300 dpi as JPEG (quality 75);
- ``PAGE-scan-300.pdf`` / ``PAGE-scan-150.pdf``: an image-only PDF of it (no text layer);
- ``PAGE-text.pdf``: the same text with a text layer (reportlab), the comparison for question answering;
- ``PAGE.txt``: the ground truth, in reading order (columns left then right; table rows, cells by " | ").
``questions.jsonl``: questions about the pages in a user's words, with their answers, half ``dev`` and half
``heldout`` (the heldout half is not looked at while the OCR path is built); ``scans/``, ``scans150/`` and ``text/``:
the 300 dpi and 150 dpi image-only PDFs and the text-layer PDFs, one folder each, for ``eval rag --corpus``.

    .venv/bin/python bench/ocr/make_set.py --out bench/out/ocr-set

Fonts: DejaVu Sans (Debian's fonts-dejavu-core) and WenQuanYi Micro Hei (fonts-wqy-microhei) — needed by this
script only, never by the product.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))
from texts import PAGES, QUESTIONS  # noqa: E402

FONTS = {"en": "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "zh": "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"}
A4_MM = (210, 297)
MARGIN_MM = 20
POINT = 11  # body text size


def px(mm: float, dpi: int) -> int:
    return round(mm / 25.4 * dpi)


def wrap(text: str, font, width: int, lang: str) -> list[str]:
    """Lines no wider than ``width`` pixels (words for English, characters for Chinese)."""
    units = list(text) if lang == "zh" else text.split()
    lines, cur = [], ""
    for u in units:
        trial = cur + u if lang == "zh" else (cur + " " + u).strip()
        if font.getlength(trial) > width and cur:
            lines.append(cur)
            cur = u
        else:
            cur = trial
    return lines + ([cur] if cur else [])


def render(page: dict, dpi: int) -> Image.Image:
    """The clean page image (no noise yet)."""
    w, h = px(A4_MM[0], dpi), px(A4_MM[1], dpi)
    img = Image.new("L", (w, h), 255)
    draw = ImageDraw.Draw(img)
    lang = page["lang"]
    size = round(POINT / 72 * dpi)
    font = ImageFont.truetype(FONTS[lang], size)
    title = ImageFont.truetype(FONTS[lang], round(size * 1.5))
    left, top, right = px(MARGIN_MM, dpi), px(MARGIN_MM, dpi), w - px(MARGIN_MM, dpi)
    y = top
    draw.text((left, y), page["title"], font=title, fill=0)
    y += round(size * 2.6)
    line_h = round(size * 1.45)
    if page["layout"] == "table":
        for para in page.get("paragraphs", []):
            for line in wrap(para, font, right - left, lang):
                draw.text((left, y), line, font=font, fill=0)
                y += line_h
            y += line_h // 2
        cols = len(page["table"][0])
        col_w = (right - left) // cols
        for r, row in enumerate(page["table"]):
            for c, cell in enumerate(row):
                draw.text((left + c * col_w + size // 3, y + size // 4), cell, font=font, fill=0)
            draw.line((left, y, right, y), fill=0, width=max(1, dpi // 150))
            y += round(line_h * 1.3)
        draw.line((left, y, right, y), fill=0, width=max(1, dpi // 150))
        for c in range(cols + 1):
            x = left + c * col_w if c < cols else right
            draw.line((x, y - round(line_h * 1.3) * len(page["table"]), x, y), fill=0, width=max(1, dpi // 150))
        return img
    columns = 2 if page["layout"] == "two-columns" else 1
    gap = px(8, dpi)
    col_w = (right - left - gap * (columns - 1)) // columns
    col, y0 = 0, y
    for para in page["paragraphs"]:
        for line in wrap(para, font, col_w, lang):
            if y + line_h > h - top:
                col, y = col + 1, y0
            draw.text((left + col * (col_w + gap), y), line, font=font, fill=0)
            y += line_h
        y += line_h // 2
        if columns == 2 and para is page["paragraphs"][len(page["paragraphs"]) // 2 - 1]:
            col, y = 1, y0  # the second half of the paragraphs in the right column
    return img


def scanned(img: Image.Image, rng: random.Random, rotate: int) -> Image.Image:
    """Noise and a slight skew, as a scanner gives them; ``rotate``: the page fed in turned (degrees)."""
    skewed = img.rotate(0.6, resample=Image.BICUBIC, expand=False, fillcolor=255)
    if rotate:
        skewed = skewed.rotate(rotate, expand=True, fillcolor=255)
    a = np.asarray(skewed, dtype=np.float32)
    noise = np.random.default_rng(rng.randrange(2 ** 32)).normal(0, 18, a.shape)
    speckle = np.random.default_rng(rng.randrange(2 ** 32)).random(a.shape) < 0.0015
    a = np.clip(a + noise, 0, 255)
    a[speckle] = 0
    return Image.fromarray(a.astype(np.uint8), "L")


def text_pdf(page: dict, path: Path) -> None:
    """The same text with a text layer (one column, in reading order)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    lang = page["lang"]
    name = "DejaVu" if lang == "en" else "WQY"
    if name not in pdfmetrics.getRegisteredFontNames():
        pdfmetrics.registerFont(TTFont(name, FONTS[lang], subfontIndex=0) if lang == "zh" else TTFont(name, FONTS[lang]))
    c = canvas.Canvas(str(path), pagesize=A4)
    font = ImageFont.truetype(FONTS[lang], 11)
    y = 800
    c.setFont(name, 16)
    c.drawString(56, y, page["title"])
    y -= 30
    c.setFont(name, 11)
    for line in truth(page).split("\n")[1:]:
        for piece in wrap(line, font, 480, lang) or [""]:
            c.drawString(56, y, piece)
            y -= 15
            if y < 60:
                c.showPage()
                c.setFont(name, 11)
                y = 800
    c.save()


def truth(page: dict) -> str:
    """The page's text in reading order, as OCR should give it."""
    parts = [page["title"], *page.get("paragraphs", [])]
    parts += [" | ".join(row) for row in page.get("table", [])]
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("bench/out/ocr-set"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    a.out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        stem = a.out / page["id"]
        (a.out / f"{page['id']}.txt").write_text(truth(page), encoding="utf-8")
        rotate = 90 if page.get("rotated") else 0
        for dpi in (300, 150):
            img = scanned(render(page, dpi), rng, rotate)
            img.save(f"{stem}-{dpi}.png")
            img.save(f"{stem}-scan-{dpi}.pdf", resolution=dpi)
            if dpi == 300:
                img.save(f"{stem}-300.jpg", quality=75)
        text_pdf(page, Path(f"{stem}-text.pdf"))
    for kind, suffix in (("scans", "-scan-300.pdf"), ("scans150", "-scan-150.pdf"), ("text", "-text.pdf")):
        (a.out / kind).mkdir(exist_ok=True)  # the corpora `eval rag --corpus` asks: scans, and the text-layer twins
        for page in PAGES:
            (a.out / kind / f"{page['id']}.pdf").write_bytes(Path(f"{a.out / page['id']}{suffix}").read_bytes())
    rows = [{"id": f"ocr-{i:02d}", "question": q["question"], "answers": q["answer"], "split": q["split"],
             "page": q["page"]} for i, q in enumerate(QUESTIONS)]
    (a.out / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                           encoding="utf-8")
    print(f"{len(PAGES)} pages, {len(rows)} questions -> {a.out}")


if __name__ == "__main__":
    main()
