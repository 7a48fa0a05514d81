"""Program output printed in a manual: what a command answered, what a build or a server logged.

Manuals print examples of one run on one machine: "$ createuser --interactive joe" followed by the questions it
asks, "FATAL:  password authentication failed for user "andym"", "checking for gcc... yes". Such lines are data,
not the manual's own statements, and not addressed to anyone: an answer read off them is flagged
(pipeline/generate/printed_output.py), and the learned instruction detector does not read them (a log line
naming a "user" is not an instruction; text/injection.py — the rules still do).

Output is, in a fenced block, the lines after a prompt line ("$ ", "# ", "=> ", "postgres=#", ">>> ") that are
not prompts themselves, and in a fenced block without a prompt, and outside fences, the lines that look like a
log (a timestamp, "LOG:", "ERROR:", "FATAL:", "HINT:", "make[1]:", "checking for …", "gcc -c …").
"""

from __future__ import annotations

import re

_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_PROMPT = re.compile(r"^\s*(?:\$|#|%|>>>|=>|-[>#]|\w[\w-]*[=#]>?|\w+@[\w.-]+[:~\w/]*[$#]|C:\\[^>]*>)\s")
_LOG = re.compile(r"^\s*(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[\s*\d+\.\d+\]|(?:LOG|ERROR|WARNING|FATAL|PANIC|DEBUG|INFO|"
                  r"NOTICE|DETAIL|HINT|STATEMENT|CONTEXT):\s|g?make(?:\[\d+\])?:|checking (?:for|whether|if) |"
                  r"(?:gcc|cc|clang|g\+\+|ld|ar)\s+-|configure:|In file included from|\S+\.[ch]:\d+:)")
_LINE = re.compile(r"[^\n]+")


def output_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` that is printed program output, in order."""
    spans: list[tuple[int, int]] = []
    fenced: list[tuple[int, int]] = []
    for m in _FENCED.finditer(text):
        fenced.append((m.start(), m.end()))
        lines = [x for x in _LINE.finditer(text, m.start(2), m.end(2)) if x.group().strip()]
        if any(_PROMPT.match(x.group()) for x in lines):
            after_prompt = False
            for x in lines:
                if _PROMPT.match(x.group()):
                    after_prompt = True
                elif after_prompt:
                    spans.append(x.span())
        else:
            spans += [x.span() for x in lines if _LOG.match(x.group())]
    for x in _LINE.finditer(text):  # log lines printed outside a fence (an HTML <pre> read as a paragraph)
        if _LOG.match(x.group()) and not any(a <= x.start() < b for a, b in fenced):
            spans.append(x.span())
    return sorted(spans)


def output_lines(text: str) -> list[str]:
    """The lines of ``text`` that are printed program output."""
    return [text[a:b] for a, b in output_spans(text)]


def within_output(spans: list[tuple[int, int]], start: int, end: int, text: str) -> bool:
    """Whether ``text[start:end]`` (a sentence) lies in printed output lines, its edge whitespace aside."""
    seg = text[start:end]
    s, e = start + len(seg) - len(seg.lstrip()), end - (len(seg) - len(seg.rstrip()))
    if s >= e:
        return False
    pos = s
    for a, b in spans:
        if b <= pos:
            continue
        if a > pos and text[pos:a].strip():
            return False
        pos = max(pos, b)
        if pos >= e:
            return True
    return False
