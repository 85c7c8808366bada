"""``lazily-queue node --config FILE``: run one cluster member in this process."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "node",
        help="run one node of a cluster from a TOML configuration",
        description=(
            "Run one node: Raft member, HTTP status page (/), /status.json and /metrics, "
            "and the optional [app] entry. The cluster secret comes from the environment "
            "variable (secret_env) or file (secret_file) the configuration names, never "
            "from the command line. Stops cleanly on SIGTERM or SIGINT. Exit status: 0 "
            "after a clean stop, 1 when the app failed, 2 for a configuration problem."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the node's TOML file")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="log level on stderr (default warning)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import InvalidConfiguration
    from ..service import NodeService

    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("transports").setLevel(min(logging.WARNING, logging.root.level))
    try:
        config = load_config(args.config)
        return asyncio.run(NodeService(config).run())
    except InvalidConfiguration as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
