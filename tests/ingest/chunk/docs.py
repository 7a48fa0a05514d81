"""Builds ParsedDocuments directly (no parse layer), recording where every sentence, heading and
table row ends, so tests can check chunk boundaries against what was written rather than against
the splitter under test."""

from __future__ import annotations

from ragclinic.config import Settings
from ragclinic.types import Page, ParsedDocument, Section, Table

SMALL = dict(chunk_max_tokens=40, chunk_min_tokens=5, overlap_min_tokens=4, overlap_max_tokens=12)


def small_settings(**overrides) -> Settings:
    return Settings(**{**SMALL, **overrides})


class DocBuilder:
    def __init__(self) -> None:
        self.text = ""
        self.sections: list[Section] = []
        self.tables: list[Table] = []
        self.ends: set[int] = set()  # sentence, heading and table-row ends (no trailing whitespace)
        self.starts: set[int] = set()  # sentence, heading and table-row starts
        self.paragraphs: list[tuple[int, int]] = []
        self._open: list[tuple[int, tuple[str, ...], int]] = []  # (level, path, start)

    def heading(self, level: int, title: str) -> "DocBuilder":
        self._close(level, len(self.text))
        parent = self._open[-1][1] if self._open else ()
        self._open.append((level, (*parent, title), len(self.text)))
        self._piece("#" * level + " " + title)
        self.text += "\n\n"
        return self

    def para(self, *sentences: str, joiner: str = " ") -> "DocBuilder":
        start = len(self.text)
        for i, s in enumerate(sentences):
            if i:
                self.text += joiner
            self._piece(s)
        self.paragraphs.append((start, len(self.text)))
        self.text += "\n\n"
        return self

    def table(self, rows: list[list[str]]) -> "DocBuilder":
        start = len(self.text)
        for row in rows:
            self._piece("| " + " | ".join(row) + " |")
            self.text += "\n"
        self.tables.append(Table(rows=tuple(tuple(r) for r in rows), start=start, end=len(self.text)))
        self.text += "\n"
        return self

    def build(self, doc_id: str = "doc-1", path: str = "/data/doc.md", pages: int = 0) -> ParsedDocument:
        self._close(0, len(self.text))
        n = len(self.text)
        step = -(-n // pages) if pages else 0
        page_list = tuple(Page(i + 1, i * step, min(n, (i + 1) * step)) for i in range(pages))
        return ParsedDocument(doc_id=doc_id, path=path, record_key="", title="t", text=self.text,
                              sections=tuple(sorted(self.sections, key=lambda s: s.start)),
                              tables=tuple(self.tables), pages=page_list)

    def _piece(self, s: str) -> None:
        self.starts.add(len(self.text))
        self.text += s
        self.ends.add(len(self.text))

    def _close(self, level: int, at: int) -> None:
        while self._open and self._open[-1][0] >= level:
            lvl, path, start = self._open.pop()
            self.sections.append(Section(path=path, level=lvl, start=start, end=at))


def words(n: int, first: str = "Alpha", last: str = ".") -> str:
    vocab = ["river", "stone", "lamp", "cloud", "table", "green", "quiet", "music", "paper", "bread"]
    return " ".join([first] + [vocab[i % len(vocab)] for i in range(n - 1)]) + last
