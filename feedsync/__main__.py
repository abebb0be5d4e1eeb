"""``python -m feedsync``: the same as the ``feedsync`` console script."""

import sys

from feedsync.cli import main

sys.exit(main())
