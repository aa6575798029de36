"""``genkit-sessions``: one entry point, one module per command group.

Each command module exposes ``register(subparsers)``, which adds its parser and
sets ``func`` (taking the parsed arguments, returning an exit status).

Exit statuses: 0 on success; 1 for a :class:`~genkit_sessions.errors.GenkitError`
(printed on stderr as ``STATUS: message``) or a closed output pipe (quietly);
2 for a usage error (argparse's message); 130 for Ctrl-C. No traceback for any
of them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from genkit_sessions import __version__
from genkit_sessions.errors import GenkitError

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

COMMAND_MODULES = (
    "genkit_sessions.cli.demo",
    "genkit_sessions.cli.sessions_cmd",
    "genkit_sessions.cli.transfer_cmd",
    "genkit_sessions.cli.resolve_cmd",
    "genkit_sessions.cli.conformance_cmd",
    "genkit_sessions.cli.dynamodb_cmd",
)

_EPILOG = """\
examples:
  genkit-sessions demo | head
  genkit-sessions sessions list --table chats --principal ana
  genkit-sessions tree SESSION_ID --table chats --format mermaid
  genkit-sessions export --table chats --all > chats.jsonl
  genkit-sessions dynamodb doctor --table chats

Run `genkit-sessions COMMAND --help` for a command's options and an example.
Exit status: 0 ok, 1 an error (printed as STATUS: message), 2 a usage error, 130 interrupted."""


def build_parser() -> argparse.ArgumentParser:
    """The parser with every command group registered."""
    parser = argparse.ArgumentParser(
        prog="genkit-sessions",
        description="Agent sessions as trees of snapshots: inspect, draw, export and import them; "
        "check a DynamoDB table; run the demo and the conformance suite.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"genkit-sessions {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (a test's StringIO)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command and return its exit status (see the module doc); never raises for user errors."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # --help, --version (0) and usage errors (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except GenkitError as error:
        print(str(error), file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("CANCELLED: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
