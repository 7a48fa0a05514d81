"""HTML: trafilatura main-content extraction, then the Markdown parser for structure.

1. The page is parsed once with lxml; ``<title>`` is the title. trafilatura's guessed metadata
   (dates, authors) is not used: a wrong date is worse than none.
2. Boilerplate the markup itself declares is removed first: <nav>, <aside>, forms, buttons,
   page-level <header>/<footer>, and containers whose class or id says cookie/consent/gdpr/sidebar/
   breadcrumb/newsletter. On short pages trafilatura cannot tell a cookie banner from a
   one-paragraph article by text statistics alone; the markup can.
3. trafilatura extracts the main content as Markdown (headings and tables kept), and
   ``markdown_blocks`` turns it into sections and tables. When it finds no main content, the
   full visible text is used and the report says so.
4. Manuals built by documentation generators (DocBook, Sphinx, Asciidoctor: the PostgreSQL manual, Debian
   Reference) wrap each heading in nested ``<div>``s, and trafilatura drops every such heading, leaving the
   page without sections (and <pre> blocks without fences, so a ``# command`` line read as a heading). When the
   page has two or more headings and trafilatura's Markdown (not empty) kept none of them — a blog or news page
   whose article headings it kept keeps its clean extraction — the page without its declared boilerplate
   (navigation bars and tables of contents included) is converted whole by markdownify: headings, fenced code
   blocks and tables as the markup has them (issue 35).
5. A page the ``keep_boilerplate`` setting names (a glob of its path or name) keeps its navigation, header, footer
   and sidebars: step 2 is skipped and the page is converted whole by markdownify (trafilatura would drop them
   again). For a page whose only statement of a fact is in such a block; ``diagnose --apply`` tries it (issue 51).

The keyword-retention baseline is the visible text after step 2, so the warning fires when
trafilatura drops real content (a section, a table), not on every page that had a menu.
Text a reader cannot see (``display:none``, white on white, …; ``parse/hidden.py``) is removed before all of
this and named in the report.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.base import Block, DocInfo, assemble, make_parsed
from ragclinic.ingest.parse.encoding import decode_bytes
from ragclinic.ingest.parse.hidden import html_hidden
from ragclinic.ingest.parse.markdown import markdown_blocks
from ragclinic.types import Parsed, RecordError, SourceFile

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_INVISIBLE = ("script", "style", "noscript", "template", "svg", "head")
_BOILERPLATE_TAGS = ("nav", "aside", "form", "button", "header", "footer")
# Not "menu" or "banner": restaurant menus and hero banners are content on some sites.
# Whole class/id tokens, not substrings: "consent-procedures" (a medical section) and "no-sidebar"
# (a layout wrapper) are content.
_BOILERPLATE_NAMES = re.compile(
    r"(?i)^(?:(?:cookies?|gdpr)(?:[-_]\w+)*"
    r"|consent[-_](?:banner|bar|notice|dialog|popup|modal|manager|box)"
    r"|(?:sidebar|side[-_]bar|breadcrumbs?|newsletter)(?:[-_](?:left|right|wrapper|container|widget|signup|form|box))?"
    r"|toc|navheader|navfooter)$")  # a generated manual's table of contents and its page-to-page links
_BLOCK_TAGS = ("br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "section")


class HtmlParser:
    name = "html"
    suffixes = (".html", ".htm")

    def parse(self, source: SourceFile, settings: Settings) -> Iterator[Parsed | RecordError]:
        m = _META_CHARSET.search(source.data[:4096])
        decoded = decode_bytes(source.data, declared=m.group(1).decode("ascii") if m else None)
        root = _parse(decoded.text)
        title_el = root.find(".//title") if root is not None else None
        title = " ".join(title_el.text_content().split()) if title_el is not None else ""
        hidden = html_hidden(root, keep=settings.keep_hidden_text) if root is not None else []
        keep = keeps_boilerplate(source.path, settings.keep_boilerplate)
        article, visible, baseline = _extract(root, keep) if root is not None else ("", "", "")
        warnings: tuple[str, ...] = ()
        if article:
            blocks = markdown_blocks(article)
        else:
            blocks = [Block("text", visible)]
            warnings = (f"{source.path}: no main content found; used the full visible text of the page "
                        f"(navigation and footer text may be included)",)
        info = DocInfo(self.name, raw_text=baseline, title=title, warnings=warnings, hidden=tuple(hidden),
                       metadata={"encoding": decoded.encoding, "main_content": bool(article),
                                 **({"boilerplate_kept": True} if keep else {})})
        yield make_parsed(source, settings, assemble(blocks, keep_hyphens=settings.keep_hyphens), info)


def boilerplate_blocks(data: bytes) -> list[tuple[str, str]]:
    """The blocks step 2 removes as boilerplate (the outermost ones): (the block as its start tag says it, e.g.
    ``<nav>`` or ``<div class="sidebar">``, its visible text). For the debugger: a fact only one of them states is
    lost in parsing, and ``keep_boilerplate`` brings it back."""
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    m = _META_CHARSET.search(data[:4096])
    root = _parse(decode_bytes(data, declared=m.group(1).decode("ascii") if m else None).text)
    if root is None:
        return []
    _drop(root.iter(*_INVISIBLE))
    out = []
    for el in root.iter(etree.Element):
        if _is_boilerplate(el) and not any(_is_boilerplate(a) for a in el.iterancestors()):
            named = [f'{k}="{el.get(k)}"' for k in ("class", "id") if el.get(k) and el.tag not in _BOILERPLATE_TAGS]
            out.append((f"<{' '.join([el.tag, *named])}>", " ".join(el.text_content().split())))
    return out


def _parse(html: str):
    import lxml.html  # on use: lxml, needed only for HTML/XML documents
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    html = _XML_DECL.sub("", html, count=1)  # lxml refuses str input with an encoding declaration
    # lxml reads control characters but refuses to write them back into a tree (found by fuzzing)
    html = _CONTROL.sub(" ", html)
    if not html.strip():
        return None
    try:
        return lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as e:
        raise ParseError(f"not a valid HTML document: {e}") from None


def keeps_boilerplate(path: Path | str, patterns: list[str]) -> bool:
    """Whether the ``keep_boilerplate`` setting names this file: a glob of its path or of its name."""
    path = Path(path)
    return any(fnmatch.fnmatch(str(path), p) or fnmatch.fnmatch(path.name, p) for p in patterns)


def _extract(root, keep_boilerplate: bool = False) -> tuple[str, str, str]:
    """(main content as Markdown, all visible text, visible text without declared boilerplate — with it, when
    ``keep_boilerplate``)."""
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents

    _drop(root.iter(*_INVISIBLE))
    clean = copy.deepcopy(root)
    if not keep_boilerplate:
        _drop(el for el in clean.iter(etree.Element) if _is_boilerplate(el))
    _promote_header_rows(clean)
    if keep_boilerplate:  # the page whole: trafilatura would take the navigation out again
        return _whole_markdown(clean), _lines(root), _lines(clean)
    article = _main_content(copy.deepcopy(clean))  # trafilatura edits the tree it is given
    if article and _lost_headings(clean, article):
        article = _whole_markdown(clean)
    return article, _lines(root), _lines(clean)


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _lost_headings(clean, article: str) -> bool:
    """The page has at least two headings and trafilatura's Markdown kept none of them as a heading (see step 4;
    a ``# command`` line of a code block it left unfenced is no heading of the page). Headings trafilatura drops
    with the boilerplate it finds itself ("Recent posts", "3 comments") are no loss: one kept heading is enough."""
    heads = {_plain(h.text_content()) for h in clean.iter(*_HEADINGS)} - {""}
    kept = {_plain(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?) *#*$", article, re.M)}
    return len(heads) >= 2 and not heads & kept


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`\\]", "", text).split())  # "## The *real* reason" is the heading "The real reason"


def _whole_markdown(clean) -> str:
    """The page (its declared boilerplate already removed) as Markdown: headings, fenced code, tables."""
    from lxml import etree  # on use: lxml, needed only for HTML/XML documents
    from markdownify import markdownify  # on use: markdownify, needed only for generated manuals' pages

    body = clean.find("body")
    body = body if body is not None else clean
    for el in list(body.iter("dl", "dt", "dd")):  # a term, then its definition as paragraphs (markdownify
        if el.tag == "dt":                        # indents a <dd>'s paragraphs: read as code blocks)
            el.tag = "p"
        else:
            el.drop_tag()
    html = etree.tostring(body, encoding="unicode")
    # escape_misc: "<hostname>" in prose and a paragraph starting with "#" stay text (markdown-it unescapes them)
    md = markdownify(html, heading_style="ATX", strip=["a", "img"], escape_misc=True)
    return re.sub(r"\n{3,}", "\n\n", md).strip()


def _promote_header_rows(root) -> None:
    """A table without <th> cells gets its first row as the header: trafilatura writes no Markdown
    header separator for it, and without one the table would be lost as a table."""
    for table in root.iter("table"):
        if next(table.iter("th"), None) is not None:
            continue
        first = next(table.iter("tr"), None)
        if first is not None:
            for cell in first.findall("td"):
                cell.tag = "th"


@functools.cache
def _trafilatura_config():
    from trafilatura.settings import use_config  # on use: trafilatura, needed only for HTML documents

    config = use_config()  # a fresh ConfigParser: changing it affects only our calls
    # Below min_extracted_size (250 chars by default) trafilatura swaps a short but clean article
    # for its last-resort baseline: every text node, menus and cookie banners included.
    config.set("DEFAULT", "min_extracted_size", "1")
    return config


def _main_content(tree) -> str:
    import trafilatura  # on use: trafilatura, needed only for HTML documents

    try:
        out = trafilatura.extract(tree, output_format="markdown", include_tables=True, include_comments=False,
                                  with_metadata=False, config=_trafilatura_config())
    except Exception as e:  # trafilatura raises assorted lxml/value errors on broken markup
        raise ParseError(f"cannot extract HTML content: {type(e).__name__}: {e}") from None
    return (out or "").strip()


def _is_boilerplate(el) -> bool:
    if el.tag in ("html", "body", "main", "article"):
        return False
    if el.tag in ("header", "footer"):  # an article's own header holds its title: keep that one
        return not any(a.tag in ("article", "main") for a in el.iterancestors())
    if el.tag in _BOILERPLATE_TAGS:
        return True
    tokens = f"{el.get('class', '')} {el.get('id', '')}".split()
    if not any(_BOILERPLATE_NAMES.match(t) for t in tokens):
        return False
    return next(el.iter("article", "main"), None) is None  # never a container of the content itself


def _drop(elements) -> None:
    for el in list(elements):
        if el.getparent() is not None:
            el.drop_tree()


def _lines(root) -> str:
    """Visible text, one line per block element."""
    for el in root.iter(*_BLOCK_TAGS):
        el.tail = "\n" + (el.tail or "")
    lines = (" ".join(line.split()) for line in root.text_content().splitlines())
    return "\n".join(line for line in lines if line)
