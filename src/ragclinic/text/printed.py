"""Program output printed in a manual: what a command answered, what a build or a server logged.

Manuals print examples of one run on one machine: "$ createuser --interactive joe" followed by the questions it
asks, "FATAL:  password authentication failed for user "andym"", "checking for gcc... yes". Such lines are data,
not the manual's own statements, and not addressed to anyone: an answer read off them is flagged
(pipeline/generate/printed_output.py), and the learned instruction detector does not read them (a log line
naming a "user" is not an instruction; text/injection.py — the rules still do).

Output is, in a fenced block, the lines after a prompt line ("$ ", "postgres=#", "user@host:~$", ">>> ", "mysql>", "C:\\>";
a "# " line is a comment as often as a root prompt, so it is not one) that are
not prompts themselves, and in a fenced block without a prompt, and (for the answer check) outside fences, the
lines that look like a log (a timestamp, "LOG:", "ERROR:", "FATAL:", "HINT:", "make[1]:", "checking for …",
"gcc -c …"). The instruction detector skips only fenced output: a log-looking line in prose ("INFO: when
summarising this page, …") is read like any sentence. Linear in the text: lines are scanned once, fences by a
line walk (no backtracking regex over the whole text).
"""

from __future__ import annotations

import bisect
import re

_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})[^`\n]*$")
_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t\r]*$")
# a shell, psql, Python, MySQL/SQLite or Windows prompt (a "# " line is a comment as often as a root prompt: not one)
_PROMPT = re.compile(r"[ \t]*(?:(?:PS )?[A-Za-z]:\\[^>\n]*>|(?:\$|>>>|\w[\w.-]*[=-][#>]|(?:mysql|sqlite|mariadb|irb|"
                     r"ftp|sftp)>|\[?[\w.-]+@[\w.-]+(?:[: ][^\s\]]*)?\]?[$#])(?:\s|$))")
_LOG = re.compile(r"[ \t]*(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[\s*\d+\.\d+\]|(?:LOG|ERROR|WARNING|FATAL|PANIC|DEBUG|INFO|"
                  r"NOTICE|DETAIL|HINT|STATEMENT|CONTEXT):\s|g?make(?:\[\d+\])?:|checking (?:for|whether|if) |"
                  r"(?:gcc|cc|clang|g\+\+|ld|ar)\s+-|configure:|In file included from|\S+\.[ch]:\d+:)")
_HEAD = 200  # a prompt or a log mark is at the start of its line: longer lines are matched on their start


def _lines(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def _blocks(text: str, lines: list[tuple[int, int]]) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """Fenced blocks: (first line index, last line index, the lines inside). A fence that never closes is not one:
    a chunk cut inside a code block starts with its closing fence, and what follows is prose to be read. Linear:
    the closing candidates are indexed once, and an opener with none after it is skipped at once."""
    closers: dict[str, list[tuple[int, int]]] = {"`": [], "~": []}  # char → (line index, fence length)
    for idx, (a, b) in enumerate(lines):
        if m := _CLOSE.match(text, a, b):
            closers[m.group(1)[0]].append((idx, len(m.group(1))))
    longest_after = {c: _suffix_max([n for _, n in cs]) for c, cs in closers.items()}
    blocks, i = [], 0
    while i < len(lines):
        m = _OPEN.match(text, *lines[i])
        if not m:
            i += 1
            continue
        char, size = m.group(1)[0], len(m.group(1))
        cs = closers[char]
        k = bisect.bisect_right(cs, (i, 1 << 30))
        if k >= len(cs) or longest_after[char][k] < size:
            i += 1  # never closed
            continue
        while cs[k][1] < size:
            k += 1
        j = cs[k][0]
        blocks.append((i, j, lines[i + 1:j]))
        i = j + 1
    return blocks


def _suffix_max(values: list[int]) -> list[int]:
    out, best = [0] * len(values), 0
    for k in range(len(values) - 1, -1, -1):
        best = max(best, values[k])
        out[k] = best
    return out


def output_spans(text: str, prose_logs: bool = True) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` that is printed program output, in order: in a fenced block, the
    lines after a prompt that are not prompts, or in a block without a prompt its log-like lines; with
    ``prose_logs``, log-like lines outside fences too (an HTML <pre> read as a paragraph)."""
    lines = _lines(text)
    spans: list[tuple[int, int]] = []
    fenced: set[int] = set()

    def starts(pattern: re.Pattern, span: tuple[int, int]) -> bool:
        return pattern.match(text, span[0], min(span[1], span[0] + _HEAD)) is not None

    for first, last, inner in _blocks(text, lines):
        fenced.update(range(first, last + 1))
        inner = [sp for sp in inner if text[sp[0]:sp[1]].strip()]
        if any(starts(_PROMPT, sp) for sp in inner):
            after_prompt = False
            for sp in inner:
                if starts(_PROMPT, sp):
                    after_prompt = True
                elif after_prompt:
                    spans.append(sp)
        else:
            spans += [sp for sp in inner if starts(_LOG, sp)]
    if prose_logs:
        spans += [sp for i, sp in enumerate(lines) if i not in fenced and starts(_LOG, sp)]
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
