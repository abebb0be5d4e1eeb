"""Who may read what ``feedsync serve`` serves: a LAN address only with ``lan = true`` and
a token; a peer that is not this machine only with the token; the token never in a log.

Every peer a test can be is loopback. The server's peer check is one function,
:func:`feedsync.serve.access.is_local` (tested here on addresses), and the server is
tested with ``[serve] trust_loopback = false``, the documented setting for a reverse
proxy on the same host, under which a loopback peer is asked for the token exactly as
a LAN peer is: the same code path, with the real server and client.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import FeedsyncEnv, cli_env
from serving import STUB, Serving

from feedsync import config
from feedsync.serve import access

TOKEN = "s3cret-token-0123456789abcdef"


@pytest.mark.parametrize(
    ("peer", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("192.168.1.20", False),
        ("10.0.0.1", False),
        ("::ffff:192.168.1.20", False),
        ("fe80::1%eth0", False),
        ("0.0.0.0", False),
        ("not an address", False),
    ],
)
def test_only_this_machine_is_local(peer: str, local: bool) -> None:
    assert access.is_local(peer) is local


def _serve(fs: FeedsyncEnv, **serve: object) -> subprocess.CompletedProcess[str]:
    fs.configure(serve=serve)
    return subprocess.run(
        [sys.executable, str(STUB), "--config", str(fs.config_path), "serve"],
        capture_output=True,
        text=True,
        env=cli_env(fs.root / "home"),
        timeout=120,
    )


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            {"listen": "0.0.0.0:8470"},
            "0.0.0.0:8470 is not a loopback address: to serve the LAN set [serve] lan = true",
        ),
        ({"listen": "[::]:8470", "lan": True}, "[::]:8470 is on the LAN: set [serve] token_file"),
        ({"listen": "192.168.1.20:8470", "lan": True}, "is on the LAN: set [serve] token_file"),
        ({"token": "short"}, "serve.token: expected at least 16 characters"),
        ({"trust_loopback": False}, "trust_loopback = false asks every reader for a token"),
        ({"token_file": "/nonexistent/token"}, "serve.token_file: cannot read /nonexistent/token"),
    ],
)
def test_refuses_to_start_saying_what_to_set(
    fs: FeedsyncEnv, settings: dict[str, object], said: str
) -> None:
    done = _serve(fs, **settings)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert said in done.stderr
    assert done.stdout == ""


def test_a_short_token_in_its_file_is_refused(fs: FeedsyncEnv, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("tooshort\n")
    done = _serve(fs, token_file=str(token_file))
    assert done.returncode == 2
    assert f"serve.token_file: {token_file}: expected at least 16 characters" in done.stderr


@pytest.fixture
def guarded(fs: FeedsyncEnv, tmp_path: Path) -> Iterator[Serving]:
    """A server that asks every peer for the token (loopback too), logging each request."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    fs.configure(serve={"token_file": str(token_file), "trust_loopback": False})
    running = Serving(fs, "--debug", "serve", "--listen", "127.0.0.1:0").started()
    yield running
    running.stop()


def test_without_the_token_a_reader_is_refused(guarded: Serving) -> None:
    # the start line says a token is needed, without it
    assert f"{guarded.base}/?token=TOKEN" in guarded.stdout
    assert TOKEN not in guarded.stdout
    with httpx.Client(base_url=guarded.base, timeout=30) as client:
        for path in ("/", "/feeds/all.atom", "/feeds.opml", "/article/1", "/no/such"):
            refused = client.get(path)
            assert refused.status_code == 401, path
            assert refused.text.count("\n") == 1
            assert refused.headers["content-security-policy"].startswith("default-src 'none'")
        wrong = client.get("/feeds/all.atom", params={"token": "guess-guess-guess-guess"})
        assert wrong.status_code == 403
        assert "guess" not in wrong.text  # never echoed
        # a header cannot make a peer local
        forwarded = client.get("/", headers={"X-Forwarded-For": "127.0.0.1"})
        assert forwarded.status_code == 401


def test_a_feed_reader_shows_the_token_in_its_url(guarded: Serving) -> None:
    answer = httpx.get(f"{guarded.base}/feeds.opml", params={"token": TOKEN}, timeout=30)
    assert answer.status_code == 200
    # the reader's links carry it: it cannot log in
    assert f'xmlUrl="{guarded.base}/feeds/all.atom?token={TOKEN}"' in answer.text


