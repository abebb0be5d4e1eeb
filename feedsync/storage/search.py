"""Full-text search: what a query means, and what goes into SQLite's index.

**The query** (``feedsync search --help``, README) is parsed here, the same for both
engines, into an expression over terms:

- words separated by spaces are all required (``AND`` between them may be written);
- ``a OR b``: either (OR binds tighter than the space: ``storm ferry OR bridge`` is
  storm, and ferry or bridge);
- ``"winter storm"``: the words one after the other (punctuation between them allowed);
- ``-word``, ``NOT word``: without it;
- ``harb*``: a word always finds the words it starts, so the ``*`` changes nothing.

AND, OR and NOT are operators in capitals only; an operator with nothing to work on (a
trailing ``AND``) is left out. A term matches where it begins a word of the title or
text (``harb`` finds "Harbour", ``son`` does not find "Anderson"), case-insensitively;
a Japanese, Chinese or Korean term anywhere. Accents do not count, as in a feed
reader: "cafe" finds "café", "gebuhren" finds "Gebühren", and "café" finds "cafe"
(:func:`fold` takes a letter's accents off, as FTS5's ``remove_diacritics 2`` does in
SQLite's index; on PostgreSQL the candidates come by a regular expression in which each
letter stands for its accented forms too, :func:`accent_pattern`, through the same
trigram index).

**One answer on both engines**: each engine fetches candidates with a condition every
match meets (:attr:`Query.alternatives`: the terms that must be there, one list per way
of matching; excluded terms are not in it), through its index, and
:meth:`Query.matches` decides on the article's text. Only the terms that matched are
marked in a snippet (:meth:`Query.snippet`): a searched "and" never marks "Anderson".

**The SQLite index** lives on the card, one FTS5 table per month of articles
(``news_fts_YYYY_MM``, see sql/card.sql and feedsync/storage/card.py). It is
contentless (the text is in ``news``, never stored twice) and uses FTS5's ``unicode61``
tokenizer: words, with case and accents folded. That tokenizer alone would index a run
of Japanese or Chinese, written without spaces, as one huge word; so before indexing,
every run of CJK characters is rewritten as its overlapping two-character pieces
("東京都庁" -> "東京 京都 都庁 庁"), its last character alone at the end. A term is cut
the same way, by the same tokenizer (:class:`Tokenizer`, an in-memory FTS5 table, so
the two can never disagree): a token of a spaced script is a prefix match, a CJK pair
an exact one, a single CJK character the pieces that begin with it. The index takes
about a quarter of the text's size (the trigram index it replaced took 2.5x:
docs/architecture.md has the measurements).
"""

from __future__ import annotations

import functools
import re
import sqlite3
import unicodedata
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


