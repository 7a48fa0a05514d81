"""Contextual chunk headers: what is embedded and lexically indexed for a chunk.

A chunk cut from the middle of a document often never names its subject ("The effect was larger in
women..."). With ``chunk_context`` on, the indexes see the document title and the chunk's section path
on a first line, unless the chunk already starts with them. The chunk's own text (what is cited, with
its offsets) is unchanged; only the index input differs.

With ``index_plain`` on, the indexes also see the chunk without its Markdown markup: the HTML, DOCX and PDF parsers
write tables as "| a | b |" rows under a "|---|---|" rule, code in fences and backquotes, and markdownify escapes
("\\#"). The e5 embedding of a table-heavy manual chunk is mostly that markup: on the Chinese Debian Reference
dev questions, dense Recall@5 of the answering chunk went from 0.26 with the markup to 0.43 without it
(bench/RESULTS.md, issue 35).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_RULE = re.compile(r"^(?=[^\n]*---)[ \t|:+-]+$", re.M)  # a table's "|---|:--|" rule or a "---" line
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")  # markdownify's backslash escapes
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w+-]*[ \t]*$", re.M)
_PIPES = re.compile(r"[ \t]*\|[ \t]*")
_MARKS = re.compile(r"`+|\*\*+|(?<![\w*])\*(?=\w)|(?<=\w)\*(?![\w*])")  # backquotes, emphasis: no space left (中文)
_HEADING = re.compile(r"^#{1,6}\s+", re.M)
_SPACES = re.compile(r"[ \t]{2,}")


def plain(text: str) -> str:
    """``text`` without Markdown markup, its words and line breaks kept ("| `ls -l` | 列出 |" → "ls -l 列出")."""
    text = _FENCE.sub("", _RULE.sub("", text))
    text = _HEADING.sub("", _ESCAPE.sub(r"\1", text))
    text = _MARKS.sub("", _PIPES.sub(" ", text))
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.splitlines() if line.strip())


def index_text(text: str, title: str, section: Sequence[str], enabled: bool = True, keep_markup: bool = True) -> str:
    """What the indexes see for a chunk: with ``enabled``, its title and section path first (unless the chunk
    starts with them); without ``keep_markup``, its Markdown markup taken out (plain())."""
    if not keep_markup:
        text = plain(text)
    if not enabled:
        return text
    head = text[:300]
    parts: list[str] = []
    for part in [title, *section]:
        part = " ".join(part.split())
        if part and part not in head and part not in parts:
            parts.append(part)
    return (" › ".join(parts) + "\n" + text) if parts else text
