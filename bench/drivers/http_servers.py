"""Choosing ``feedsync serve``'s HTTP server, by measurement (bench/analysis.md says what
came out and why the winner won).

    python bench/drivers/http_servers.py [--python PY] [--runs N] [--seconds S]

PY is a Python with the candidates installed (aiohttp and uvicorn are NOT feedsync
dependencies: install them in a throwaway venv, e.g. ``python3 -m venv /var/tmp/hs &&
/var/tmp/hs/bin/pip install aiohttp uvicorn h11``, never in feedsync's). Candidates that
PY cannot import are reported as missing, not measured.

For each candidate, each serving a 2 KB "hello" page:

- import time: ``PY -c "import <modules>"`` 20 times, median, minus the median of
  ``PY -c pass`` (what the import itself adds to a start);
- idle RSS: VmRSS of the serving process after it answered 200 requests and sat idle;
- requests per second from one client process (a raw socket loop, lighter than any HTTP
  library, so the server is what is measured): one keep-alive connection, and a new
  connection per request (``Connection: close``); ``--runs`` runs of ``--seconds`` each,
  the median;
- whether PyPI has armv7 (32-bit Raspberry Pi OS) wheels for its compiled parts (the JSON
  API's file list of the newest release; a package without any compiled part needs none).

The same script is also the servers and the client it starts (``serve KIND``, ``client``).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BODY = b"<!doctype html><title>hello</title><p>" + b"hello " * 330 + b"</p>\n"

# kind -> what its import costs (the modules a server of that kind imports)
CANDIDATES = {
    "stdlib-threading": "http.server",
    "threads-h11": "socketserver, h11",
    "asyncio-h11": "asyncio, h11",
    "aiohttp": "aiohttp.web",
    "uvicorn-h11": "uvicorn",
}
# kind -> PyPI packages with compiled parts it needs on a Pi (armv7 wheels or a compiler)
COMPILED = {
    "stdlib-threading": [],
    "threads-h11": [],
    "asyncio-h11": [],
    "aiohttp": ["aiohttp", "multidict", "yarl", "frozenlist", "propcache"],
    "uvicorn-h11": [],  # uvicorn[standard] would add httptools and uvloop
}


# ---------------------------------------------------------------- the servers


def serve_stdlib() -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Hello(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body in one write: written apart, Nagle's algorithm holds the body
        # ~40 ms behind the headers on a keep-alive connection (the client's delayed ACK)
        wbufsize = 65536

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
            self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    server.daemon_threads = True
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


def serve_threads_h11() -> None:
    """What feedsync serve builds on: a thread per connection (socketserver), h11 parsing
    with its bounded buffer, one sendall per answer."""
    import socketserver

    import h11

    class Hello(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = h11.Connection(h11.SERVER)
            try:
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(sock.recv(65536))
                        continue
                    if isinstance(event, h11.Request):
                        headers = [
                            ("Content-Type", "text/html; charset=utf-8"),
                            ("Content-Length", str(len(BODY))),
                        ]
                        out = conn.send(h11.Response(status_code=200, headers=headers))
                        out += conn.send(h11.Data(data=BODY))  # type: ignore[operator]
                        out += conn.send(h11.EndOfMessage())  # type: ignore[operator]
                        sock.sendall(out)  # type: ignore[arg-type]
                    elif isinstance(event, h11.ConnectionClosed):
                        break
                    if conn.our_state is h11.MUST_CLOSE:
                        break
                    if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                        conn.start_next_cycle()
            except (h11.RemoteProtocolError, ConnectionError):
                pass

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Hello)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


def serve_asyncio_h11() -> None:
    import asyncio

    import h11

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    conn.receive_data(data)
                    continue
                if isinstance(event, h11.Request):
                    headers = [
                        ("Content-Type", "text/html; charset=utf-8"),
                        ("Content-Length", str(len(BODY))),
                    ]
                    writer.write(conn.send(h11.Response(status_code=200, headers=headers)))
                    writer.write(conn.send(h11.Data(data=BODY)))
                    writer.write(conn.send(h11.EndOfMessage()))
                    await writer.drain()
                elif isinstance(event, h11.ConnectionClosed):
                    break
                if conn.our_state is h11.MUST_CLOSE:
                    break
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
        except (h11.RemoteProtocolError, ConnectionError):
            pass
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(client, "127.0.0.1", 0)
        print(f"ready {server.sockets[0].getsockname()[1]}", flush=True)
        await server.serve_forever()

    asyncio.run(main())


def serve_aiohttp() -> None:
    import asyncio

    from aiohttp import web

    async def hello(request: web.Request) -> web.Response:
        return web.Response(body=BODY, content_type="text/html", charset="utf-8")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/", hello)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        print(f"ready {port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_uvicorn() -> None:
    import asyncio

    import uvicorn

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"text/html; charset=utf-8")]
        headers.append((b"content-length", str(len(BODY)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": BODY})  # type: ignore[operator]

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http="h11", loop="asyncio", log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    print(f"ready {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


SERVERS = {
    "stdlib-threading": serve_stdlib,
    "threads-h11": serve_threads_h11,
    "asyncio-h11": serve_asyncio_h11,
    "aiohttp": serve_aiohttp,
    "uvicorn-h11": serve_uvicorn,
}


# ---------------------------------------------------------------- the client


def _read_response(sock: socket.socket, buffer: bytearray) -> None:
    """Read one response (headers, then Content-Length bytes) from ``sock``."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the headers")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        rest += chunk
    buffer[:] = rest[length:]


