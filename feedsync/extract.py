"""Stage 3, the CPU part: article HTML to plain text and metadata, with trafilatura.

Extraction takes 20-40 ms of CPU per page on a PC and ten times that on a Pi, and
importing trafilatura costs ~15 MB of RSS. So it runs in worker processes
(:class:`Extractor`), started only when a pass has something to extract: a cron run with
nothing new never imports trafilatura, the event loop keeps fetching while pages are
extracted, the pool is bounded (``[extract] workers``), and a crash inside lxml on a
hostile page kills a worker, not feedsync. A page that takes longer than
``[extract] timeout`` is stopped inside the worker (SIGALRM) and, should that not
suffice, the pool is killed and replaced.

The worker side is :func:`extract_html`; it returns a picklable :class:`Article`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import select
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from feedsync.board import resolve_workers
from feedsync.records import Article
from feedsync.terminal import clean

if TYPE_CHECKING:
    # The pool's modules (multiprocessing, pickle: ~2.5 ms) are imported when a pass has
    # something to extract (Extractor._ensure_pool), not by every run that imports this.
    import multiprocessing.process
    from concurrent.futures import Future, ProcessPoolExecutor

# Recycle a worker after this many pages: bounds slow leaks in lxml/trafilatura caches.
TASKS_PER_WORKER = 200
# trafilatura's favor_precision scores F1 0.957 against the gold text of the Article
# Extraction Benchmark pages, the default 0.942 (measured, see docs/architecture.md).
FAVOR_PRECISION = True
# Less than this is a menu or a cookie notice that trafilatura fell back to, not an
# article (50 characters are two sentences of Japanese, a line of English).
MIN_TEXT_CHARS = 50


class ExtractError(Exception):
    """The page gave no article; ``str()`` is the reason, ``permanent`` means do not retry,
    ``crashed``: the worker process died (or could not start), whether of the page or of
    a signal sent to the whole process group."""

    def __init__(self, reason: str, *, permanent: bool = False, crashed: bool = False):
        super().__init__(reason)
        self.permanent = permanent
        self.crashed = crashed


# ---------------------------------------------------------------- worker side


class _PageTimeout(Exception):
    pass


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _PageTimeout


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the work after ``seconds`` (worker processes run tasks in their main
    thread, where signals are delivered)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _page_language(tree: Any) -> str | None:
    """The language the page declares: <html lang>, else Content-Language / og:locale."""
    lang = tree.get("lang") or tree.get("{http://www.w3.org/XML/1998/namespace}lang")
    if not lang:
        for xpath in (
            '//meta[translate(@http-equiv,"CONTENTLAGU","contentlagu")="content-language"]'
            "/@content",
            '//meta[@property="og:locale"]/@content',
        ):
            found = tree.xpath(xpath)
            if found:
                lang = str(found[0])
                break
    lang = clean(lang, one_line=True).strip() if isinstance(lang, str) else ""
    if not lang:
        return None
    return lang.replace("_", "-").split(",")[0][:35]


_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.IGNORECASE)


def decoded(body: bytes, content_type: str | None) -> str | bytes:
    """The page as text, or its bytes to leave the encoding to trafilatura's detection.

    Valid UTF-8 is UTF-8 (the commonest mislabel is UTF-8 served as ISO-8859-1): decoded
    here once, as trafilatura would (it tries UTF-8 first), and not again by it.
    Otherwise :func:`page_encoding`."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        encoding = page_encoding(body, content_type)
    return body.decode(encoding) if encoding else body


def page_encoding(body: bytes, content_type: str | None) -> str | None:
    """The encoding to decode a page that is not UTF-8 with, or None to leave it to
    trafilatura's detection: the charsets the page declares in <meta> (its author's
    word), then the server's Content-Type charset (often a server default), each only if
    the bytes decode with it without error; with none declared, trafilatura guesses from
    the bytes."""
    declared = [m.decode("ascii", "replace") for m in _META_CHARSET.findall(body[:8192])]
    if content_type:
        declared += _HEADER_CHARSET.findall(content_type)
    for name in declared:
        try:
            codec = codecs.lookup(name).name
            body.decode(codec)
        except (LookupError, UnicodeDecodeError):
            continue
        return codec
    return None


