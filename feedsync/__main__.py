"""``python -m feedsync``: the same as the ``feedsync`` console script."""

from feedsync.cli import entry

entry()