@functools.cache
def _cjk() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A CJK run, and a text that is one: compiled at first use, not at import. ``re``
    builds a table over each range of the class, character by character: ~8 ms, which
    every process paid at start (a cron run with nothing due is ~0.15 s in all), though
    only indexing and searching use them."""
    return re.compile(f"[{_CJK}]+"), re.compile(f"[{_CJK}]+$")


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

    return _cjk()[0].sub(lambda m: pieces(m.group(0)), text)


def _query_text(term: str) -> str:
    """A query term cut like the index, without the trailing characters (the pairs
    already hold them)."""
    return _cjk()[0].sub(lambda m: " " + " ".join(_pairs(m.group(0))) + " ", term)


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


class QueryError(ValueError):
    """A query that cannot be answered; ``str()`` says why, in one line."""


#: the most ways of matching a query may have (``a OR b c OR d`` has four)
MAX_ALTERNATIVES = 32


def _fold_char(char: str) -> str:
    """One character, case-folded and without its accents ("É" -> "e"); one character
    always (an "ß" stays, where casefold() would make two of it)."""
    low = char.casefold()
    low = low if len(low) == 1 else char.lower() if len(char.lower()) == 1 else char
    return _bare(low)


def _bare(char: str) -> str:
    """``char`` without the marks its canonical decomposition puts on a base letter
    ("é" is "e" and an acute accent): the base, when it is one character."""
    if char.isascii():
        return char
    parts = unicodedata.normalize("NFD", char)
    if len(parts) > 1 and all(unicodedata.combining(p) for p in parts[1:]):
        return parts[0]
    return char


class _FoldTable(dict[int, str]):
    """``str.translate``'s table for :func:`fold`, filled as characters are met."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """``text`` case-folded character by character: the same length, so a match found in
    it is at the same place in ``text`` (for the snippet's marks).

    Case folding maps each character on its own and never to nothing, so when the whole
    text folds to as many characters, it folded one for one and that is the answer (one
    C call: most text, Japanese included). Otherwise (an "ß" folds to "ss") the table
    folds it character by character. A search checks hundreds of article bodies: a
    Python call per character made it ten times slower."""
    if text.isascii():
        return text.lower()
    folded = text.casefold()
    if len(folded) != len(text):
        return text.translate(_FOLD)
    if _ACCENTED.search(folded) is None:
        return folded  # no letter that can carry an accent (most Japanese, say)
    return _strip_marks(folded)


def _strip_marks(folded: str) -> str:
    """``folded.translate(_BARE)``, faster: the distinct characters that lose a mark are
    replaced, each by one ``str.replace`` in C. ``translate`` looked every character up
    in the table from Python's side: an English article with one accented name took
    0.2-0.5 ms, 3-4x this (most of a search's judging, bench scenario 11)."""
    changed = {}
    for char in set(folded):
        bare = _BARE[ord(char)]
        if bare != char:
            changed[char] = bare
    if not changed.keys().isdisjoint(changed.values()):
        return folded.translate(_BARE)  # a base that loses a mark too: one pass, as ever
    for char, bare in changed.items():
        folded = folded.replace(char, bare)
    return folded


class _BareTable(dict[int, str]):
    """``str.translate``'s table for :func:`_bare`, filled as characters are met."""

    def __missing__(self, code: int) -> str:
        bare = self[code] = _bare(chr(code))
        return bare


_BARE = _BareTable()
# the scripts whose letters take accents that fold away: Latin, Greek, Cyrillic
_LETTERS_WITH_MARKS = "\u00c0-\u024f\u0370-\u04ff\u1e00-\u1fff"
_ACCENTED = re.compile(f"[{_LETTERS_WITH_MARKS}]")
# Punctuation that makes English text Unicode: no-break space, guillemets, the general
# punctuation block (quotes, dashes, ellipsis...). None is a letter or a digit, each
# folds to itself (tests/test_search.py checks): to an ASCII term, each is a space.
_PUNCTUATION = re.compile("[\u00a0\u00ab\u00bb\u2000-\u206f]")


@functools.cache
def _accented_forms() -> dict[str, str]:
    """Every letter (either case) that folds to each bare letter: {"u": "uUùúûü..."}."""
    forms: dict[str, list[str]] = {}
    for code in [*range(0x41, 0x5B), *range(0x61, 0x7B), *range(0xC0, 0x250),
                 *range(0x370, 0x500), *range(0x1E00, 0x2000)]:  # fmt: skip
        char = chr(code)
        folded = fold(char)
        if len(folded) == 1 and char.isprintable():
            forms.setdefault(folded, []).append(char)
    return {k: "".join(v) for k, v in forms.items() if len(v) > 1}


def accent_pattern(word: str) -> str:
    """A PostgreSQL regular expression (for ``~*``) that finds ``word`` whatever the
    accents on its letters, in the text or in the word: "gebuhren" and "gebühren" are
    both ``geb[uUùúûü...]hren``. pg_trgm takes its trigrams from such an expression, so
    it goes through the trigram index as ILIKE did."""
    forms = _accented_forms()
    out = []
    for char in fold(word):
        if char in forms:
            out.append("[" + forms[char] + "]")
        elif char.isalnum():
            out.append(char)
        else:
            out.append("\\" + char if not char.isspace() else "\\s")
    return "".join(out)


@dataclass(frozen=True)
class Term:
    """A word, or a phrase (``words`` in order), as the user typed it."""

    words: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @functools.cached_property
    def needle(self) -> str:
        """What any match holds: the first word, folded."""
        return fold(self.words[0])

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Where the term is in a folded text: at the start of a word (anywhere for CJK
        or a term starting with punctuation), the words of a phrase in order with
        anything but letters and digits between them."""
        head = fold(self.words[0])
        rest = "".join(r"[\W_]+" + re.escape(fold(w)) for w in self.words[1:])
        first = self.words[0][0]
        if first.isalnum() and not _cjk()[1].match(first):
            # "not after a letter or digit" is asked once the first word matched, by
            # looking back over it to the character before: a pattern that starts
            # with its word is searched for as a string, in C, ~30x faster on an
            # article's text than one that starts with a lookbehind tried at every
            # character (the judge of every search candidate, tests/test_search.py)
            return re.compile(re.escape(head) + rf"(?<![^\W_][\s\S]{{{len(head)}}})" + rest)
        return re.compile(re.escape(head) + rest)


@dataclass(frozen=True)
class _Node:
    op: str  # "term", "and", "or", "not"
    children: tuple[_Node, ...] = ()
    term: Term | None = None

    def matches(self, folded: str) -> bool:
        if self.op == "term":
            assert self.term is not None
            # a plain substring test first: most texts do not hold the word at all, and
            # it costs a fraction of the pattern's search
            if self.term.needle not in folded:
                return False
            return self.term.pattern.search(folded) is not None
        if self.op == "not":
            return not self.children[0].matches(folded)
        if self.op == "and":
            return all(c.matches(folded) for c in self.children)
        return any(c.matches(folded) for c in self.children)

    def alternatives(self) -> list[tuple[Term, ...]] | None:
        """The terms that must be there, one tuple per way of matching (None: nothing
        in particular, as for an excluded term)."""
        if self.op == "term":
            assert self.term is not None
            return [(self.term,)]
        if self.op == "not":
            return None
        found = [c.alternatives() for c in self.children]
        if self.op == "or":
            if any(f is None for f in found):
                return None
            return [alt for f in found if f is not None for alt in f]
        ways: list[tuple[Term, ...]] | None = None
        for f in found:
            if f is None:
                continue
            ways = f if ways is None else [a + b for a in ways for b in f]
            if len(ways) > MAX_ALTERNATIVES:
                raise QueryError(f"too many ways to match (more than {MAX_ALTERNATIVES} ORs)")
        return ways

    def terms(self) -> list[Term]:
        """Every term, the excluded ones too."""
        if self.op == "term":
            assert self.term is not None
            return [self.term]
        return [t for c in self.children for t in c.terms()]

    def wanted(self) -> list[Term]:
        """The terms that are looked for (not the excluded ones): what a snippet marks."""
        if self.op == "term":
            assert self.term is not None
            return [self.term]
        if self.op == "not":
            return []
        return [t for c in self.children for t in c.wanted()]


@dataclass(frozen=True)
class Query:
    """A parsed query (:func:`parse`), the same for both engines."""

    text: str
    root: _Node
    alternatives: tuple[tuple[Term, ...], ...]  # every match holds the terms of one

    def matches(self, text: str) -> bool:
        if self.ascii and not text.isascii():
            # English with typographic quotes and dashes: those made the text Unicode,
            # folded character by character (~90% of judging an article). For terms
            # all ASCII, any such character is as good as a space: neither is a
            # letter or digit, nor in any term; so the text without them, ASCII,
            # is lowered in one fast pass and matches exactly where the folded one does.
            plain = _PUNCTUATION.sub(" ", text)
            if plain.isascii():
                return self.root.matches(plain.lower())
        return self.root.matches(fold(text))

    @functools.cached_property
    def ascii(self) -> bool:
        """Whether every term, wanted or excluded, is ASCII."""
        return all(w.isascii() for t in self.root.terms() for w in t.words)

    @property
    def wanted(self) -> tuple[Term, ...]:
        return tuple(dict.fromkeys(self.root.wanted()))

    def snippet(self, text: str, marks: tuple[str, str], width: int = 120) -> str:
        """About ``width`` characters around the first match, each match of a wanted
        term between ``marks`` (which may be colours: the text is cleaned of control
        characters first, as it is printed to a terminal)."""
        from feedsync.terminal import clean

        flat = " ".join(clean(text, one_line=True).split())
        folded = fold(flat)
        spans: list[tuple[int, int]] = []
        for term in self.wanted:
            spans += [m.span() for m in term.pattern.finditer(folded) if m.end() > m.start()]
        spans.sort()
        first = spans[0][0] if spans else 0
        start = max(first - width // 3, 0)
        space = flat.find(" ", start, first)
        if start and space >= 0:
            start = space + 1  # from the start of a word, not inside one
        end = start + width
        out: list[str] = []
        at = start
        for a, b in spans:  # the earliest, longest first; overlapping ones are skipped
            if a < at or a >= end:
                continue
            b = min(b, end)
            out += [flat[at:a], marks[0], flat[a:b], marks[1]]
            at = b
        out.append(flat[at:end])
        return ("…" if start else "") + "".join(out) + ("…" if end < len(flat) else "")


_OPERATORS = ("AND", "OR", "NOT")
_LEXEME = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def _lex(text: str) -> list[tuple[str, Term | None]]:
    """("word", Term), ("not", None) for a leading "-", ("AND"/"OR"/"NOT", None)."""
    out: list[tuple[str, Term | None]] = []
    for m in _LEXEME.finditer(text):
        minus, quoted, bare = m.group(1), m.group(2), m.group(3)
        if quoted is not None:
            words = tuple(w for w in quoted.split() if any(c.isalnum() for c in w))
            if minus:
                out.append(("NOT", None))
            if words:
                out.append(("word", Term(words)))
            continue
        if bare in _OPERATORS:
            out.append((bare, None))
            continue
        if bare.startswith("-") and len(bare) > 1:
            out.append(("NOT", None))
            bare = bare[1:]
        bare = bare.rstrip("*")  # a prefix: what a word finds anyway
        if any(c.isalnum() for c in bare):
            out.append(("word", Term((bare,))))
    return out


def parse(text: str) -> Query:
    """The query for what the user typed; QueryError when nothing in it is a word to
    find (only punctuation, or only excluded words)."""
    tokens = _lex(text)
    units: list[_Node] = []  # AND of these
    group: list[_Node] = []  # the OR group being read
    joined = False  # an OR since the last unit: the next one joins the group
    negate = False
    for kind, term in tokens:
        if kind == "NOT":
            negate = not negate
        elif kind == "OR":
            joined = bool(group)
        elif kind == "AND":
            joined = False
        else:
            assert term is not None
            node = _Node("term", term=term)
            if negate:
                node, negate = _Node("not", (node,)), False
            if joined:
                group.append(node)
            else:
                if group:
                    units.append(group[0] if len(group) == 1 else _Node("or", tuple(group)))
                group = [node]
            joined = False
    if group:
        units.append(group[0] if len(group) == 1 else _Node("or", tuple(group)))
    if not units:
        raise QueryError(f"nothing to search for in {text!r}: no word in it")
    root = units[0] if len(units) == 1 else _Node("and", tuple(units))
    ways = root.alternatives()
    if ways is None:
        raise QueryError(
            f"nothing to search for in {text!r}: a query needs a word to find, "
            "beside the words it excludes"
        )
    return Query(text=text, root=root, alternatives=tuple(dict.fromkeys(ways)))


def _quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def fts_match(query: Query, tokenize: Tokenizer) -> str | None:
    """An FTS5 MATCH expression that every article :meth:`Query.matches` satisfies (it
    may find more; the text decides), or None when the index cannot narrow it down (a
    term with nothing the tokenizer keeps)."""
    ways = []
    for alternative in query.alternatives:
        parts: list[str] = []
        for term in alternative:
            for word in term.words:
                for token in tokenize(_query_text(word)):
                    if _cjk()[1].match(token) and len(token) > 1:
                        parts.append(_quoted(token))  # a CJK pair: exact
                    else:
                        parts.append(_quoted(token) + "*")  # a word, or one CJK character
        if not parts:
            return None
        ways.append("(" + " AND ".join(dict.fromkeys(parts)) + ")")
    return " OR ".join(ways)
