"""The ``lazily-queue`` command line.

Each subcommand is a module of this package with a ``register(subparsers)`` function
that adds its parser and sets ``handler`` (``handler(args) -> exit code``) as a
default. Adding a subcommand means adding its module name to :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import Any

SUBCOMMANDS = ("node", "status", "queue", "dlq", "members", "signaling", "rejoin", "demo",
               "bench", "conformance")


class _Version(argparse.Action):
    """``--version``: the installed version, read only when it is asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from .. import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()


def build_parser(commands: Sequence[str] = SUBCOMMANDS) -> argparse.ArgumentParser:
    """The parser with the subcommands ``commands`` (each module is imported to add its
    own: :func:`main` adds only the one named, when one is)."""
    parser = argparse.ArgumentParser(
        prog="lazily-queue",
        description="Embeddable, asyncio-native, Raft-replicated queues: tools and demos.",
    )
    parser.add_argument("--version", action=_Version,
                        help="show program's version number and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code.

    When the reader of its output goes away (``lazily-queue bench | head``) it stops
    quietly with status 141, as a command killed by SIGPIPE would. Ctrl-C in a subcommand
    that does not handle it (the demos: after stopping the nodes they started) ends it
    with one line on stderr and status 130, as a shell reports a command SIGINT stopped.
    A character its terminal's encoding cannot show is written as an escape."""
    command = "lazily-queue"
    for stream in (sys.stdout, sys.stderr):  # a name this terminal cannot show: escaped
        if isinstance(stream, io.TextIOWrapper) and not stream.closed:
            stream.reconfigure(errors="backslashreplace")
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        named = words[:1] if words[:1] and words[0] in SUBCOMMANDS else SUBCOMMANDS
        parser = build_parser(named)
        args = parser.parse_args(words)
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
