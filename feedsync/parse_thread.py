"""A feed document's parse, on a thread of its own beside the database lane
(feedsync/context.py), so the lane runs only short transactions: a host's turn is never
stuck behind a 2,000-entry parse. A parse is linear in the document and capped (10 MB,
the newest 2,000 entries), yet a big one takes minutes on a Pi: while it runs it counts
as progress and feeds the watchdog (up to :func:`parse_bound`), and a stop does not wait
for it (it has nothing to save; feedsync.cli.entry asks :func:`parsing` how to exit).
The feed polls (feedsync/polling.py) hand their documents here.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import ParamSpec, TypeVar

from feedsync.records import ParsedFeed

P = ParamSpec("P")
T = TypeVar("T")

# How often a parse under way says it is alive (the notifier sends at most one ping a
# quarter of the watchdog period; the unit's WatchdogSec is 5 min, a test's 2 s).
PARSE_TICK_S = 1.0


def parse_bound(size: int) -> float:
    """How long a parse of ``size`` bytes may feed the watchdog: what the slowest
    document per byte (HTML nested 200 deep, ~2.3 µs a byte here through feedparser's
    sanitiser) would take on a Pi thirty times slower, twice over. Past it the parse is
    taken for stuck: the watchdog is left to restart the service."""
    return 120.0 + 120.0 * size / 1e6


# The parses under way in this process, on their threads (feedsync.cli.entry asks).
_PARSING: set[threading.Thread] = set()


def parsing() -> bool:
    """Whether a feed's parse is still running on its thread: a stopped pass left it."""
    return any(thread.is_alive() for thread in list(_PARSING))


class ParseThread:
    """One parse at a time (two 10 MB documents at once would double the peak memory), each
    on a daemon thread of its own: a stopped pass does not wait for a parse under way, and
    the process exits while it runs; a parse writes nothing, so nothing is lost."""

    def __init__(self) -> None:
        self._turn = asyncio.Lock()

    async def run(
        self,
        alive: Callable[[], None],
        bound: float,
        function: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``function(*args)`` on a thread; ``alive()`` every PARSE_TICK_S meanwhile,
        for ``bound`` seconds at most."""
        async with self._turn:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[T] = loop.create_future()

            def settle(result: T | None, error: BaseException | None) -> None:
                if future.done():  # the pass was stopped meanwhile
                    return
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)  # type: ignore[arg-type]

            def work() -> None:
                try:
                    result, error = function(*args, **kwargs), None
                except BaseException as exc:  # handed to the awaiting task, which decides
                    result, error = None, exc
                finally:
                    _PARSING.discard(threading.current_thread())
                with contextlib.suppress(RuntimeError):  # the loop is closed: a stopped pass
                    loop.call_soon_threadsafe(settle, result, error)

            thread = threading.Thread(target=work, name="feedsync-parse", daemon=True)
            _PARSING.add(thread)
            thread.start()
            started = time.monotonic()
            while True:
                done, _ = await asyncio.wait({future}, timeout=PARSE_TICK_S)
                if done:
                    return future.result()
                if time.monotonic() - started < bound:
                    alive()


def parse_document(
    body: bytes, url: str, fetched_at: datetime, content_type: str | None
) -> ParsedFeed | str:
    """The document parsed, on the parse thread, or why it is not a feed. The parsers
    (feedsync/parse/, with fastfeedparser's and feedparser's modules) are imported by the
    first document a process reads, on that thread: a ``run`` whose feeds all answer 304
    never loads them (~10-20 ms of CPU here). The daemon has them already: it imports
    them before its first pass (:func:`feedsync.pipeline.load_pass_modules`)."""
    from feedsync.parse import NotAFeed, parse_feed

    try:
        return parse_feed(body, url, fetched_at, content_type)
    except NotAFeed as exc:
        return str(exc)
