"""Name answers and "public" addresses for feedsync's subprocesses: the attacker's tools.

An attack on the address guard needs a name whose DNS answer the attacker changes
(rebinding) and a server on the public internet, neither of which exists on a test
machine. The ``fake_dns`` fixture gives both to every feedsync CLI the test runs (through
:class:`conftest.FeedsyncEnv`, whose environment is copied from this process's):

- ``fake_dns.answer("pub.test", "127.0.0.1")``: the name answers that address (several
  addresses: several answers; none: the name does not exist). The answers are in a JSON
  file that the subprocess reads again at every lookup, so a test changes them between
  two runs. Names not listed are resolved as usual.
- ``fake_dns.public("127.0.0.1")``: that address counts as on the public internet for
  feedsync's address checks (``feedsync.guard.is_private_address``, and
  ``feedsync.addresses.is_private_address`` where that module has one). Set before the
  runs (it is read when the subprocess starts).

Loopback addresses stand for machines: a :class:`feedsync.localserver.LocalServer` on
127.0.0.1 plays the public server, one on ::1 (``LocalServer("::1")``) a
machine on the LAN; every 127.0.0.0/8 address is loopback on Linux, so both are served.

It works by a ``sitecustomize`` module put first on the subprocess's ``PYTHONPATH``
(Python imports it at start-up, in feedsync's extraction workers too), which wraps
``socket.getaddrinfo`` (asyncio resolves through it) and replaces the check functions
as module attributes: feedsync calls them as module globals, so the replacement is what
it calls. Nothing else of feedsync is changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

SITECUSTOMIZE = '''
"""feedsync's tests: fake DNS answers and public addresses (tests/dns.py)."""
import json
import os
import socket

_real_getaddrinfo = socket.getaddrinfo


def _answers():
    path = os.environ.get("FEEDSYNC_TEST_DNS")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError:
        return {}


def _getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    name = host.decode("ascii") if isinstance(host, bytes) else host
    answers = _answers()
    if name in answers:
        if not answers[name]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        found = []
        for address in answers[name]:
            found += _real_getaddrinfo(
                address, port, family, type, proto, flags | socket.AI_NUMERICHOST
            )
        return found
    return _real_getaddrinfo(host, port, family, type, proto, flags)


socket.getaddrinfo = _getaddrinfo

_PUBLIC = set(filter(None, os.environ.get("FEEDSYNC_TEST_PUBLIC", "").split(",")))
if _PUBLIC:
    import importlib

    for _name in ("feedsync.guard", "feedsync.addresses"):
        try:
            _module = importlib.import_module(_name)
        except ImportError:
            continue
        _real = getattr(_module, "is_private_address", None)
        if _real is not None:
            _module.is_private_address = (
                lambda address, _real=_real: address not in _PUBLIC and _real(address)
            )
'''


class FakeDNS:
    """What the test's feedsync subprocesses resolve and count as public (the module)."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch):
        self._file = folder / "answers.json"
        self._answers: dict[str, list[str]] = {}
        self._public: list[str] = []
        self._monkeypatch = monkeypatch
        (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        path = os.environ.get("PYTHONPATH")
        monkeypatch.setenv("PYTHONPATH", f"{folder}{os.pathsep}{path}" if path else str(folder))
        monkeypatch.setenv("FEEDSYNC_TEST_DNS", str(self._file))
        self._write()

    def answer(self, name: str, *addresses: str) -> None:
        """From now on ``name`` answers ``addresses`` (none: it does not exist)."""
        self._answers[name] = list(addresses)
        self._write()

    def public(self, *addresses: str) -> None:
        """``addresses`` count as on the public internet, for the runs started after."""
        self._public += addresses
        self._monkeypatch.setenv("FEEDSYNC_TEST_PUBLIC", ",".join(self._public))

    def _write(self) -> None:
        temporary = self._file.with_suffix(".tmp")
        temporary.write_text(json.dumps(self._answers), encoding="utf-8")
        temporary.replace(self._file)  # a lookup never reads half a file


@pytest.fixture
def fake_dns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDNS]:
    """See the module. The fixture's environment ends with the test."""
    folder = tmp_path / "fake-dns"
    folder.mkdir()
    monkeypatch.delenv("FEEDSYNC_TEST_PUBLIC", raising=False)
    yield FakeDNS(folder, monkeypatch)
