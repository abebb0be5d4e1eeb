"""The server's charset, set right when the document's own bytes contradict it.

RFC 3023, and feedparser after it, rank the charset of the HTTP Content-Type above what
the document says. A server that calls a UTF-8 feed UTF-16 (a wrong default in its
configuration) then had feedparser decode it as UTF-16: a document of odd length fails
that, and feedparser fell back to its declaration; one of even length "decodes" into
CJK noise, and the feed was refused as "not well-formed (invalid token)". Browsers read
such a document by its bytes (WHATWG Encoding, "decode": a byte order mark wins over
any header), and no document whose first character is an ASCII ``<`` is UTF-16 or
UTF-32. So here, before any reader sees the document, as XML 1.0 Appendix F reads the
first bytes:

- a byte order mark names the encoding, whatever the header says;
- bytes that start as UTF-16 or UTF-32 (``<`` or a space, then NULs) are read in that
  encoding and byte order, whatever the header says;
- bytes that start as ASCII (``<?xml``, ``<rss``) served as UTF-16 or UTF-32 are read
  in the encoding they declare, else UTF-8 when they are UTF-8, else as if the server had
  named no charset (the readers then go by the declaration and detection);
- anything else keeps the server's charset. A header that names another ASCII-compatible
  encoding (ISO-8859-1 for a UTF-8 feed) is not contradicted by the bytes' shape, and
  RFC 3023's order stands: feedparser falls back when it does not decode.

A document that must be UTF-16 or UTF-32, and is not (an odd length, a lone surrogate),
cannot be read at all: :class:`NotAFeed` says so in one line ("served as UTF-16 but not
UTF-16 (truncated data)"), where feedparser's fallbacks gave an expat error.
"""

from __future__ import annotations

import codecs
import re

from feedsync.parse.raw import NotAFeed

# (first bytes, encoding), longest first: UTF-32 LE's mark starts as UTF-16 LE's
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)
# What a document's first character may be: "<", or white space before it
_FIRST = frozenset(b"<\t\n\r ")
_CHARSET = re.compile(r""";\s*charset\s*=\s*(?:"[^"]*"|'[^']*'|[^;]*)""", re.IGNORECASE)
_DECLARED = re.compile(rb"""\s*<\?xml\s[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")


def _charset(content_type: str) -> str | None:
    """The charset parameter of a Content-Type, unquoted; None without one."""
    found = _CHARSET.search(content_type)
    if found is None:
        return None
    return found.group(0).split("=", 1)[1].strip().strip("\"'") or None


def _codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _wide(codec: str | None) -> bool:
    return codec is not None and codec.startswith(("utf-16", "utf-32"))


def _ascii_compatible(codec: str | None) -> bool:
    """Whether ``codec`` writes ASCII as ASCII (UTF-8, Latin-1, Shift_JIS...)."""
    if codec is None or _wide(codec):
        return False
    try:
        return codecs.encode("<?xml", codec) == b"<?xml"
    except (TypeError, ValueError):  # base64 and the like take bytes; idna has its rules
        return False


def sniffed(body: bytes) -> str | None:
    """The encoding a document's first bytes say it is in (XML 1.0, Appendix F): that
    of its byte order mark; ``utf-16-le`` (``utf-16-be``, ``utf-32-*``) for a first
    character of the XML kind followed (preceded) by NULs; ``ascii`` for one followed by
    a byte that is not NUL (an ASCII-compatible encoding); None when they say nothing."""
    for mark, encoding in _BYTE_ORDER_MARKS:
        if body.startswith(mark):
            return encoding
    head = body[:4]
    if len(head) < 2:
        return None
    if head[:3] == b"\0\0\0" and len(head) == 4 and head[3] in _FIRST:
        return "utf-32-be"
    if head[0] in _FIRST and head[1:4] == b"\0\0\0":
        return "utf-32-le"
    if head[0] == 0 and head[1] in _FIRST:
        return "utf-16-be"
    if head[0] in _FIRST and head[1] == 0:
        return "utf-16-le"
    if head[0] in _FIRST:
        return "ascii"
    return None


def _read_as_ascii(body: bytes) -> str | None:
    """The charset to read an ASCII-compatible document in: the one it declares, when
    that is ASCII-compatible; else UTF-8 when it is UTF-8; else None (the readers decide,
    as without a charset)."""
    declared = _DECLARED.match(body)
    if declared is not None:
        name = declared.group(1).decode("ascii")
        if _ascii_compatible(_codec(name)):
            return name
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"


def _with_charset(content_type: str, charset: str | None) -> str:
    """``content_type`` with its charset parameter replaced (None: removed)."""
    replacement = f"; charset={charset}" if charset else ""
    return _CHARSET.sub(lambda _: replacement, content_type, count=1)


def fitted(body: bytes, content_type: str | None) -> str | None:
    """``content_type`` with its charset set to what the bytes say, where they
    contradict it (see the module's docstring); as it is otherwise. Raises NotAFeed for
    a document that must be UTF-16 or UTF-32 and is not."""
    served = _charset(content_type) if content_type else None
    if content_type is None or served is None:
        return content_type  # no charset: nothing to contradict, the readers sniff
    served_codec = _codec(served)
    shape = sniffed(body)
    if shape == "ascii":
        if not _wide(served_codec):
            return content_type
        return _with_charset(content_type, _read_as_ascii(body))
    wanted = shape or (served_codec if _wide(served_codec) else None)
    if wanted is None:
        return content_type
    try:
        if _wide(wanted):  # a UTF-8 mark with a bad byte after it: feedparser falls back
            body.decode(wanted)
    except UnicodeDecodeError as exc:
        if served_codec is not None and served_codec[:6] == wanted[:6]:  # utf-16, utf-32
            why = f"served as {served.upper()} but not {served.upper()}"
        else:  # "utf-16-le": UTF-16LE, as the charset is written
            name = wanted.upper().replace("-LE", "LE").replace("-BE", "BE")
            why = f"starts as {name} but is not {name}"
        raise NotAFeed(f"unreadable ({why}: {exc.reason})") from None
    return content_type if served_codec == wanted else _with_charset(content_type, wanted)