def client(port: int, seconds: float, keep_alive: bool) -> int:
    """Requests answered in ``seconds``, one at a time."""
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    request += b"\r\n" if keep_alive else b"Connection: close\r\n\r\n"
    done = 0
    end = time.monotonic() + seconds
    sock: socket.socket | None = None
    buffer = bytearray()
    while time.monotonic() < end:
        if sock is None:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buffer.clear()
        sock.sendall(request)
        _read_response(sock, buffer)
        done += 1
        if not keep_alive:
            sock.close()
            sock = None
    if sock is not None:
        sock.close()
    return done


# ---------------------------------------------------------------- measuring


def import_time(python: str, modules: str, times: int = 20) -> float | None:
    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([python, "-c", code], check=True)
        return time.perf_counter() - start

    try:
        subprocess.run([python, "-c", f"import {modules}"], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        return None
    base = statistics.median(once("pass") for _ in range(times))
    full = statistics.median(once(f"import {modules}") for _ in range(times))
    return full - base


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def measure_server(python: str, kind: str, runs: int, seconds: float) -> dict[str, object]:
    script = str(Path(__file__).resolve())
    proc = subprocess.Popen(
        [python, script, "serve", kind], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready "):
            return {"error": (line + proc.stderr.read() if proc.stderr else line).strip()[:200]}
        port = int(line.split()[1])
        client(port, 0.0, True)  # a connection, then 200 requests to warm it
        for _ in range(200):
            client(port, 0.0, False)
        time.sleep(1.0)  # idle: the figure is what it holds while nobody reads
        rss = rss_kib(proc.pid)
        figures: dict[str, object] = {"idle_rss_mib": round(rss / 1024, 1)}
        for label, keep in (("rps_keepalive", True), ("rps_close", False)):
            counts = []
            for _ in range(runs):
                done = subprocess.run(
                    [python, script, "client", str(port), str(seconds), "1" if keep else "0"],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                counts.append(int(done.stdout) / seconds)
            figures[label] = round(statistics.median(counts))
            figures[f"{label}_runs"] = [round(c) for c in counts]
        return figures
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def armv7_wheels(package: str) -> str:
    """The newest release of ``package`` on PyPI, and whether it has an armv7 wheel."""
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=20) as r:
            data = json.load(r)
    except OSError as exc:
        return f"{package}: PyPI not reachable ({exc})"
    release = data["info"]["version"]
    files = [f["filename"] for f in data["urls"]]
    arm = [f for f in files if "armv7l" in f]
    pure = [f for f in files if f.endswith("-none-any.whl")]
    if arm:
        return f"{package} {release}: {len(arm)} armv7l wheels"
    if pure:
        return f"{package} {release}: pure Python wheel"
    return f"{package} {release}: NO armv7l wheel (built from source on a Pi: a compiler)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--no-pypi", action="store_true", help="skip the armv7 wheel check")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results: dict[str, dict[str, object]] = {}
    for kind, modules in CANDIDATES.items():
        imported = import_time(args.python, modules)
        if imported is None:
            results[kind] = {"error": f"{args.python} cannot import {modules}"}
            continue
        figures: dict[str, object] = {"import_ms": round(imported * 1000, 1)}
        figures.update(measure_server(args.python, kind, args.runs, args.seconds))
        if not args.no_pypi:
            figures["armv7"] = "; ".join(armv7_wheels(p) for p in COMPILED[kind]) or "stdlib"
        results[kind] = figures
        print(kind, figures, file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print("| server | import (ms) | idle RSS (MiB) | req/s keep-alive | req/s new conn | armv7 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, f in results.items():
        if "error" in f:
            print(f"| {kind} | {f['error']} | | | | |")
            continue
        print(
            f"| {kind} | {f['import_ms']} | {f['idle_rss_mib']} | {f['rps_keepalive']} | "
            f"{f['rps_close']} | {f.get('armv7', '')} |"
        )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        SERVERS[sys.argv[2]]()
    elif len(sys.argv) > 1 and sys.argv[1] == "client":
        print(client(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"))
    else:
        sys.exit(main())
