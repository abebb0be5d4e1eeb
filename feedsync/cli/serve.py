"""``feedsync serve``: the articles as full-text feeds and read-only pages over HTTP
(feedsync/serve/), until stopped, or, started by systemd's socket, until idle."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import TYPE_CHECKING

from feedsync.cli.common import EXIT_OK, notice

if TYPE_CHECKING:
    from feedsync.config import Config
    from feedsync.serve.server import Router


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    # the handlers first: a missing handler module is an ImportError at the start
    from feedsync.serve import routes

    return serve(config, args.listen, routes.router(config), debug=args.debug)


def _shown_host(label: str) -> str:
    """The host a reader types: a wildcard address is this machine's name."""
    host, _, port = label.rpartition(":")
    if host in ("0.0.0.0", "[::]"):
        host = socket.gethostname()
    return f"{host}:{port}"


def serve(config: Config, listen: tuple[str, int] | None, router: Router, *, debug: bool) -> int:
    import logging

    from feedsync import logs
    from feedsync import storage as storage_module
    from feedsync.config import ConfigError
    from feedsync.notify import Notifier
    from feedsync.serve import access, server

    logs.setup(logging.DEBUG if debug else logging.INFO)
    try:
        activated = server.systemd_socket()
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    address = listen or config.serve.listen
    if activated is not None:
        host = activated.getsockname()[0]
        address = (host, activated.getsockname()[1])
    try:
        rule = access.policy(config.serve, address)
    except access.AccessRefused as exc:
        raise ConfigError(str(exc)) from None
    warning = access.token_file_mode_warning(config.serve)
    if warning is not None:
        notice(f"warning: {warning}")
    # read only: the config's feeds are not brought in (serving never writes)
    storage = storage_module.open_storage(
        config.storage, notice=notice, keep=storage_module.Keep.of(config)
    )
    try:
        sock = activated or server.listening_socket(*address)
    except OSError as exc:
        storage.close()
        shown = (
            f"[{address[0]}]:{address[1]}" if ":" in address[0] else f"{address[0]}:{address[1]}"
        )
        raise ConfigError(f"cannot listen on {shown}: {exc.strerror or exc}") from None
    running = server.Server(
        sock,
        storage,
        router,
        rule,
        idle_exit=config.serve.idle_exit if activated is not None else None,
    )
    server.stop_on_signals(running)
    base = f"http://{_shown_host(running.label)}"
    key = "?token=TOKEN" if rule.token is not None else ""
    where = " (TOKEN: the one in [serve] token_file or token)" if key else ""
    print(
        f"feedsync: serving {base}/{key}; feeds for a reader app: {base}/feeds.opml{key}{where}",
        flush=True,
    )
    notifier = Notifier()
    notifier.ready(f"serving {base}/")
    try:
        why = running.run()
    finally:
        notifier.stopping()
        running.close()
    if why == "idle":
        print(
            f"feedsync: no request for {config.serve.idle_exit.total_seconds():g}s: exiting "
            "(the socket starts it again)",
            file=sys.stderr,
            flush=True,
        )
    return EXIT_OK
