from __future__ import annotations

from pathlib import Path

import pytest

from ragclinic.config import Settings
from ragclinic.errors import UnsupportedFileType
from ragclinic.ingest.parse import PARSERS, SUPPORTED_SUFFIXES, Parser, parse_source, parser_for, supported_suffixes

from .helpers import source_of


@pytest.mark.parametrize("name, parser", [
    ("a.pdf", "pdf"), ("b.PDF", "pdf"), ("c.docx", "docx"), ("d.html", "html"), ("e.htm", "html"),
    ("f.md", "markdown"), ("g.markdown", "markdown"), ("h.txt", "text"), ("i.text", "text"),
    ("j.jsonl", "jsonl")])
def test_parser_for_suffix(name, parser):
    found = parser_for(Path(name))
    assert found.name == parser and isinstance(found, Parser)


def test_unknown_suffix_names_it_and_lists_supported():
    with pytest.raises(UnsupportedFileType) as err:
        parser_for(Path("slides.pptx"))
    assert ".pptx" in err.value.reason and ".pdf" in err.value.reason and ".jsonl" in err.value.reason


def test_legacy_doc_says_convert():
    with pytest.raises(UnsupportedFileType, match="convert it to .docx"):
        parser_for(Path("old.doc"))


def test_supported_suffixes():
    assert set(SUPPORTED_SUFFIXES) == {".pdf", ".docx", ".html", ".htm", ".md", ".markdown", ".txt",
                                       ".text", ".jsonl", ".csv", ".tsv", ".xlsx", ".xlsm", ".png", ".jpg", ".jpeg",
                                       ".tif", ".tiff"}


def test_a_plugin_registers_like_the_built_ins(tmp_path, monkeypatch):
    monkeypatch.setattr(PARSERS, "_factories", dict(PARSERS._factories))  # undone after the test

    class RstParser:
        name = "rst-test"
        suffixes = (".rst",)

        def parse(self, source, settings):
            return iter(())

    PARSERS.register("rst-test", RstParser)
    assert parser_for(Path("x.rst")).name == "rst-test" and ".rst" in supported_suffixes()
    path = tmp_path / "x.rst"
    path.write_text("Title\n=====\n")
    assert list(parse_source(source_of(path), Settings())) == []