# A character reference to a control character: &#1; ... &#31; (but tab, newline and
# carriage return), &#127;, in decimal or hex. Up to two hex or three decimal digits
# after leading zeros; the value is checked by _names_control.
_CONTROL_REFERENCE = r"&#(?:[xX]0*([0-9a-fA-F]{1,2})|0*([0-9]{1,3}));"
_CONTROL_REFERENCE_TEXT = re.compile(_CONTROL_REFERENCE)
_CONTROL_REFERENCE_BYTES = re.compile(_CONTROL_REFERENCE.encode())
_WHITE_SPACE = (0x09, 0x0A, 0x0D)


def _names_control(hex_digits: str | bytes | None, digits: str | bytes | None) -> bool:
    value = int(hex_digits, 16) if hex_digits else int(digits or b"0")
    return (value < 0x20 and value not in _WHITE_SPACE) or value == 0x7F


def without_control_references(page: bytes | str) -> bytes | str:
    """``page`` without its character references to control characters.

    One ``&#27;`` anywhere in a page made lxml's HTML parser give up on the rest of the
    document, and trafilatura found no article ("no article text found"): such a
    reference is never text, so it goes before parsing. In bytes too: any
    ASCII-compatible encoding spells a reference alike. References to C1 (``&#x9b;``)
    stay: HTML reads them as their windows-1252 characters (``›``).
    """
    if isinstance(page, str):
        return _CONTROL_REFERENCE_TEXT.sub(
            lambda m: "" if _names_control(*m.groups()) else m.group(0), page
        )
    return _CONTROL_REFERENCE_BYTES.sub(
        lambda m: b"" if _names_control(*m.groups()) else m.group(0), page
    )


def _date_search(page_date: bool) -> dict[str, Any] | None:
    """How trafilatura looks for the page's date: its default (None: the extensive
    search) when the page's date may be stored, its fast search when it will not be.

    The page's date is wanted only for an entry its feed gave no date
    (:func:`feedsync.decide.article_published` stores the feed's date when there is
    one). The extensive search ends, for a date written only in words (no
    year-month-day anywhere in the markup), in htmldate handing the text to dateparser
    with every language enabled, which loads its tables of its 205 languages: ~40 MB
    that the worker keeps until it is recycled. On the bench's 100 pages (bench scenario 3), in
    one process: peak RSS 140 MB with the extensive search, 97 MB with the fast one (two
    of the 100 pages reached dateparser); in a warm process it also costs ~4% less CPU.

    What the fast search loses is the page's date, where the feed has its own anyway. Of
    the 75 real pages of ../shared/corpus (articles/), it finds the same date as the
    extensive search on 70, none on 4 (a German company blog, an archive.org copy of a
    French page, NHK News Web Easy, football.ua in Russian) and another on 1
    (assabah.com.tn, in Arabic); of the 19 gold dates of trafilatura's evaluation pages
    the extensive search finds 17, the fast one 16. The corpus's 8 news feeds of 2026
    (NYT, WSJ, NPR, BBC, Al Jazeera, DW, Japan Today, Washington Post: 325 entries) date
    every entry; its undated entries (66 of 739) are in RSS 0.91/0.92 feeds (aif.ru in
    Russian, artifact-jp.com in Japanese, the specifications' examples) and test files,
    and their pages are still searched the extensive way, dateparser's 40 MB included."""
    if page_date:
        return None
    from trafilatura.settings import set_date_params

    return set_date_params(False)


