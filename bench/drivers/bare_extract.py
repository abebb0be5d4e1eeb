"""The baseline of extraction: a bare sequential loop, what one writes without feedsync.

    python bench/drivers/bare_extract.py URLS_FILE

For every URL (one per line): ``httpx`` GET (one keep-alive client: the fastest way to
write it), then ``trafilatura.extract`` on the bytes with the options feedsync uses
(``favor_precision``, ``include_tables``, metadata, no comments), so the comparison is of
the machinery around trafilatura, not of its settings. Stores nothing. Prints one JSON
line: pages fetched, articles extracted, characters of text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import trafilatura


def main() -> int:
    urls = [u.strip() for u in Path(sys.argv[1]).read_text().splitlines() if u.strip()]
    extracted = chars = 0
    with httpx.Client(timeout=30) as client:
        for url in urls:
            response = client.get(url)
            response.raise_for_status()
            text = trafilatura.extract(
                response.content,
                url=url,
                favor_precision=True,
                include_tables=True,
                include_comments=False,
                with_metadata=True,
            )
            if text and len(text) >= 50:
                extracted += 1
                chars += len(text)
    print(json.dumps({"pages": len(urls), "extracted": extracted, "chars": chars}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
