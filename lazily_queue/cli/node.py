"""``lazily-queue node --config FILE``: run one cluster member in this process."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Any

LOG_LEVELS = ("debug", "info", "warning", "error")

#: Exit statuses besides 0 (clean stop) and 1 (the [app] failed).
EXIT_CONFIG, EXIT_DAMAGED, EXIT_STORAGE = 2, 3, 4


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "node",
        help="run one node of a cluster from a TOML configuration",
        description=(
            "Run one node: Raft member, HTTP status page (/), /status.json and /metrics, "
            "and the optional [app] entry. The cluster secret comes from the environment "
            "variable (secret_env) or file (secret_file) the configuration names, never "
            "from the command line. Stops cleanly on SIGTERM or SIGINT. Exit status: 0 "
            "after a clean stop, 1 when the app failed, 2 for a configuration problem "
            "(including a wrong secret or an id the cluster does not know), 3 when the "
            "node's data is damaged (recover it with `lazily-queue rejoin`), 4 when its "
            "data directory cannot be used (a full or failing disk)."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the node's TOML file")
    parser.add_argument(
        "--app-dir", metavar="DIR", default=None,
        help="look for the [app] entry's module in DIR first (default: the configuration "
        "file's directory), then in the installed packages")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                        help="log level on stderr (default info: one line per state change "
                             "such as a leader elected or a member lost; error hides the "
                             "transport's warnings)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="text lines, or one JSON object per line for log shippers")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import DamagedData, InvalidConfiguration
    from ..logs import configure
    from ..raft.errors import StorageUnavailable
    from ..service import AppFailed, NodeService

    configure(args.log_level, args.log_format)
    try:
        config = load_config(args.config)
        if getattr(args, "app_dir", None) is not None:
            app_dir = Path(args.app_dir).resolve()
            if not app_dir.is_dir():
                raise InvalidConfiguration(f"--app-dir {args.app_dir}: no such directory")
            config = dataclasses.replace(config, app_dir=app_dir)
        return asyncio.run(NodeService(config, freeze_when_started=True).run())
    except InvalidConfiguration as exc:
        return _failed(args, str(exc), EXIT_CONFIG)
    except DamagedData as exc:
        return _failed(args, f"damaged data: {exc}", EXIT_DAMAGED)
    except StorageUnavailable as exc:
        return _failed(args, str(exc), EXIT_STORAGE)
    except AppFailed as exc:
        return _failed(args, str(exc), 1)
    except KeyboardInterrupt:
        return 0


def _failed(args: argparse.Namespace, message: str, code: int) -> int:
    """Say why the node stops: ``error: message`` on stderr, or with ``--log-format json``
    an ERROR record like every other line there (``event``: ``exit``, with ``code``)."""
    if getattr(args, "log_format", "text") == "json":
        logging.getLogger("lazily_queue.cli").error(message, extra={"event": "exit",
                                                                    "code": code})
    else:
        print(f"error: {message}", file=sys.stderr)
    return code