def extract_html(
    html: bytes,
    url: str,
    timeout: float,
    content_type: str | None = None,
    *,
    page_date: bool = True,
) -> Article:
    """Extract one page (runs in a worker process). Raises ExtractError.

    ``page_date=False``: the feed gave the entry's date, so the page's own is never used
    (:func:`feedsync.decide.article_published`) and is only looked for where it is
    cheap to find (:func:`_date_search`); the text and every other field are the same."""
    import trafilatura  # here, not at the top: only workers pay for it

    page = without_control_references(decoded(html, content_type))
    try:
        with _deadline(timeout):
            tree = trafilatura.load_html(page)
            if tree is None:
                raise ExtractError("not a parseable HTML page")
            language = _page_language(tree)
            doc = trafilatura.bare_extraction(
                tree,
                url=url,
                favor_precision=FAVOR_PRECISION,
                with_metadata=True,
                include_comments=False,
                include_tables=True,
                date_extraction_params=_date_search(page_date),
            )
    except _PageTimeout:
        raise ExtractError(f"extraction took longer than {timeout:g}s") from None
    if doc is None:
        raise ExtractError("no article text found in the page")
    data = doc if isinstance(doc, dict) else doc.as_dict()
    text = clean(data.get("text") or "").strip()
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractError(f"no article text found in the page ({len(text)} characters)")
    from feedsync.canonical import canonical_url
    from feedsync.identity import fingerprint

    def line(key: str) -> str | None:
        """A one-line field of the page, without control characters (they are stored
        and printed: feedsync.terminal.clean)."""
        value = data.get(key)
        return (" ".join(clean(value, one_line=True).split()) or None) if value else None

    page_url = data.get("url")  # <link rel=canonical>, og:url, else the URL fetched
    return Article(
        text=text,
        title=line("title"),
        author=line("author"),
        date=data.get("date") or None,
        language=language or line("language"),
        canonical_url=canonical_url(page_url, url) if page_url else None,
        sitename=line("sitename"),
        fingerprint=fingerprint(text),
    )


def _end_with(pid: int) -> None:
    """Exit this worker as soon as the process ``pid`` (the feedsync process that started
    the pool) has ended.

    A feedsync process killed alone (``kill -9``, the OOM killer) left its worker blocked
    for good on its task queue: a worker holds both ends of that pipe and, through the
    forkserver's protocol, the write end of the pipe whose end tells the forkserver to
    exit, and the resource tracker's pipe. So the worker (with trafilatura's ~40 MB), the
    forkserver and the resource tracker all stayed, and the pool's named semaphores with
    them in /dev/shm, until the next boot. Once the worker is gone the forkserver sees
    its pipe end and exits, and the tracker unlinks the semaphores the dead process
    registered. A thread blocked on a pidfd costs nothing while feedsync lives."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Linux < 5.3: the old behaviour
        return
    select.select([fd], [], [])  # readable once the process has ended
    os._exit(1)


def _warm_up(parent: int | None = None) -> None:
    """Worker initializer: import trafilatura before the first page arrives, and end
    with ``parent``, the feedsync process (:func:`_end_with`).

    Ctrl-C reaches every process of the terminal's foreground group, workers included:
    the parent decides what a stop means (it gives the pages back and kills the pool),
    so a worker ignores SIGINT instead of printing a KeyboardInterrupt traceback. It is
    already blocked from the worker's birth (:func:`_start_forkserver`); ignored too, for
    a forkserver this module did not start. SIGTERM keeps its default: the pool ends
    broken workers with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    import trafilatura  # noqa: F401


