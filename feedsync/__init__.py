"""feedsync: poll RSS, Atom and JSON feeds and keep every news article exactly once, with
its full text.

The flow of one pass is drawn in :mod:`feedsync.pipeline`; the design and the reasons for
it are in docs/architecture.md.
"""

__version__ = "0.1.0"