def test_a_page_turns_the_token_into_a_cookie(guarded: Serving) -> None:
    with httpx.Client(base_url=guarded.base, timeout=30) as client:
        first = client.get("/search", params={"q": "ferry", "token": TOKEN})
        # 303 to the same page without the token: not kept in the address bar or history
        assert first.status_code == 303
        assert first.headers["location"] == "/search?q=ferry"
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"feedsync_token={TOKEN}; Path=/;")
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert first.headers["cache-control"] == "no-store"
        followed = client.get(first.headers["location"])  # the client keeps the cookie
        assert followed.status_code == 200
        assert "searched: 5 characters" in followed.text
        assert client.get("/").status_code == 200
        assert "token in links: yes" in client.get("/").text
    # another client, without the cookie: refused
    assert httpx.get(f"{guarded.base}/search?q=ferry", timeout=30).status_code == 401


def test_the_token_is_never_logged(guarded: Serving) -> None:
    with httpx.Client(base_url=guarded.base, timeout=30) as client:
        client.get("/feeds/all.atom", params={"token": TOKEN})
        client.get("/", params={"token": TOKEN})
        client.get("/feeds/all.json", params={"token": "wrong-wrong-wrong-wrong"})
        client.get("/article/666")  # with the cookie the 303 set: a handler's failure, logged
    code, err = guarded.stop()
    assert code == 0
    assert TOKEN not in err + guarded.stdout
    assert "wrong-wrong" not in err
    # the requests are in the log (--debug), their token redacted
    assert "GET /feeds/all.atom?token=... 200" in err
    assert "GET /?token=... 303" in err
    assert "refused 127.0.0.1 /feeds/all.json?token=...: 403" in err
    assert "500 on /article/666" in err


def test_loopback_reads_without_the_token_by_default(fs: FeedsyncEnv, tmp_path: Path) -> None:
    fs.configure(serve={"token": TOKEN})
    running = Serving(fs, "serve", "--listen", "127.0.0.1:0").started()
    try:
        answer = httpx.get(f"{running.base}/", timeout=30)
        assert answer.status_code == 200
        assert "token in links: no" in answer.text  # not given away to whoever did not show it
    finally:
        running.stop()


def test_the_serve_section_is_read() -> None:
    cfg = config.from_dict(
        {
            "storage": {"db": "/tmp/f.db"},
            "serve": {
                "listen": "[::1]:9000",
                "lan": True,
                "token_file": "/etc/feedsync/token",
                "trust_loopback": False,
                "idle_exit": "10m",
                "window": 20,
            },
        }
    )
    assert cfg.serve.listen == ("::1", 9000)
    assert (cfg.serve.lan, cfg.serve.trust_loopback, cfg.serve.window) == (True, False, 20)
    assert cfg.serve.token_file == Path("/etc/feedsync/token")
    assert cfg.serve.idle_exit.total_seconds() == 600
    defaults = config.from_dict({}).serve
    assert defaults.listen == ("127.0.0.1", 8470)
    assert (defaults.lan, defaults.token, defaults.window) == (False, None, 50)
    with pytest.raises(
        config.ConfigError, match=r"serve\.token: cannot be used with serve.token_file"
    ):
        config.from_dict({"serve": {"token": TOKEN, "token_file": "/x"}})
    with pytest.raises(config.ConfigError, match=r"serve\.listen: expected an IP address"):
        config.from_dict({"serve": {"listen": "localhost:8470"}})


def test_the_freshness_window_is_read_and_a_bad_one_named() -> None:
    """``[serve] fresh``: a minute by default, "0s" none; anything but a duration,
    or one under a second, is one line naming the key."""
    assert config.from_dict({}).serve.fresh.total_seconds() == 60
    assert config.from_dict({"serve": {"fresh": "90s"}}).serve.fresh.total_seconds() == 90
    assert config.from_dict({"serve": {"fresh": "0s"}}).serve.fresh.total_seconds() == 0
    for bad, said in (
        ("a minute", r'expected a duration like "90s", "30m" or "24h", got "a minute"'),
        (60, r'expected a duration string like "90s"'),
        ("500ms", r"must be 0s \(no window\) or at least 1s"),
    ):
        with pytest.raises(config.ConfigError, match=rf"^serve\.fresh: {said}") as caught:
            config.from_dict({"serve": {"fresh": bad}})
        assert "\n" not in str(caught.value), bad
