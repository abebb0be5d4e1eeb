"""CPU time of feedsync's own parse and extract steps on the world's feeds and pages.

    python cpubench.py FILES_DIR      (FILES_DIR: world.py's files/, feeds/ and pages/)

Runs feedsync.parse.parse_feed on every feed and feedsync.extract.extract_html on every
page in this process and prints one JSON object: CPU seconds (time.process_time) per feed
parse and per article extraction (the first extraction, which pays for trafilatura's
warm-up, is reported apart), the import time of trafilatura, and a pure-Python loop
(``loop_seconds``) to compare this machine with another one running the same script.
Reads local copies, so the world server's fetch counters are not touched.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path


def loop() -> float:
    """A fixed amount of plain interpreter work (no C library), best of 3, in CPU seconds."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(1_000_000):
            total += i % 7 * (i & 3)
        text = ",".join(str(i) for i in range(100_000))
        total += len(text.split(","))
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    files = Path(sys.argv[1])
    result: dict[str, object] = {"loop_seconds": round(loop(), 4)}

    start = time.process_time()
    import trafilatura  # noqa: F401

    result["import_trafilatura_cpu_seconds"] = round(time.process_time() - start, 3)

    from feedsync.extract import extract_html
    from feedsync.parse import parse_feed

    now = datetime.now(UTC)
    parses = []
    entries = 0
    for feed in sorted((files / "feeds").iterdir()):
        body = feed.read_bytes()
        for _ in range(3):
            start = time.process_time()
            parsed = parse_feed(body, f"http://10.0.2.2/feeds/{feed.name}", now)
            parses.append(time.process_time() - start)
        entries += len(parsed.entries)
    result["feeds"] = len(parses) // 3
    result["entries_per_feed"] = round(entries / max(1, len(parses) // 3), 1)
    result["parse_cpu_seconds_median"] = round(statistics.median(parses), 4)
    result["parse_cpu_seconds_max"] = round(max(parses), 4)

    extracts = []
    chars = 0
    for page in sorted((files / "pages").iterdir()):
        body = page.read_bytes()
        start = time.process_time()
        article = extract_html(body, f"http://10.0.2.2/news/{page.name}", 60.0, "text/html")
        extracts.append(time.process_time() - start)
        chars += len(article.text)
    result["pages"] = len(extracts)
    result["page_bytes_mean"] = round(
        statistics.mean(p.stat().st_size for p in (files / "pages").iterdir())
    )
    result["text_chars_mean"] = round(chars / max(1, len(extracts)))
    result["extract_first_cpu_seconds"] = round(extracts[0], 3)
    result["extract_cpu_seconds_median"] = round(statistics.median(extracts[1:]), 4)
    result["extract_cpu_seconds_max"] = round(max(extracts[1:]), 4)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
