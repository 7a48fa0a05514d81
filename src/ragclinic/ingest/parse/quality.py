"""ParseReport computation: how much of a document survived parsing, and how clean it is.

Keyword retention compares the parsed text against a *raw* extraction that does none of the
parser's work (no layout analysis, no table handling, no dehyphenation): the document's most
frequent non-stopword tokens in the raw text should still be in the parsed text. A parser that
drops a column, a table, or the hyphen of "risk-free" loses some of them, and the report names
which. Garbling is measured by U+FFFD replacement characters and mojibake sequences (UTF-8 read
as cp1252/Latin-1, GBK read as Latin-1, UTF-8 read as GBK).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragclinic.config import Settings
from ragclinic.ingest.parse.hidden import Hidden, summary
from ragclinic.text.analyzer import jieba_handle
from ragclinic.text.injection import find_instructions, paragraph_number
from ragclinic.types import ParsedDocument, ParseReport

_ALNUM = r"[0-9A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]"  # Latin, Greek, Cyrillic
_LATIN_WORD = re.compile(rf"{_ALNUM}+(?:['\u2019-]{_ALNUM}+)*")
# A word broken across lines ("retrie-\nval"): the raw text cannot say whether it should be joined,
# so neither fragment counts as a keyword.
# Starts only at a word start (look-behind): otherwise quadratic on long runs of letters.
_LINE_BREAK_WORD = re.compile(r"(?<![^\W_])[^\W_]+[-\u00ad\u2010][ \t]*\r?\n[ \t]*[^\W_]+")
# URLs are addresses, not text: a Markdown source keeps them, its parsed text does not.
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+|\]\([^)\s]*\)")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_MOJIBAKE = re.compile(
    # UTF-8 read as cp1252/Latin-1: "Ã©" (é), "Ã¤" (ä), "Â " (nbsp), "â€™" (’), "â€œ" (“)
    r"[\u00c2\u00c3][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    r"\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
    r"|\u00e2\u20ac[\u0080-\u00bf\u0153\u0161\u017e\u201c\u201d\u2018\u2019\u2122\u00a2\u00a6\u02dc]?"
    # GBK read as Latin-1: runs of Latin-1 letters, e.g. "ÖÐÎÄ" for 中文; real European text
    # almost never has four accented letters in a row.
    r"|[\u00c0-\u00ff]{4,}"
    # UTF-8 replacement characters re-encoded and read as GBK: the notorious "锟斤拷".
    r"|(?:锟斤拷)+")
_STOP_EN = frozenset("""
the and for are but not you all any can had her was one our out has him his how its may new now
old see two who did get let put say she too use that with have this will your from they know want
been good much some time very when come here just like long make many more only over such take
than them well were what into then also each which their there these those would could should
about after again other being between both during does doing down further once same own under
until while whom why where because before above below through off most nor few very yes
its it's isn't don't can't won't we're they're you're i'm per via upon within without among
however therefore thus hence et al fig table page
""".split())
_STOP_ZH = frozenset("""
我们 你们 他们 她们 它们 一个 一些 这个 那个 这些 那些 没有 因为 所以 可以 以及 进行 如果 但是 而且
或者 就是 还是 什么 这样 那样 已经 可能 自己 通过 对于 由于 其中 之后 之前 以后 以前 不是 这种 那种
""".split())


@dataclass(frozen=True)
class Retention:
    keywords: tuple[str, ...]
    retention: float | None
    lost: tuple[str, ...]


def tokens(text: str) -> list[str]:
    """Lowercased word tokens: Latin-script words (hyphenated compounds kept whole), and jieba
    words for Chinese runs. Stopwords, short tokens and URLs are dropped."""
    text = _URL.sub(" ", text)
    out = [w for w in (m.lower() for m in _LATIN_WORD.findall(text))
           if len(w) >= 3 and w not in _STOP_EN and not w.replace("-", "").isdigit()]
    runs = _CJK_RUN.findall(text)
    if runs:
        jieba = jieba_handle()  # loaded only for Chinese text: its dictionary takes a second to load
        for run in runs:
            out += [w for w in jieba.lcut(run) if len(w) >= 2 and w not in _STOP_ZH]
    return out


def distinctive_keywords(text: str, top_n: int) -> tuple[str, ...]:
    """The ``top_n`` most frequent tokens. Ties go to tokens seen in longer lines, then to the
    first seen: a word from a paragraph says more about a document than a word from a menu."""
    counts: Counter[str] = Counter()
    line_len: dict[str, int] = {}
    for line in text.splitlines():
        for tok in tokens(line):
            counts[tok] += 1
            line_len[tok] = max(line_len.get(tok, 0), len(line))
    order = {tok: i for i, tok in enumerate(counts)}
    ranked = sorted(counts, key=lambda t: (-counts[t], -line_len[t], order[t]))
    return tuple(ranked[:top_n])


def keyword_retention(raw: str, parsed: str, top_n: int, ignore: frozenset[str] = frozenset()) -> Retention:
    """Share of the raw text's distinctive keywords still present in the parsed text (``ignore``: words of
    text left out on purpose, such as hidden text)."""
    if raw == parsed:  # nothing can be lost; skip tokenizing (JSONL, plain text: thousands of records)
        return Retention((), 1.0 if _has_token(raw) else None, ())
    keywords = tuple(k for k in distinctive_keywords(_LINE_BREAK_WORD.sub(" ", raw), top_n + len(ignore))
                     if k not in ignore)[:top_n]
    if not keywords:
        return Retention((), None, ())
    present = set(tokens(parsed))
    # CJK keywords are checked as substrings: jieba may segment the same run differently in a new context.
    lost = tuple(k for k in keywords if k not in present and not (_CJK_RUN.match(k) and k in parsed))
    return Retention(keywords, 1 - len(lost) / len(keywords), lost)


def _has_token(text: str) -> bool:
    if any(m.group().lower() not in _STOP_EN and len(m.group()) >= 3 for m in _LATIN_WORD.finditer(text)):
        return True
    return any(len(run) >= 2 for run in _CJK_RUN.findall(text))


def garbling(text: str) -> tuple[int, int, int]:
    """(replacement characters, mojibake hits, characters inside mojibake hits)."""
    if text.isascii():
        return 0, 0, 0
    hits = _MOJIBAKE.findall(text)
    return text.count("\ufffd"), len(hits), sum(len(h) for h in hits)


def build_report(doc: ParsedDocument, settings: Settings, *, raw_text: str, hyphen_joins: int = 0,
                 hyphens_kept: int = 0, warnings: tuple[str, ...] = (), hidden: tuple[Hidden, ...] = (),
                 ocr_pages: tuple[dict, ...] = ()) -> ParseReport:
    """The ParseReport of one parsed document, given the raw extraction it is checked against."""
    name = f"{doc.path}#{doc.record_key}" if doc.record_key else doc.path
    text = doc.text
    empty = tuple(p.number for p in doc.pages if not text[p.start:p.end].strip())
    replacement, moji_hits, moji_chars = garbling(text)
    garbled = (replacement + moji_chars) / len(text) if text else None
    left_out = frozenset(tokens(" ".join(h.text for h in hidden if not h.indexed))) if hidden else frozenset()
    ret = keyword_retention(raw_text, text, settings.keyword_top_n, left_out)
    notes = list(warnings)
    notes += [f"{name} page {n}: page has no text" + ("" if settings.ocr else " (a scan? set ocr to read it)")
              for n in empty]
    if not text.strip() and not doc.pages:
        notes.append(f"{name}: no text extracted")
    if garbled is not None and garbled > settings.garbled_warn:
        notes.append(f"{name}: {garbled:.1%} of characters look garbled ({replacement} U+FFFD, "
                     f"{moji_hits} mojibake sequences); the file was probably decoded with the wrong "
                     f"encoding (garbled_warn={settings.garbled_warn})")
    if ret.retention is not None and ret.retention < settings.keyword_retention_warn:
        notes.append(f"{name}: only {ret.retention:.0%} of the {len(ret.keywords)} most frequent raw-text "
                     f"keywords survived parsing (lost: {', '.join(ret.lost[:5])}); check the parser output "
                     f"(keyword_retention_warn={settings.keyword_retention_warn})")
    spans = find_instructions(text)
    notes += _instruction_notes(name, text, spans, hidden)
    if doc.tables:
        notes.append(f"{name}: {len(doc.tables)} table(s) found, kept as Markdown in the text")
    if hyphen_joins:
        notes.append(f"{name}: joined {hyphen_joins} word(s) hyphenated across a line break "
                     f"(kept {hyphens_kept} compound hyphen(s))")
    return ParseReport(
        doc_id=doc.doc_id, path=doc.path, record_key=doc.record_key, parser=doc.parser,
        characters=len(text), pages=len(doc.pages), empty_pages=empty, replacement_chars=replacement,
        mojibake_hits=moji_hits, garbled_ratio=garbled, hyphen_joins=hyphen_joins,
        hyphens_kept=hyphens_kept, tables=len(doc.tables), keyword_retention=ret.retention,
        lost_keywords=ret.lost, warnings=tuple(notes), hidden_chars=sum(len(h.text) for h in hidden),
        instructions=len(spans) + sum(1 for h in hidden if h.instruction and not h.indexed), ocr_pages=ocr_pages)


def _instruction_notes(name: str, text: str, spans: list, hidden: tuple[Hidden, ...]) -> list[str]:
    """Where the planted instructions and the hidden text are — by place and kind, never by content."""
    notes = []
    if spans:
        places = ", ".join(f"paragraph {paragraph_number(text, sp.start)}" for sp in spans[:5])
        more = f" and {len(spans) - 5} more" if len(spans) > 5 else ""
        notes.append(f"{name}: {len(spans)} passage(s) address an AI assistant ({places}{more}): a planted "
                     f"instruction? It stays in the knowledge base and is cut out of every prompt")
    if hidden:
        kept = [h for h in hidden if h.indexed]
        what = "indexed (keep_hidden_text=true)" if kept else "left out of the index (keep_hidden_text=false)"
        planted = sum(1 for h in hidden if h.instruction)
        notes.append(f"{name}: {len(hidden)} piece(s) of text a reader cannot see ({summary(hidden)}; "
                     f"{sum(len(h.text) for h in hidden)} characters) {what}"
                     + (f"; {planted} of them address an AI assistant" if planted else ""))
    return notes
