"""``feedsync serve``'s server, as a reader meets it: the real command as a subprocess
(with handlers of the tests' own: tests/serve_stub.py), a real HTTP client on 127.0.0.1
and ::1, real sockets for what no polite client sends, systemd's socket activation."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sitegen
from conftest import BACKENDS, NOW, FeedsyncEnv, Site, cli_env
from serving import STUB, Serving

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


@pytest.fixture
def serving(fs: FeedsyncEnv) -> Iterator[Serving]:
    running = Serving(fs, "serve", "--listen", "127.0.0.1:0").started()
    yield running
    running.stop()


def raw(base: str, request: bytes, *, timeout: float = 30) -> bytes:
    """What the server answers to these bytes, read to the connection's end."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def body_of(answer: bytes) -> bytes:
    return answer.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_serves_what_the_storage_holds_with_the_safety_headers(fs: FeedsyncEnv, site: Site) -> None:
    items = [
        sitegen.Item("Harbour ferry timetable changes", site.page("ferry"), NOW),
        sitegen.Item("Library opens on Sundays", site.page("library"), NOW),
    ]
    fs.configure([site.feed("news", items)])
    fs.run("run")
    running = Serving(fs, "serve", "--listen", "127.0.0.1:0").started()
    try:
        # the line says where to go, and where the OPML is
        assert running.stdout.startswith(f"feedsync: serving {running.base}/")
        assert f"{running.base}/feeds.opml" in running.stdout
        with httpx.Client(base_url=running.base, timeout=30) as client:
            page = client.get("/")
            assert page.status_code == 200
            assert "articles: 2" in page.text
            assert "Harbour ferry timetable changes" in page.text
            for name, value in (
                ("content-security-policy", CSP),
                ("x-content-type-options", "nosniff"),
                ("referrer-policy", "no-referrer"),
            ):
                assert page.headers[name] == value
            # HEAD: the same headers, no body
            head = client.head("/")
            assert head.status_code == 200
            assert head.content == b""
            assert head.headers["content-length"] == page.headers["content-length"]
            assert head.headers["content-security-policy"] == CSP
            # conditional GET through the handler's ETag
            css = client.get("/style.css")
            again = client.get("/style.css", headers={"If-None-Match": css.headers["etag"]})
            assert (again.status_code, again.content) == (304, b"")
            # a refusal carries the headers too, and is one line
            missing = client.get("/no/such/page")
            assert missing.status_code == 404
            assert missing.text.count("\n") == 1
            assert missing.headers["x-content-type-options"] == "nosniff"
    finally:
        code, _ = running.stop()
    assert code == 0


def test_only_get_and_head(serving: Serving) -> None:
    answer = httpx.post(f"{serving.base}/", content=b"x", timeout=30)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, HEAD"
    assert answer.text == "405 method not allowed: POST (only GET and HEAD)\n"


def test_a_handlers_failure_is_a_500_and_the_server_goes_on(serving: Serving) -> None:
    with httpx.Client(base_url=serving.base, timeout=30) as client:
        failed = client.get("/article/666")
        assert failed.status_code == 500
        assert failed.text.count("\n") == 1
        assert "RuntimeError" not in failed.text  # the traceback is the log's, not the reader's
        assert client.get("/").status_code == 200
    _, err = serving.stop()
    assert "500 on /article/666" in err
    assert "RuntimeError: a handler's bug" in err


