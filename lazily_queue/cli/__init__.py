"""The ``lazily-queue`` command line.

Each subcommand is a module of this package with a ``register(subparsers)`` function
that adds its parser and sets ``handler`` (``handler(args) -> exit code``) as a
default. Adding a subcommand means adding its module name to :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .. import __version__

SUBCOMMANDS = ("node", "status", "queue", "dlq", "members", "signaling", "rejoin", "demo",
               "bench", "conformance")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lazily-queue",
        description="Embeddable, asyncio-native, Raft-replicated queues: tools and demos.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code.

    When the reader of its output goes away (``lazily-queue bench | head``) it stops
    quietly with status 141, as a command killed by SIGPIPE would. Ctrl-C in a subcommand
    that does not handle it (the demos: after stopping the nodes they started) ends it
    with one line on stderr and status 130, as a shell reports a command SIGINT stopped."""
    command = "lazily-queue"
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = f"lazily-queue {args.command}" if args.command else command
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return 2
        code: int = handler(args)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"interrupted: {command} stopped by Ctrl-C", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Python would report the failed flush at exit: point stdout at nothing first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
