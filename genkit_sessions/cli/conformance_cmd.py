"""``genkit-sessions conformance``: run the conformance suite against a store (default: in memory)."""

from __future__ import annotations

import argparse
from typing import Any

from genkit_sessions.cli._command import add_command


def _run(args: argparse.Namespace) -> int:
    from genkit_sessions_conformance.cli import run_from_args

    return run_from_args(args)


def register(subparsers: Any) -> None:
    """Add the ``conformance`` command."""
    from genkit_sessions_conformance.cli import add_arguments

    parser = add_command(
        subparsers,
        "conformance",
        help="run the conformance cases against a session store",
        description="Run the language-neutral conformance cases against a store and print a table per area.",
        example="genkit-sessions conformance --store memory",
    )
    add_arguments(parser)
    parser.set_defaults(func=_run)
