"""``genkit-sessions``: one entry point, one module per command group.

Each command module exposes ``register(subparsers)``, which adds its parser and
sets ``func`` (taking the parsed arguments, returning an exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from genkit_sessions.errors import GenkitError

COMMAND_MODULES = (
    "genkit_sessions.cli.demo",
    "genkit_sessions.cli.conformance_cmd",
    "genkit_sessions.cli.dynamodb_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="genkit-sessions",
        description="Agent sessions as trees of snapshots: demo, stores and conformance.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; a GenkitError prints as ``STATUS: message`` with exit status 1."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GenkitError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
