"""What a pass is asked to do, and what it does it with: :class:`feedsync.pipeline.Pass`
is built from these two records, ``Pass(plan, runtime)``.

They are apart because their callers are: each command says what its pass does (``run
--due``: the due feeds and the queue, saved at the end; ``add``: one feed from the
document its discovery fetched, nothing extracted; the daemon: the due feeds, saved on
the way) and hands over what it has opened (the config, the storage, where the pass
prints, its stop). The plan is read by the flows, each taking its part
(:class:`~feedsync.polling.FeedPolls` which feeds, :class:`~feedsync.articles.ArticleQueue`
which rows) and by the pass itself (its saves, its word on the clock); the runtime is what
:class:`~feedsync.context.PassContext`, the ground both flows share, is built from.

Both are immutable ``NamedTuple`` records, for the reason feedsync/records.py gives (a
frozen dataclass costs ~1 ms of every start to define, several on a Pi). This module is
imported by every command that runs a pass, cron's idle ``run --due`` among them: at
run time it imports only feedsync.timestamps (the default clock); its fields' types are
named for the type checker only, and nothing of a pass's own (the flows, asyncio, httpx)
is loaded by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING, NamedTuple

from feedsync import timestamps

if TYPE_CHECKING:
    import random
    import threading
    from datetime import datetime, timedelta

    from feedsync.config import Config
    from feedsync.fetch import Response
    from feedsync.guard import Guard
    from feedsync.progress import Progress
    from feedsync.storage import Storage


class PassPlan(NamedTuple):
    """What one pass does. The default: every enabled feed polled and the whole article
    queue drained, nothing saved to the card (a caller that wants the save says so).

    Which feeds (:class:`~feedsync.polling.FeedPolls`): every enabled one, or
    (``due_only``: the daemon, ``run --due``) those whose next poll time has come, or
    only the ids in ``only``, due or not (``run --feed``, ``add``). ``prefetched``: a
    feed's document fetched a moment ago (by ``add``'s discovery), with the guard that
    fetched it (its LAN verdict is the one observed): its poll uses that response rather
    than asking again.

    ``extract=False``: no article queue (stage only: the rows staged are claimable by
    anyone at once, not leased to this pass). ``own_only``: the queue takes only the rows
    this pass's polls staged (``run --feed``: that feed's new articles, not the whole
    queue's).

    ``save``: a save to the card at the end (a one-shot run; the daemon has its own save
    job). ``save_every`` (the daemon's ``[storage] save_interval``): a pass that runs longer
    saves on its way, between feeds and between articles, so a long pass never holds back
    the save (the daemon's save job waits for the pass, on the same worker thread).
    ``say_clock``: a clock that cannot be right is a problem line of the pass (False: the
    daemon says it once in its log instead)."""

    due_only: bool = False
    only: Set[int] | None = None
    prefetched: Mapping[int, tuple[Response, Guard]] | None = None
    extract: bool = True
    own_only: bool = False
    save: bool = False
    save_every: timedelta | None = None
    say_clock: bool = True


class PassRuntime(NamedTuple):
    """What one pass runs with: the config, the opened storage, where it says what it
    does (``progress``) and, all of them optional, ``stop`` (when set, the pass stops
    taking new work, lets the transaction in progress finish, gives back the rows it
    holds and ends early), ``clock`` (the bench's year on a Pi runs on a simulated one),
    ``owner`` (its identity on its leases; a new one by default) and ``rng`` (the jitter
    of its polls' next times; the daemon keeps one across passes)."""

    config: Config
    storage: Storage
    progress: Progress
    stop: threading.Event | None = None
    clock: Callable[[], datetime] = timestamps.now
    owner: str | None = None
    rng: random.Random | None = None
