"""The parse layer's fixes (issue 51): which re-parse of the document ``diagnose --apply`` tries, chosen from what the
parse probe found (debugger/source.py). Each is a parse setting written on a copy of the knowledge base, the
document re-parsed there, the question re-asked; ``--keep`` writes the setting to the knowledge base's settings:

- the answer is in one of an HTML page's navigation, header, footer or sidebar blocks, which the parser drops as
  boilerplate (or the page lost it to main-content extraction) → ``keep_boilerplate`` for that page;
- pages of the document were read by OCR (a scan, a picture) → ``ocr_dpi``: the page rendered at a higher resolution
  (300 dpi, then 400) and read again;
- the parser joined a compound split by a line-break hyphen → ``keep_hyphens`` for that compound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragclinic.debugger.base import Fix, locate_any
from ragclinic.ingest.parse.html import boilerplate_blocks, keeps_boilerplate

HTML = (".html", ".htm")
OCR_DPIS = (300, 400)  # Tesseract reads best at 300 dpi and more; 400 is the most pdf_ocr renders a scan at


@dataclass(frozen=True)
class ParseEvidence:
    """What the parse probe learnt of one document that lost the expected answer."""

    path: str
    block: str = ""  # the HTML boilerplate block that states the answer (``<nav>``, ``<div class="sidebar">``)
    ocr: bool = False  # pages of it were read by OCR
    compound: str = ""  # the hyphenated compound the parser joined ("cash-flow")

    @property
    def html(self) -> bool:
        return Path(self.path).suffix.lower() in HTML


def parse_fixes(ev: ParseEvidence, settings) -> tuple[Fix, ...]:
    """The re-parses worth trying for ``ev``, the one its evidence points at first; () when none can help (a
    setting already at its value, a format no parse setting changes)."""
    fixes = []
    if ev.compound and ev.compound not in settings.keep_hyphens:
        fixes.append(Fix(f"keep the hyphen in {ev.compound!r} (keep_hyphens) and re-parse {ev.path}",
                         settings={"keep_hyphens": sorted({*settings.keep_hyphens, ev.compound})}, reparse=(ev.path,)))
    if ev.html and not keeps_boilerplate(ev.path, settings.keep_boilerplate):
        where = f"its {ev.block} block" if ev.block else "its navigation, header, footer and sidebars"
        fixes.append(Fix(f"re-parse {ev.path} keeping {where} (keep_boilerplate)",
                         settings={"keep_boilerplate": [*settings.keep_boilerplate, ev.path]}, reparse=(ev.path,)))
    if ev.ocr:
        for dpi in (d for d in OCR_DPIS if d > settings.ocr_dpi):
            fixes.append(Fix(f"read the scanned pages of {ev.path} by OCR again at {dpi} dpi (ocr_dpi)",
                             settings={"ocr_dpi": dpi}, reparse=(ev.path,)))
    return tuple(fixes)


def boilerplate_block(path: str, answers: list[str]) -> str:
    """The HTML boilerplate block of the page at ``path`` that states one of ``answers`` (``<nav>``), "" when none
    does or the file cannot be read."""
    if Path(path).suffix.lower() not in HTML:
        return ""
    try:
        blocks = boilerplate_blocks(Path(path).read_bytes())
    except Exception:  # noqa: BLE001 - an unreadable page has no block to name; the fix is still tried
        return ""
    return next((tag for tag, text in blocks if locate_any(answers, text)), "")
