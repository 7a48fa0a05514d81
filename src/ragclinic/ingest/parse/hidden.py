"""Text the reader of a document cannot see: found by the parsers, kept out of the index, named in the report.

Where it hides, per format:

- HTML (and HTML inside Markdown): the ``hidden`` attribute, ``aria-hidden="true"``, inline styles
  ``display:none`` / ``visibility:hidden`` / ``opacity:0`` / ``font-size`` under 2 px / far off-screen
  positions / white text without a dark background / text the colour of its background, and simple
  ``<style>`` class rules that hide. Comments and image alt text are never indexed; they are reported when
  they address an AI assistant.
- PDF: characters in white (on a page without dark fills under them) or under 2 pt.
- DOCX: runs marked hidden (``w:vanish``), white runs, runs under 2 pt.

A reader sees none of this, a model would read all of it: it is the usual place for a planted instruction.
``keep_hidden_text`` (a setting) indexes it anyway; planted instructions in it are still cut out of every prompt.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ragclinic.text.injection import looks_like_instruction

_STYLE_HIDES = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(?:\.0+)?\s*(?:;|$)"
    r"|font-size\s*:\s*(?:0|[01](?:\.\d+)?)(?:px|pt)?\s*(?:;|$)|font-size\s*:\s*0(?:\.\d+)?(?:em|rem|%)"
    r"|(?:left|top|text-indent|margin-left)\s*:\s*-\d{4,}(?:px)?", re.I)
_WHITE = r"(?:#fff(?:fff)?\b|white\b|rgba?\(\s*255\s*,\s*255\s*,\s*255\s*(?:,\s*1(?:\.0*)?\s*)?\))"
_COLOR = re.compile(r"(?:^|;|\s)color\s*:\s*([^;]+)", re.I)
_BACKGROUND = re.compile(r"background(?:-color)?\s*:\s*([^;]+)", re.I)
_CLASS_RULE = re.compile(r"\.([\w-]+)\s*\{([^}]*)\}")


@dataclass(frozen=True)
class Hidden:
    how: str  # "display:none", "HTML comment", "white text", "1-pt text", "hidden run", "alt text", ...
    text: str
    indexed: bool = False  # True for keep_hidden_text, never for comments and alt text

    @property
    def instruction(self) -> bool:
        return looks_like_instruction(self.text)


def summary(hidden: Iterable[Hidden]) -> str:
    """'display:none ×2, white text ×1' — how, not what: the report never repeats a hidden payload."""
    counts = Counter(h.how for h in hidden)
    return ", ".join(f"{how} ×{n}" for how, n in counts.most_common())


def _is_white(value: str) -> bool:
    return re.fullmatch(r"\s*" + _WHITE + r"\s*(?:!important)?\s*", value, re.I) is not None


def _norm(value: str) -> str:
    return "".join(value.lower().replace("!important", "").split())


def style_hides(style: str, inherited_background: str = "") -> str:
    """The reason an inline style hides its text ('display:none', 'white text', …), or ''."""
    if not style:
        return ""
    if m := _STYLE_HIDES.search(style):
        return re.sub(r"\s+", "", m.group(0).split(":")[0]).lower() + ":" + _norm(m.group(0).split(":", 1)[1]).rstrip(";")
    color = _COLOR.search(style)
    if color is None:
        return ""
    background = _BACKGROUND.search(style)
    bg = background.group(1) if background else inherited_background
    if bg and _norm(bg) == _norm(color.group(1)):
        return "text coloured like its background"
    if _is_white(color.group(1)) and (not bg or _is_white(bg)):
        return "white text"
    return ""


def html_hidden(root, keep: bool = False) -> list[Hidden]:
    """Find (and unless ``keep`` remove) the hidden text of an lxml tree; comments and alt text that address a
    model are reported too (they are never indexed)."""
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    classes = _hiding_classes(root)
    found: list[Hidden] = []
    for comment in list(root.iter(etree.Comment)):
        if comment.text and looks_like_instruction(comment.text):
            found.append(Hidden("HTML comment", comment.text))
    for img in root.iter("img"):
        if (alt := img.get("alt")) and looks_like_instruction(alt):
            found.append(Hidden("alt text", alt))
    for el in list(root.iter(etree.Element)):
        if el.getparent() is None and el is not root:
            continue  # inside an element already dropped
        how = _element_hides(el, classes)
        if not how or any(_element_hides(a, classes) for a in el.iterancestors()):
            continue
        text = " ".join(el.text_content().split())
        if text:
            found.append(Hidden(how, text, indexed=keep))
        if keep:  # unhide it, or the main-content extraction drops it on its own
            for attr in ("hidden", "aria-hidden", "style", "class"):
                el.attrib.pop(attr, None)
        elif el.getparent() is not None:
            el.drop_tree()
    return found


def _element_hides(el, classes: dict[str, str]) -> str:
    if not isinstance(el.tag, str):
        return ""
    if el.get("hidden") is not None:
        return "hidden attribute"
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return "aria-hidden"
    for cls in (el.get("class") or "").split():
        if cls in classes:
            return classes[cls]
    style = el.get("style") or ""
    if not style:
        return ""
    return style_hides(style, _inherited_background(el))


def _inherited_background(el) -> str:
    for a in el.iterancestors():
        if isinstance(a.tag, str) and (m := _BACKGROUND.search(a.get("style") or "")):
            return m.group(1)
    return ""


def _hiding_classes(root) -> dict[str, str]:
    out: dict[str, str] = {}
    for style in root.iter("style"):
        for name, body in _CLASS_RULE.findall(style.text or ""):
            if how := style_hides(body):
                out[name] = how
    return out
