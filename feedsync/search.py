"""Full-text search on SQLite: what goes into the index, and what a query asks of it.

No file, no network: the index itself lives on the card, one FTS5 table per month of
articles (``news_fts_YYYY_MM``, see sql/card.sql and feedsync/storage/tiers.py). It is
contentless (the text is in ``news``, never stored twice) and uses FTS5's ``unicode61``
tokenizer: words, with case and accents folded. That tokenizer alone would index a run
of Japanese or Chinese, written without spaces, as one huge word; so before indexing,
every run of CJK characters is rewritten as its overlapping two-character pieces
("東京都庁" -> "東京 京都 都庁 庁"), its last character alone at the end. A query is cut
the same way, by the same tokenizer (:class:`Tokenizer`, an in-memory FTS5 table, so
the two can never disagree), and then:

- a token of a spaced script is a prefix match: ``harb`` finds "harbour" and "Harbour";
- a CJK term of two or more characters asks for all its pieces, and the article's text
  is then checked for the term as written (the pieces of "東京都" also occur in
  "東京と京都"): two- and three-character Japanese queries are answered by the index;
- a single CJK character matches the pieces that begin with it, and the last character
  of a run;
- a term the tokenizer cuts in several tokens ("e-mail", "9.11") asks for all of them,
  and the text is checked for the term as written.

The index takes about a quarter of the text's size (the trigram index it replaced took
2.5x: docs/architecture.md has the measurements).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

# Scripts written without spaces between words: kana, CJK ideographs, hangul, and the
# compatibility forms. A run of them is indexed as two-character pieces.
_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\uac00-\ud7af"  # hangul syllables
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_ALL_CJK = re.compile(f"[{_CJK}]+$")

#: the FTS5 tokenizer of every index table (sql/card.sql says the same)
TOKENIZER = "unicode61 remove_diacritics 2"


def _pairs(run: str) -> list[str]:
    """A CJK run as its overlapping pairs (a single character as itself)."""
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def index_text(text: str | None) -> str:
    """``text`` as it goes into the FTS5 table: each CJK run becomes its pairs and then
    its last character alone (so that a one-character query finds a character at the
    end of a run too), spaced out; everything else is left to the tokenizer."""
    if not text:
        return ""

    def pieces(run: str) -> str:
        return " " + " ".join([*_pairs(run), run[-1]] if len(run) > 1 else [run]) + " "

    return _CJK_RUN.sub(lambda m: pieces(m.group(0)), text)


def _query_text(term: str) -> str:
    """A query term cut like the index, without the trailing characters (the pairs
    already hold them)."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_pairs(m.group(0))) + " ", term)


class Tokenizer:
    """FTS5's own tokenizer, on an in-memory table: the tokens of a text exactly as the
    index has them."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def __call__(self, text: str) -> list[str]:
        with self._conn:
            self._conn.execute("DELETE FROM t")
            self._conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
            return [str(r[0]) for r in self._conn.execute("SELECT term FROM v ORDER BY offset")]

    def close(self) -> None:
        self._conn.close()


@dataclass(frozen=True)
class Query:
    """A search over the index: ``match`` for FTS5 (every token of every term: AND),
    the terms an article's text must also contain as written (``verify``), and the terms
    themselves (for snippets and scans)."""

    match: str
    verify: tuple[str, ...]
    terms: tuple[str, ...]


def _quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def build_query(text: str, tokenize: Tokenizer) -> Query | None:
    """The query for what the user typed (whitespace-separated terms, all required), or
    None when nothing in it is a word (only punctuation)."""
    parts: list[str] = []
    verify: list[str] = []
    terms: list[str] = []
    for term in text.split():
        tokens = tokenize(_query_text(term))
        if not tokens:
            continue
        terms.append(term)
        for token in tokens:
            if _ALL_CJK.match(token) and len(token) > 1:
                parts.append(_quoted(token))  # a CJK pair: exact
            else:
                parts.append(_quoted(token) + "*")  # a word, or one CJK character: prefix
        if len(tokens) > 1:
            verify.append(term)
    if not parts:
        return None
    return Query(match=" AND ".join(dict.fromkeys(parts)), verify=tuple(verify), terms=tuple(terms))


def like_pattern(term: str) -> str:
    """A LIKE pattern (ESCAPE '\\') that finds ``term`` anywhere in a text."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