@pytest.mark.parametrize(
    ("target", "said"),
    [
        (b"/article/1%00", b"400 bad request: the path holds a control character\n"),
        (b"/search?q=%1b%5b2J", b"400 bad request: the query holds a control character\n"),
        (b"/feeds/../../etc/passwd", b"400 bad request: the path holds a '..' segment\n"),
        (b"/feeds/%2e%2e/x.atom", b"400 bad request: the path holds a '..' segment\n"),
        (b"/search?q=%ff%fe", b"400 bad request: the query is not UTF-8\n"),
        (b"/%c3%28", b"400 bad request: the path is not UTF-8\n"),
    ],
)
def test_a_hostile_path_is_refused_in_one_line(
    serving: Serving, target: bytes, said: bytes
) -> None:
    answer = raw(
        serving.base, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert body_of(answer) == said


@pytest.mark.parametrize("where", ["query", "header"])
def test_a_10_mb_request_is_refused_without_being_read(serving: Serving, where: str) -> None:
    assert httpx.get(f"{serving.base}/", timeout=30).status_code == 200  # warm
    before = _peak_rss_kib(serving.proc.pid)
    big = b"a" * (10 * 1024 * 1024)  # (httpx refuses to send a URL this long: raw bytes)
    if where == "query":
        request = b"GET /search?q=" + big + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    else:
        request = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + big + b"\r\n\r\n"
    answer = raw(serving.base, request, timeout=60)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert body_of(answer) == b"431 request line or headers too long (more than 16 KB)\n"
    # the server is still there, and its memory did not take the 10 MB
    assert httpx.get(f"{serving.base}/", timeout=30).status_code == 200
    assert _peak_rss_kib(serving.proc.pid) - before < 4 * 1024


def _peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def test_keep_alive_and_a_get_with_a_body(serving: Serving) -> None:
    two = raw(
        serving.base,
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /feeds HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    assert two.count(b"HTTP/1.1 200 OK") == 2
    # a body on a GET is not read as the next request: answered, then the connection closes
    smuggled = raw(
        serving.base,
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\n\r\n"
        b"GET /article/666 HTTP/1.1\r\n\r\n\r\n",
    )
    assert smuggled.count(b"HTTP/1.1 ") == 1
    assert b"Connection: close" in smuggled


def test_sigterm_stops_it_in_seconds(serving: Serving) -> None:
    assert httpx.get(f"{serving.base}/", timeout=30).status_code == 200
    started = time.monotonic()
    code, _ = serving.stop(timeout=10)
    assert code == 0
    assert time.monotonic() - started < 10


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no ::1 on this machine")
def test_serves_on_ipv6_loopback(fs: FeedsyncEnv) -> None:
    running = Serving(fs, "serve", "--listen", "[::1]:0").started()
    try:
        assert running.base.startswith("http://[::1]:")
        answer = httpx.get(f"{running.base}/feeds.opml", timeout=30)
        assert answer.status_code == 200
        # the links a reader gets name the server as the reader reached it
        assert f'xmlUrl="{running.base}/feeds/all.atom"' in answer.text
    finally:
        running.stop()


def test_a_bad_listen_address_is_one_line(fs: FeedsyncEnv) -> None:
    fs.configure()
    done = subprocess.run(
        [sys.executable, str(STUB), "--config", str(fs.config_path), "serve", "--listen", "pi:80"],
        capture_output=True,
        text=True,
        env=cli_env(fs.root / "home"),
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "expected an IP address and a port" in done.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.skipif(
    shutil.which("systemd-socket-activate") is None, reason="no systemd-socket-activate"
)
def test_socket_activated_it_serves_then_exits_when_idle(fs: FeedsyncEnv) -> None:
    fs.configure(serve={"idle_exit": "1s", "listen": "127.0.0.1:1"})
    port = _free_port()
    # systemd-socket-activate listens, and starts the command with the socket as fd 3
    # (LISTEN_FDS=1, LISTEN_PID its pid) at the first connection
    proc = subprocess.Popen(
        [
            "systemd-socket-activate",
            "--listen",
            f"127.0.0.1:{port}",
            sys.executable,
            str(STUB),
            "--config",
            str(fs.config_path),
            "serve",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(fs.root / "home"),
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        answer = None
        while answer is None and time.monotonic() < deadline:
            try:
                answer = httpx.get(f"{base}/", timeout=60)
            except httpx.ConnectError:  # the wrapper not listening yet
                time.sleep(0.1)
        assert answer is not None and answer.status_code == 200
        # the socket's address, not [serve] listen's
        out, err = proc.communicate(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        raise
    assert proc.returncode == 0, err
    assert f"serving {base}/" in out
    assert "no request for 1s: exiting" in err


def test_serving_writes_nothing(fs: FeedsyncEnv) -> None:
    # a feed in the config that no command has brought in yet: serve reads the database
    # as it is, it does not add the feed (every other command would)
    fs.configure(["https://example.com/feed.xml"])
    running = Serving(fs, "serve", "--listen", "127.0.0.1:0").started()
    try:
        assert "feeds: 0" in httpx.get(f"{running.base}/feeds", timeout=30).text
    finally:
        running.stop()
    assert fs.scalar("SELECT count(*) FROM feeds") == 0


def test_a_missing_handler_module_is_an_error_at_the_start(fs: FeedsyncEnv) -> None:
    fs.configure()
    code = (
        "import sys; sys.modules['feedsync.serve.syndication'] = None\n"
        "from feedsync.cli import entry; sys.argv[0] = 'feedsync'; entry()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--config", str(fs.config_path), "serve"],
        capture_output=True,
        text=True,
        env={**cli_env(fs.root / "home"), "PYTHONPATH": str(STUB.parents[1])},
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # it never said it was serving
    assert done.stderr.count("\n") == 1
    assert "feedsync.serve.syndication" in done.stderr
