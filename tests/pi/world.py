"""The emulated Pi's internet: a generated news site served on the host's loopback.

    python3 tests/pi/world.py --port 18080 --state DIR

Binds 127.0.0.1 only; the guest (qemu user-mode network) reaches it as 10.0.2.2, so every
link in the feeds points at http://10.0.2.2:PORT. Six category feeds (RSS 2.0, Atom,
RSS 1.0/RDF) carry overlapping articles: a third of them are in two feeds, some in three,
one under a tracking parameter. Articles arrive in waves: wave 1 at start, the next ones
when ``GET /control/wave/N`` (from the guest or run.sh) says so; ``GET /control/mark/NAME``
writes DIR/mark-NAME (the guest telling run.sh "now", e.g. to arm the power cut);
``GET /control/time`` answers the host's clock (seconds since the epoch): the time the
guest sets when its clock is "corrected", as NTP would.

Every request is appended to DIR/requests.jsonl (time, path, status) and the per-path
counters are dumped to DIR/hits.json, so the checks can say "each article page was
fetched exactly once" from the server's side; a restarted server reloads them.
DIR/world.json lists the feeds and the articles of each wave; DIR/files/ holds a copy of
every feed and page for the guest's CPU benchmark (which must not count as fetches).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent), str(HERE.parent)]

import sitegen  # noqa: E402  (tests/sitegen.py)

from feedsync.localserver import LocalServer, Resource, _QuietServer  # noqa: E402

FEEDS = [  # name, format
    ("politics.xml", "rss2"),
    ("world.xml", "rss2"),
    ("local.atom", "atom"),
    ("science.atom", "atom"),
    ("sport.rdf", "rdf"),
    ("culture.rdf", "rdf"),
]
# not in the config: added by hand with `feedsync add` (it carries articles the others have)
EXTRA = ("extra.xml", "rss2")
WAVES = {1: 24, 2: 6, 3: 4, 4: 4, 5: 4}  # new articles per wave
GUEST_BASE = "http://10.0.2.2:{port}"


def articles_of(wave: int) -> list[str]:
    start = sum(n for w, n in WAVES.items() if w < wave)
    return [f"story-{i:03d}" for i in range(start, start + WAVES[wave])]


def feeds_of(index: int) -> list[int]:
    """The feeds that carry article ``index``: its own, a second for every third, a third
    and EXTRA for every sixth."""
    own = index % len(FEEDS)
    found = [own]
    if index % 3 == 0:
        found.append((own + 1) % len(FEEDS))
    if index % 6 == 0:
        found.append((own + 3) % len(FEEDS))
        found.append(len(FEEDS))  # EXTRA
    return found


class World:
    def __init__(self, port: int, state: Path) -> None:
        self.port = port
        self.base = GUEST_BASE.format(port=port)
        self.state = state
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.log = (state / "requests.jsonl").open("a", buffering=1)
        self.wave_file = state / "wave.json"
        # wave -> the moment it was published (articles are dated then, within lookback)
        self.published: dict[int, float] = {}
        if self.wave_file.exists():
            self.published = {int(k): v for k, v in json.loads(self.wave_file.read_text()).items()}
        if not self.published:
            self.published = {1: time.time()}
        requests = state / "requests.jsonl"
        for line in requests.read_text().splitlines():
            self.hits[json.loads(line)["path"]] += 1
        self.server = LocalServer()

    # ------------------------------------------------------------ content

    def page_path(self, slug: str) -> str:
        return f"/news/{slug}.html"

    def title(self, slug: str) -> str:
        number = int(slug.split("-")[1])
        words = sitegen.prose(slug, paragraphs=1, sentences=1)[0].split()[:6]
        return f"{' '.join(words).rstrip('.').capitalize()} (story {number})"

    def items(self, feed: int) -> list[sitegen.Item]:
        found = []
        for wave in sorted(self.published):
            stamp = datetime.fromtimestamp(self.published[wave], UTC)
            for n, slug in enumerate(articles_of(wave)):
                index = int(slug.split("-")[1])
                if feed not in feeds_of(index):
                    continue
                link = self.base + self.page_path(slug)
                if index == 9 and feed == feeds_of(index)[1]:
                    link += "?utm_source=rss&utm_medium=feed"  # the same article, tracked
                found.append(
                    sitegen.Item(
                        title=self.title(slug),
                        link=link,
                        published=stamp - timedelta(minutes=n),
                        guid=f"{self.base}/id/{slug}",
                    )
                )
        found.sort(key=lambda it: it.published or stamp, reverse=True)
        return found

    def publish(self) -> None:
        files = self.state / "files"
        (files / "feeds").mkdir(parents=True, exist_ok=True)
        (files / "pages").mkdir(parents=True, exist_ok=True)
        for wave in sorted(self.published):
            for slug in articles_of(wave):
                html = sitegen.article_page(self.title(slug), seed=slug)
                self.serve(self.page_path(slug), html)
                (files / "pages" / f"{slug}.html").write_text(html)
        for index, (name, fmt) in enumerate([*FEEDS, EXTRA]):
            render, content_type = sitegen.FORMATS[fmt]
            body = render(f"Test Gazette: {name.split('.')[0]}", self.base, self.items(index))
            self.serve(f"/feeds/{name}", body, content_type)
            (files / "feeds" / name).write_text(body)
        manifest = {
            "base": self.base,
            "feeds": [f"{self.base}/feeds/{name}" for name, _ in FEEDS],
            "extra_feed": f"{self.base}/feeds/{EXTRA[0]}",
            "waves": {w: articles_of(w) for w in WAVES},
            "pages": {w: [self.page_path(slug) for slug in articles_of(w)] for w in WAVES},
            "published": self.published,
            "expected": {
                w: sum(WAVES[v] for v in WAVES if v <= w) for w in WAVES
            },  # articles once wave w is out
        }
        (self.state / "world.json").write_text(json.dumps(manifest, indent=1))
        (files / "world.json").write_text(json.dumps(manifest, indent=1))
        self.wave_file.write_text(json.dumps(self.published))

    # ------------------------------------------------------------ serving

    def serve(self, path: str, body: str, content_type: str = "text/html; charset=utf-8") -> None:
        """LocalServer's routing table and conditional GET, on our own fixed port (its
        ``set`` wants its own listener started)."""
        data = body.encode()
        with self.server._lock:
            old = self.server._routes.get(path)
            if old is None or old.body != data:
                self.server._routes[path] = Resource(body=data, content_type=content_type)

    def record(self, path: str, status: int) -> None:
        with self.lock:
            self.hits[path] += 1
            self.log.write(
                json.dumps({"t": round(time.time(), 3), "path": path, "status": status}) + "\n"
            )
            (self.state / "hits.json.tmp").write_text(json.dumps(dict(self.hits), indent=0))
            (self.state / "hits.json.tmp").replace(self.state / "hits.json")

    def control(self, request: BaseHTTPRequestHandler) -> None:
        parts = request.path.split("?")[0].strip("/").split("/")
        answer = "ok\n"
        if len(parts) == 3 and parts[1] == "wave" and parts[2].isdigit():
            wave = int(parts[2])
            with self.lock:
                for w in range(1, wave + 1):
                    self.published.setdefault(w, time.time())
            self.publish()
            answer = f"wave {wave}\n"
        elif len(parts) == 3 and parts[1] == "mark" and parts[2].replace("-", "_").isidentifier():
            (self.state / f"mark-{parts[2]}").write_text(f"{time.time():.3f}\n")
            answer = f"mark {parts[2]}\n"
        elif parts == ["control", "time"]:
            answer = f"{time.time():.3f}\n"
        body = answer.encode()
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def run(self) -> None:
        world = self
        server = self.server

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path.startswith("/control/"):
                    world.record(self.path, 200)
                    world.control(self)
                    return
                before = server.not_modified[path]
                server._answer(self)
                status = 304 if server.not_modified[path] > before else 200
                world.record(path, status)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.publish()
        httpd = _QuietServer(("127.0.0.1", self.port), Handler)
        (self.state / "world.pid").write_text(f"{__import__('os').getpid()}\n")
        print(f"world: serving {self.base} (127.0.0.1:{self.port}), state {self.state}", flush=True)
        httpd.serve_forever(poll_interval=0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--state", type=Path, required=True)
    args = parser.parse_args()
    args.state.mkdir(parents=True, exist_ok=True)
    (args.state / "requests.jsonl").touch()
    World(args.port, args.state).run()


if __name__ == "__main__":
    main()