def _start_forkserver() -> None:
    """Start the forkserver (if it is not running) with SIGINT blocked, from the thread
    that calls this.

    A blocked signal stays blocked across fork and exec: the forkserver, the resource
    tracker it starts and every worker it forks are born with SIGINT blocked, before any
    of their Python code runs. A Ctrl-C while they start (the forkserver imports for a
    noticeable while on a Pi) killed the forkserver with a KeyboardInterrupt traceback,
    and the pages waiting for it failed with EOFError. The forkserver ignores SIGINT
    itself once its loop runs; that was too late."""
    from multiprocessing import forkserver

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _outcome(future: Future[Article]) -> asyncio.Future[Article]:
    """An asyncio future with the outcome of a pool's ``future``, which, unlike
    ``asyncio.wrap_future``, does not cancel the pool's future when it is cancelled.

    A cancelled page (a stop) stays the pool's until the pool is killed, and a page of a
    killed pool must not be cancelled: Python 3.11's pool then sets BrokenProcessPool on
    the cancelled future, dies of InvalidStateError in its manager thread (a traceback
    on stderr) before it closes its call queue, and the next interpreter exit hung for
    good waiting on the queue's feeder thread, stuck writing a page to a pipe that no
    worker reads any more."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[Article] = loop.create_future()

    def settle() -> None:
        if waiter.done():
            return  # cancelled: nobody waits for this page any more
        if future.cancelled():
            waiter.cancel()
        elif (error := future.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(future.result())

    def done(_: Future[Article]) -> None:  # in the pool's manager thread
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(settle)

    future.add_done_callback(done)
    return waiter


# ---------------------------------------------------------------- parent side


def worker_processes(pool: ProcessPoolExecutor) -> list[multiprocessing.process.BaseProcess]:
    """The pool's live worker processes, to kill when the pool is stuck or broken.

    concurrent.futures has no public way to reach them before Python 3.14
    (``ProcessPoolExecutor.kill_workers``): this reads the private ``_processes`` map,
    here only. tests/test_extract.py fails if a Python upgrade renames it, rather than
    leaving stuck workers running. A broken pool has already set it to None."""
    found = getattr(pool, "_processes", None) or {}
    return list(found.values())


class Extractor:
    """A bounded pool of extraction workers, started on first use."""

    def __init__(
        self, workers: int | str, timeout: float, tasks_per_worker: int = TASKS_PER_WORKER
    ):
        # "auto" is sized by the pass that extracts, not when the config is read (two
        # system calls, but a `feedsync --help` needs neither).
        self.workers = resolve_workers(workers)
        self._tasks_per_worker = tasks_per_worker
        self._timeout = timeout
        self._pool: ProcessPoolExecutor | None = None
        self._submitted = False  # this pool's workers have been started (by a first submit)

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # forkserver: workers are forked from a clean single-threaded server, never
            # from this process with its threads and open database.
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("forkserver")
            # No forkserver preload of trafilatura: the workers would share its pages, but
            # the server lives as long as the daemon, so an idle daemon would keep ~20 MB
            # of trafilatura resident for good (measured: idle tree PSS 47 -> 66 MB).
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_warm_up,
                initargs=(os.getpid(),),
                max_tasks_per_child=self._tasks_per_worker,
            )
        return self._pool

    def _submit(
        self,
        pool: ProcessPoolExecutor,
        html: bytes,
        url: str,
        content_type: str | None,
        page_date: bool,
    ) -> Future[Article]:
        return pool.submit(
            extract_html, html, url, self._timeout, content_type, page_date=page_date
        )

    def _first_submit(
        self,
        pool: ProcessPoolExecutor,
        html: bytes,
        url: str,
        content_type: str | None,
        page_date: bool,
    ) -> Future[Article]:
        _start_forkserver()
        return self._submit(pool, html, url, content_type, page_date)

    async def extract(
        self, html: bytes, url: str, content_type: str | None = None, *, page_date: bool = True
    ) -> Article:
        """The article of one page; ``page_date=False`` when the feed dated the entry
        (see :func:`extract_html`)."""
        from concurrent.futures.process import BrokenProcessPool

        pool = self._ensure_pool()
        try:
            if self._submitted:
                future = self._submit(pool, html, url, content_type, page_date)
            else:
                # The first submit of a pool starts its workers, and the first of all
                # the forkserver (a fresh interpreter), and waits for them: a noticeable
                # stall on a Pi or a busy machine, during which the event loop would
                # stand still (every request due to start, and with them the per-host
                # spacing shared with other pollers).
                future = await asyncio.to_thread(
                    self._first_submit, pool, html, url, content_type, page_date
                )
                self._submitted = True
        except (OSError, EOFError) as exc:  # the forkserver died (a signal to the group)
            self._discard(pool)
            raise ExtractError(
                f"the extraction worker could not start: {exc}", crashed=True
            ) from None
        try:
            # The worker stops itself at the timeout; the margin covers a worker that
            # cannot (stuck inside C code), which is then killed with its pool.
            return await asyncio.wait_for(_outcome(future), self._timeout * 2 + 10)
        except TimeoutError:
            self._discard(pool)
            raise ExtractError(f"extraction took longer than {self._timeout:g}s") from None
        except BrokenProcessPool:
            self._discard(pool)
            raise ExtractError("the extraction worker crashed on this page", crashed=True) from None

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        """Kill a pool that is stuck or broken; the next page starts a fresh one.

        Its pages are not cancelled (see :func:`_outcome`): the pool fails them with
        BrokenProcessPool once its workers are dead, which nobody awaits any more."""
        if self._pool is pool:
            self._pool = None
            self._submitted = False
        processes = worker_processes(pool)
        pool.shutdown(wait=False, cancel_futures=False)
        for process in processes:
            with contextlib.suppress(Exception):
                process.kill()

    def close(self, kill: bool = False) -> None:
        """Stop the workers: after their current page, or at once (``kill``: stopping)."""
        if self._pool is not None:
            if kill:
                self._discard(self._pool)
            else:
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._submitted = False

    @property
    def started(self) -> bool:
        return self._pool is not None
