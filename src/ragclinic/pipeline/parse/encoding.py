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
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is not None:
        codec = _normalise(best.encoding)
        try:
            return Decoded(_check_not_binary(data.decode(codec)), codec, False)
        except (UnicodeDecodeError, LookupError):
            pass
    try:  # the commonest non-UTF-8 encoding among our users; strict, so it rarely succeeds by accident
        return Decoded(_check_not_binary(data.decode("gb18030")), "gb18030", False)
    except UnicodeDecodeError:
        pass
    raise ParseError("cannot decode text: tried utf-8, gb18030 and charset-normalizer detection; "
                     "convert the file to UTF-8 first (e.g. iconv -f <encoding> -t UTF-8)")


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
