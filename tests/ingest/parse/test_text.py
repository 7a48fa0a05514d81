from __future__ import annotations

import pytest

from ragclinic.demo.writers import write_text
from ragclinic.errors import ParseError
from ragclinic.ingest.parse.encoding import decode_bytes

from .helpers import assert_spans_valid, parse_all, parse_one

ZH = "检索增强生成系统先把文档切分成段落，再用向量检索找到相关段落。\n第二行：表格、标题和页码都需要保留。\n"
EN = "Café crème: naïve façade — “quoted” text.\n"


@pytest.mark.parametrize("encoding, expected", [
    ("gbk", "gb18030"), ("gb2312", "gb18030"), ("utf-8", "utf-8"), ("utf-8-sig", "utf-8"),
    ("utf-16", "utf-16-le"), ("utf-16-be", None), ("utf-32", "utf-32-le")])
def test_encodings_decode(tmp_path, encoding, expected):
    if expected is None:  # UTF-16 without a BOM looks like binary (NUL bytes): refused, not guessed
        path = write_text(tmp_path / "doc.txt", ZH, encoding)
        with pytest.raises(ParseError, match="binary content"):
            parse_all(path)
        return
    path = write_text(tmp_path / "doc.txt", ZH, encoding)
    parsed = parse_one(path)
    assert parsed.document.text == ZH.strip() and parsed.document.language == "zh"
    assert parsed.document.metadata["encoding"] == expected
    assert parsed.report.garbled_ratio == 0.0


def test_cp1252_text(tmp_path):
    path = write_text(tmp_path / "fr.txt", EN * 5, "cp1252")
    assert parse_one(path).document.text.startswith("Café crème: naïve façade — “quoted” text.")


def test_utf8_bom_is_removed(tmp_path):
    path = write_text(tmp_path / "bom.txt", "Hello BOM world", "utf-8-sig")
    doc = parse_one(path).document
    assert doc.text == "Hello BOM world" and doc.metadata["bom"] is True


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200),
                                  bytes(range(1, 32)) * 20 + b"some text"])
def test_binary_content_is_refused(tmp_path, data):
    path = tmp_path / "image.txt"
    path.write_bytes(data)
    with pytest.raises(ParseError, match="binary content in a text file"):
        parse_all(path)


def test_bad_bom_payload():
    with pytest.raises(ParseError, match="cannot decode text"):
        decode_bytes(b"\xef\xbb\xbf\xff\xfe\xfd broken")


def test_plain_text_is_dehyphenated_and_keeps_lines(tmp_path):
    text = ("Dense retrie-\nval is fast.\nA risk-\nfree fallback helps.\nCRLF line\r\nlast line")
    parsed = parse_one(write_text(tmp_path / "t.txt", text))
    assert parsed.document.text == ("Dense retrieval is fast.\nA risk-free fallback helps.\nCRLF line\nlast line")
    assert (parsed.report.hyphen_joins, parsed.report.hyphens_kept) == (1, 1)
    assert parsed.document.sections == () and parsed.document.pages == ()
    assert parsed.document.title == "t"
    assert_spans_valid(parsed.document)


def test_empty_text_file(tmp_path):
    parsed = parse_one(write_text(tmp_path / "empty.txt", ""))
    assert parsed.document.text == "" and parsed.report.garbled_ratio is None
    assert parsed.report.keyword_retention is None and parsed.document.language == "und"


@pytest.mark.parametrize("data, encoding, text", [
    ("中文测试".encode("gbk"), "gb18030", "中文测试"),  # short GBK: charset-normalizer alone says cp949
    ("Müller".encode("latin-1"), "cp1252", "Müller"),  # not UTF-16 without NULs
    ("La crème brûlée est naïve.".encode("latin-1"), "cp1252", "La crème brûlée est naïve."),
    ("café résumé naïve ".encode() * 20 + b"\xff", "utf-8", None),  # one stray byte: U+FFFD, not Latin-1
])
def test_encoding_guesses_for_short_and_nearly_utf8_text(data, encoding, text):
    from ragclinic.ingest.parse.encoding import decode_bytes

    d = decode_bytes(data)
    assert d.encoding == encoding
    if text is not None:
        assert d.text == text
    else:
        assert d.text.count("\ufffd") == 1 and "café" in d.text
