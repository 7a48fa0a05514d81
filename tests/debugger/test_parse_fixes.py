"""The parse layer's fixes (issue 51): the re-parse chosen from the parse probe's evidence, and, end to end, an answer
stated only in an HTML page's <nav> block — localised to parse, fixed by `diagnose --apply` re-parsing the page with
its navigation kept on a copy, and kept."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from helpers import BOND_DOCS, build_kb
from ragclinic import Clinic
from ragclinic.cli.main import app
from ragclinic.config import Settings
from ragclinic.config.settings import read_settings_file
from ragclinic.debugger.parse_fixes import ParseEvidence, boilerplate_block, parse_fixes

CONTACT = """<html><head><title>Contact us</title></head><body>
<nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="tel:0800123456">Support hotline 0800 123 456</a></nav>
<article><h1>Contact us</h1><p>Our support team answers questions about orders, deliveries and returns. Write to us
with your order number and we reply within two working days.</p></article>
<footer><p>Copyright 2024 Shop Inc.</p></footer></body></html>"""
Q = "What is the support hotline number?"
EXPECTED = "0800 123 456"


def _settings(tmp_path, **values) -> Settings:
    return Settings.load(tmp_path / "kb", cache_dir=tmp_path / "cache", **values)


def test_the_fix_follows_the_evidence(tmp_path):
    s = _settings(tmp_path)
    (nav,) = parse_fixes(ParseEvidence("/d/contact.html", block="<nav>"), s)
    assert nav.settings == {"keep_boilerplate": ["/d/contact.html"]} and nav.reparse == ("/d/contact.html",)
    assert "<nav>" in nav.what
    (page,) = parse_fixes(ParseEvidence("/d/contact.html"), s)  # main-content extraction lost it: the page whole
    assert page.settings == {"keep_boilerplate": ["/d/contact.html"]}
    scans = parse_fixes(ParseEvidence("/d/scan.pdf", ocr=True), s)  # a page OCR read: a higher dpi, then higher
    assert [f.settings for f in scans] == [{"ocr_dpi": 300}, {"ocr_dpi": 400}]
    assert all(f.reparse == ("/d/scan.pdf",) for f in scans)
    (hyphen,) = parse_fixes(ParseEvidence("/d/notes.txt", compound="cash-flow"), s)
    assert hyphen.settings == {"keep_hyphens": ["cash-flow"]} and hyphen.reparse == ("/d/notes.txt",)
    assert parse_fixes(ParseEvidence("/d/report.pdf"), s) == ()  # a PDF's text layer: no parse setting changes it
    done = _settings(tmp_path, keep_boilerplate=["*.html"], ocr_dpi=300, keep_hyphens=["cash-flow"])
    assert parse_fixes(ParseEvidence("/d/contact.html", block="<nav>"), done) == ()  # already kept: nothing to try
    assert [f.settings for f in parse_fixes(ParseEvidence("/d/scan.pdf", ocr=True), done)] == [{"ocr_dpi": 400}]
    assert parse_fixes(ParseEvidence("/d/notes.txt", compound="cash-flow"), done) == ()


def test_the_block_that_states_the_answer_is_named(tmp_path):
    page = tmp_path / "contact.html"
    page.write_text(CONTACT, encoding="utf-8")
    assert boilerplate_block(str(page), [EXPECTED]) == "<nav>"
    assert boilerplate_block(str(page), ["two working days"]) == ""  # the article's own text
    assert boilerplate_block(str(tmp_path / "gone.html"), [EXPECTED]) == ""


@pytest.fixture
def folder(tmp_path):
    kb = build_kb(tmp_path, {**BOND_DOCS, "contact.html": CONTACT})
    kb.close()
    return tmp_path


def _clinic(folder, **settings):
    return Clinic.open(folder / "kb", model=None, llm="none", embedder="fake", judge="llm",
                       cache_dir=folder / "cache", **settings)


def test_an_answer_only_in_a_nav_block_is_fixed_by_reparsing_with_navigation_kept(folder):
    page = str((folder / "docs" / "contact.html").resolve())
    with _clinic(folder) as c:
        assert EXPECTED not in c.ask(Q, doctor=False).text
        d = c.diagnose(Q, [EXPECTED], apply=True, keep=True, others=0)
        parse = d.layers["parse"]
        assert d.verdict == "parse" and parse.evidence["block"] == "<nav>" and "keep_boilerplate" in d.suggestion
        assert d.fixes[0].settings == {"keep_boilerplate": [page]} and d.fixes[0].reparse == (page,)
        a = d.applied
        assert a.verdict == "fixed" and a.attempts[0].right and EXPECTED in a.attempts[0].answer, a.to_json()
        assert "the original is kept at" in a.kept
    assert read_settings_file(folder / "kb" / "settings.toml")["keep_boilerplate"] == [page]
    assert not list(folder.glob(".kb.fix-*"))
    with _clinic(folder) as c:  # the knowledge base now holds the page with its navigation
        assert EXPECTED in c.ask(Q, doctor=False).text


def test_cli_apply_reparses_the_page_with_its_navigation(folder, monkeypatch):
    monkeypatch.setenv("RAGCLINIC_EMBEDDER", "fake")
    monkeypatch.setenv("RAGCLINIC_JUDGE", "llm")
    monkeypatch.setenv("RAGCLINIC_CACHE_DIR", str(folder / "cache"))
    r = CliRunner().invoke(app, ["diagnose", "--kb", str(folder / "kb"), "-q", Q, "--expected", EXPECTED, "--apply",
                                 "--others", "0", "--llm", "none", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["verdict"] == "parse" and data["applied"]["verdict"] == "fixed", data
    assert data["fixes"][0]["settings"] == {"keep_boilerplate": [str((folder / "docs" / "contact.html").resolve())]}
    assert "keep_boilerplate" not in read_settings_file(folder / "kb" / "settings.toml")  # no --keep: unchanged
