"""``genkit-sessions conformance``: run the conformance suite against a store (default: in memory)."""

from __future__ import annotations

import argparse
from typing import Any

from genkit_sessions.cli._command import add_command
from genkit_sessions.errors import GenkitError, Status

EXAMPLE = (
    "genkit-sessions conformance --store genkit_sessions_conformance.factories:memory --area store\n"
    "genkit-sessions conformance --case R12-fork-newest-leaf --json results.json"
)
"""The examples ``--help`` ends with; each runs as written."""


def _run(args: argparse.Namespace) -> int:
    from genkit_sessions_conformance.cli import run_from_args

    try:
        return run_from_args(args)
    except SystemExit as exit_:  # the suite's own usage errors (a --store, --area or --case naming nothing)
        if isinstance(exit_.code, str):
            raise GenkitError(Status.INVALID_ARGUMENT, exit_.code) from None
        raise


def register(subparsers: Any) -> None:
    """Add the ``conformance`` command."""
    from genkit_sessions_conformance.cli import add_arguments

    parser = add_command(
        subparsers,
        "conformance",
        help="run the conformance cases against a session store",
        description="Run the language-neutral conformance cases against a store and print a table per area. "
        "--store names a factory as MODULE:FACTORY (MODULE is imported from the current directory first).",
        example=EXAMPLE,
    )
    add_arguments(parser)
    parser.set_defaults(func=_run)
