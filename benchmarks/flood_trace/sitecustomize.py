"""Installs :mod:`benchmarks.client_flood_hooks` in a ``lazily-queue node`` process
started with ``LAZILY_FLOOD_TRACE`` set (this directory first on its ``PYTHONPATH``, as
:mod:`benchmarks.client_flood_trace` starts them); any other process is left alone."""

import os
import sys

if os.environ.get("LAZILY_FLOOD_TRACE") and "node" in sys.orig_argv and \
        "--config" in sys.orig_argv:
    from benchmarks import client_flood_hooks

    client_flood_hooks.install(os.environ["LAZILY_FLOOD_TRACE"])
