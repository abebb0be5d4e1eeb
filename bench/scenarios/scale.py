"""Scenario 6: staging one poll with a small and a large news_summary already there.

Two databases are built once per bench run (bench/drivers/stage_scale.py ``build``:
feedsync's schema, rows inserted directly with SQL), on tmpfs like the live database.
Each run times ``Storage.stage`` for ``scale_polls`` polls of ``entries`` candidates
(20% new, the rest re-offered rows) in a fresh process; a run's figure is the median
poll. "feedsync" is the large database, "baseline" the small one: the ratio shows how
much staging slows down as the table grows (index lookups: it should stay near 1).
"""

from __future__ import annotations

import statistics

from bench.common import Bench, Result
from bench.measure import last_json, measure


def run(bench: Bench) -> Result:
    p = bench.params
    folder = bench.folder("scale")
    dbs = {}
    built = {}
    for label, rows in (("small", p.scale_small), ("large", p.scale_large)):
        bench.log(f"scenario 6: building a database with {rows:,} rows")
        db = folder / f"{label}.db"
        built[label] = last_json(
            measure(
                bench.driver("stage_scale.py", "build", str(db), str(rows)), timeout=1800
            ).stdout
        )
        dbs[label] = db
    new = max(1, p.entries // 5)
    timing = ["--polls", str(p.scale_polls), "--entries", str(p.entries), "--new", str(new)]
    for db in dbs.values():  # warm: the first writes after the bulk load set up the WAL
        measure(bench.driver("stage_scale.py", "time", str(db), *timing))
    runs: dict[str, list[dict[str, list[float]]]] = {"small": [], "large": []}
    for rep in range(p.repeat):
        bench.log(f"scenario 6: run {rep + 1}/{p.repeat}")
        order = ("large", "small") if rep % 2 == 0 else ("small", "large")
        for label in order:
            command = bench.driver("stage_scale.py", "time", str(dbs[label]), *timing)
            runs[label].append(last_json(measure(command).stdout))

    def per_run(label: str, key: str) -> list[float]:
        return [statistics.median(r[key]) for r in runs[label]]

    result = Result(
        6,
        f"Scale: staging one poll ({p.entries} entries) with "
        f"{p.scale_large:,} vs {p.scale_small:,} rows in news_summary",
        f"{p.scale_large:,} rows already staged",
        f"{p.scale_small:,} rows already staged",
    )
    result.row(
        "wall time per poll",
        "ms",
        per_run("large", "wall_ms"),
        per_run("small", "wall_ms"),
        lower_is_better=None,
    )
    result.row(
        "CPU time per poll",
        "ms",
        per_run("large", "cpu_ms"),
        per_run("small", "cpu_ms"),
        lower_is_better=None,
    )
    result.details = {
        "build_seconds": {k: round(float(v["seconds"]), 1) for k, v in built.items()},
        "database_bytes": {k: v["bytes"] for k, v in built.items()},
        "new_per_poll": new,
        "polls_per_run": p.scale_polls,
    }
    result.notes.append(
        f"Each poll stages {p.entries} candidates in one transaction: {new} new entries "
        f"and {p.entries - new} already staged (looked up by UNIQUE(url, title)), with the "
        "identity checks of new rows (GUID, URL, canonical URL). Databases on tmpfs: "
        f"{built['large']['bytes'] / 2**20:.0f} MB and {built['small']['bytes'] / 2**20:.1f} MB."
    )
    return result
