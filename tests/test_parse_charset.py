"""A server's charset that the document's bytes contradict (feedsync/parse/charset.py):
the bytes decide, as browsers read them; a document that must be UTF-16 and is not says
so in one line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sitegen
from sitegen import Item

from feedsync.parse import NotAFeed, parse_feed
from feedsync.parse.charset import fitted, sniffed

FEED = "https://news.example.com/feed.xml"
FETCHED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
XML = sitegen.rss2("Köln", FEED, [Item("Straße gesperrt", "https://news.example.com/a")])


def declared(encoding: str, text: str = XML) -> str:
    return text.replace('encoding="utf-8"', f'encoding="{encoding}"')


def even(body: bytes) -> bytes:
    """``body`` made of even length: what UTF-16 "decodes" without an error."""
    return body if len(body) % 2 == 0 else body + b"\n"


@pytest.mark.parametrize(
    ("body", "content_type", "read_as"),
    [
        # bytes that start as ASCII cannot be UTF-16 or UTF-32: the declaration, else UTF-8
        (b'<?xml version="1.0" encoding="utf-8"?><rss/>', "text/xml; charset=UTF-16", "utf-8"),
        (b"<rss>\xc3\xa9</rss>", "application/rss+xml; charset=utf-32", "utf-8"),
        (
            b'<?xml version="1.0" encoding="utf-16"?><rss/>',
            "application/xml; charset=utf-16le",
            "utf-8",
        ),
        (
            b'<?xml version="1.0" encoding="windows-1252"?><rss>\xe9</rss>',
            "application/xml; charset=utf-16",
            "windows-1252",
        ),
        (b"\n<rss>\xe9</rss>", "application/xml; charset=utf-16", None),  # the readers guess
        # a byte order mark, and UTF-16 or UTF-32 by their NULs, whatever the header says
        (b"\xef\xbb\xbf<rss/>", "application/xml; charset=iso-8859-1", "utf-8"),
        ("<rss/>".encode("utf-16"), "application/xml; charset=utf-8", "utf-16-le"),
        ("<rss/>".encode("utf-16-be"), "application/xml; charset=utf-16", "utf-16-be"),
        ("<rss/>".encode("utf-32-le"), "application/xml; charset=utf-16", "utf-32-le"),
    ],
)
def test_a_charset_the_bytes_contradict_is_replaced(
    body: bytes, content_type: str, read_as: str | None
) -> None:
    kind = content_type.split(";")[0]
    assert fitted(body, content_type) == (f"{kind}; charset={read_as}" if read_as else kind)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<rss>\xe9</rss>", "application/xml; charset=iso-8859-1"),  # RFC 3023: it stands
        (b"<rss>\xc3\xa9</rss>", "text/xml; charset=windows-1252"),
        ("<rss/>".encode("utf-16-le"), "application/xml; charset=utf-16-le"),
        (b"<rss/>", "application/xml"),  # no charset: nothing to contradict
        (b"garbage!", "application/xml; charset=utf-16"),  # even, decodes: feedparser's
        (b"\xff\xd8\xff\xe0 a JPEG", "image/jpeg; charset=utf-8"),
        (b"", "text/xml; charset=utf-16"),
    ],
)
def test_a_charset_the_bytes_agree_with_or_say_nothing_of_stays(
    body: bytes, content_type: str
) -> None:
    assert fitted(body, content_type) == content_type
    assert fitted(body, None) is None


def test_the_first_bytes_say_what_they_can() -> None:
    assert [sniffed(b) for b in (b"<?xml", b" <rss", b"\xef\xbb\xbf<", b"{", b"", b"<")] == [
        "ascii",
        "ascii",
        "utf-8",
        None,
        None,
        None,
    ]
    for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"):
        assert sniffed("<?xml".encode(codec)) == codec
        assert sniffed("\n<rss".encode(codec)) == codec
    assert sniffed("<rss".encode("utf-16")) == "utf-16-le"  # by its mark


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (
            b"\x00" + declared("utf-16").encode("utf-16-be"),
            "application/xml; charset=utf-16",
            "unreadable (served as UTF-16 but not UTF-16: truncated data)",
        ),
        (
            declared("utf-16").encode("utf-16-le")[:-1],
            "application/rss+xml; charset=utf-8",
            "unreadable (starts as UTF-16LE but is not UTF-16LE: truncated data)",
        ),
        (
            b"garbage",  # says nothing of itself, and is of odd length
            "application/xml; charset=utf-16",
            "unreadable (served as UTF-16 but not UTF-16: truncated data)",
        ),
        (
            "<rss>\ud800</rss>".encode("utf-16-le", "surrogatepass"),
            "text/xml; charset=utf-16",
            "unreadable (served as UTF-16 but not UTF-16: illegal UTF-16 surrogate)",
        ),
    ],
)
def test_a_document_that_must_be_utf16_and_is_not_says_so(
    body: bytes, content_type: str, reason: str
) -> None:
    """It was "not a feed (SAXParseException: ... not well-formed (invalid token))"."""
    with pytest.raises(NotAFeed) as refused:
        parse_feed(body, FEED, FETCHED, content_type)
    assert str(refused.value) == reason


@pytest.mark.parametrize(
    "content_type",
    [
        "application/rss+xml; charset=utf-16",
        "text/xml; charset=UTF-16",
        "application/xml; charset=utf-16be",
        "application/rss+xml; charset=utf-32",
    ],
)
@pytest.mark.parametrize("form", ["declared", "undeclared", "bom", "declared-utf-16"])
def test_a_utf8_feed_served_as_utf16_is_read_as_utf8(content_type: str, form: str) -> None:
    """Refused whenever its length was even (UTF-16 "decoded" it into CJK noise), read
    with feedparser's complaint when odd; now read as what it is, whatever its length."""
    text = {
        "declared": XML,
        "undeclared": XML.split("?>", 1)[1],
        "bom": "\ufeff" + XML,
        "declared-utf-16": declared("utf-16"),
    }[form]
    for body in (even(text.encode()), even(text.encode()) + b" "):
        parsed = parse_feed(body, FEED, FETCHED, content_type)
        assert parsed.title == "Köln" and parsed.problem is None
        assert [e.title for e in parsed.entries] == ["Straße gesperrt"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32-le"])
@pytest.mark.parametrize(
    "content_type",
    [
        "application/xml; charset=utf-8",
        "application/xml; charset=iso-8859-1",
        "text/xml; charset=utf-16",
    ],
)
def test_a_utf16_feed_is_read_as_utf16_whatever_the_header(codec: str, content_type: str) -> None:
    """A UTF-16 feed served as Latin-1 was refused; served as UTF-16 with big-endian
    bytes and no mark, it was read only through feedparser's fallbacks."""
    body = declared("utf-16").encode(codec)
    parsed = parse_feed(body, FEED, FETCHED, content_type)
    assert parsed.title == "Köln" and [e.title for e in parsed.entries] == ["Straße gesperrt"]
