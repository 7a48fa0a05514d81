"""Bytes -> str for text formats (plain text, Markdown, HTML, JSONL lines).

Order: byte-order marks, then strict UTF-8 (the common case, and unambiguous when it succeeds),
then charset-normalizer. GB2312/GBK/cp936 answers are decoded as GB18030, their superset, so a
rare character outside GB2312 does not turn a whole Chinese file into an error.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ragclinic.errors import ParseError

# UTF-32 first: the UTF-32-LE BOM starts with the UTF-16-LE BOM.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_GB_FAMILY = {"gb2312", "gbk", "cp936", "ms936", "euc_cn", "euc-cn", "hz", "gb18030"}
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
# Real text has next to no control characters; a few stray ones (form feeds, escape codes in
# logs) are tolerated, a 5% share means we decoded a binary file.
CONTROL_SHARE_LIMIT = 0.05


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # the codec actually used, e.g. "utf-8", "utf-16-le", "gb18030"
    bom: bool


def decode_bytes(data: bytes, *, declared: str | None = None) -> Decoded:
    """Decode ``data``; ``declared`` (e.g. an HTML meta charset) is tried after BOMs and UTF-8.

    Raises ParseError for binary content or bytes no encoding explains.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom):].decode(codec)
            except UnicodeDecodeError as e:
                raise ParseError(f"cannot decode text: it starts with a {codec} byte-order mark but is not "
                                 f"valid {codec} at byte {e.start}; re-save it as UTF-8") from None
            return Decoded(_check_not_binary(text), codec, True)
    if b"\x00" in data:
        raise ParseError("binary content in a text file: NUL bytes and no UTF-16/32 byte-order mark; "
                         "is this really a text file? (re-save UTF-16 text with a BOM or as UTF-8)")
    candidates = ["utf-8"]
    if declared:
        candidates.append(_normalise(declared))
    for codec in candidates:
        try:
            return Decoded(_check_not_binary(data.decode(codec)), codec, False)
        except (UnicodeDecodeError, LookupError):
            continue
    return _detect(data)


def _detect(data: bytes) -> Decoded:
    """Not UTF-8: try, in order, what our users' files usually are, each with a plausibility check.

    charset-normalizer alone misreads short files (4 GBK characters come back as cp949 Korean,
    Latin-1 "Müller" as UTF-16), so it is consulted after these checks, not before.
    """
    for guess in (_nearly_utf8, _chinese_gb, _western):
        found = guess(data)
        if found is not None:
            return Decoded(_check_not_binary(found[0]), found[1], False)
    from charset_normalizer import from_bytes  # on use: charset-normalizer, needed only for an undeclared encoding

    best = from_bytes(data).best()
    # Without a BOM, UTF-16/32 text of any script has NUL bytes, which were refused above.
    if best is not None and not best.encoding.lower().replace("_", "").startswith(("utf16", "utf32")):
        codec = _normalise(best.encoding)
        try:
            return Decoded(_check_not_binary(data.decode(codec)), codec, False)
        except (UnicodeDecodeError, LookupError):
            pass
    raise ParseError("cannot decode text: tried utf-8, gb18030, cp1252 and charset-normalizer detection; "
                     "convert the file to UTF-8 first (e.g. iconv -f <encoding> -t UTF-8)")


# A few undecodable bytes in otherwise valid UTF-8 (a truncated copy, one stray Latin-1 byte) are
# kept as U+FFFD, which the parse report counts and warns about; beyond this share it is not UTF-8.
NEARLY_UTF8_MAX_ERRORS = 0.005


def _nearly_utf8(data: bytes) -> tuple[str, str] | None:
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    return (text, "utf-8") if bad <= NEARLY_UTF8_MAX_ERRORS * len(text) else None


def _chinese_gb(data: bytes) -> tuple[str, str] | None:
    """GB18030 when it decodes and its Chinese characters are common ones (in GB2312).

    Latin-1 text also decodes as GB18030 ("ü" + "l" is a valid GBK pair), but into rare characters
    outside GB2312; real Chinese text is almost all GB2312.
    """
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return None
    wide = [c for c in text if ord(c) > 0x7F]
    if not wide:
        return None
    common = sum(1 for c in wide if _in_gb2312(c))
    return (text, "gb18030") if common / len(wide) >= 0.9 else None


def _in_gb2312(ch: str) -> bool:
    try:
        ch.encode("gb2312")
        return True
    except UnicodeEncodeError:
        return False


# Letters and punctuation of Western European text in cp1252 (Latin-1 plus typographic quotes).
_WESTERN = set("ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿŒœŠšŸŽž"
               "‘’“”„–—…€£¥©®°±²³µ·¹º»«¼½¾¿¡§¶×÷\u00a0")


def _western(data: bytes) -> tuple[str, str] | None:
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    wide = [c for c in text if ord(c) > 0x7F]
    return (text, "cp1252") if wide and all(c in _WESTERN for c in wide) else None


def _normalise(encoding: str) -> str:
    name = encoding.strip().lower().replace("_", "-")
    if name in _GB_FAMILY or name.replace("-", "_") in _GB_FAMILY:
        return "gb18030"
    return codecs.lookup(name).name if _known(name) else name


def _known(name: str) -> bool:
    try:
        codecs.lookup(name)
        return True
    except LookupError:
        return False


def _check_not_binary(text: str) -> str:
    if text:
        controls = len(_CONTROL.findall(text))
        if controls / len(text) > CONTROL_SHARE_LIMIT:
            raise ParseError(f"binary content in a text file: {controls} control characters in "
                             f"{len(text)} ({controls / len(text):.0%}); is this really a text file?")
    return text.replace("\r\n", "\n").replace("\r", "\n")
