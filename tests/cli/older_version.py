"""``python -m older_version node ...``: ``lazily-queue`` as the version before the
newest required handshake feature (it neither has nor requires it), for the
node-process tests."""

import sys

from lazily_queue.raft import features, mesh

mesh.REQUIRED_FEATURES = mesh.REQUIRED_FEATURES - {features.SESSION_NONCE_FEATURE}

from lazily_queue.cli import main  # noqa: E402

sys.exit(main())
