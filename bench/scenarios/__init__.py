"""The seven scenarios of issue 9, the eighth of issue 13, the ninth of issue 19, the
tenth of issue 21 and the eleventh of issue 45, one module per concern:

1-2. :mod:`bench.scenarios.ingest`: cold ingest and steady state against ``reader``.
3. :mod:`bench.scenarios.extract`: fetch + extract against a bare httpx + trafilatura loop.
4. :mod:`bench.scenarios.memory`: peak RSS (from 1 and 3) and an idle daemon over a day.
5. :mod:`bench.scenarios.writes`: SD-card writes, snapshots against the database on disk.
6. :mod:`bench.scenarios.scale`: staging with 1M against 10k rows already staged.
7. :mod:`bench.scenarios.startup`: ``--help`` and a no-op run against the bare interpreter.
8. :mod:`bench.scenarios.pg_scale`: 2,000 feeds polled by 1, 2 and 4 daemons on PostgreSQL
   against 1 daemon on SQLite.
9. :mod:`bench.scenarios.year`: a year on a Pi, time-compressed: card writes, RAM, memory,
   a pass with nothing new and search, day 120 against day 10 of the same run.
10. :mod:`bench.scenarios.latency`: 400 feeds answered after 200 ms, polled by 2 and 4
    daemons on PostgreSQL against 1 (the goal: 4 at >= 3x one's feeds per second).
11. :mod:`bench.scenarios.serve`: ``feedsync serve`` on 100,000 articles: pages and feeds
    against the 50 ms goal, the serve process's memory, the daemon's pass with a reader
    polling every feed beside it against the pass alone.
"""
