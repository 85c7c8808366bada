"""``python -m lazily_queue``: the ``lazily-queue`` command line."""

import sys

from .cli import main

sys.exit(main())
