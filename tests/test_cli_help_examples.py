"""Every example a ``--help`` or docs/cli.md shows is a command line the parser accepts, and those that
need no table (the conformance suite, the demo) run as written and succeed."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from genkit_sessions.cli.main import build_parser
from tests.cli_helpers import env_without_credentials, run

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _parsers(child)


def help_examples() -> list[str]:
    """The example lines of every ``--help`` (the lines after ``example:`` or ``examples:``)."""
    found: list[str] = []
    for parser in _parsers(build_parser()):
        epilog = parser.epilog or ""
        if "example" in epilog:
            body = epilog.split(":", 1)[1]
            found += [line.strip() for line in body.splitlines() if line.strip().startswith("genkit-sessions ")]
    return found


def docs_examples() -> list[str]:
    """The ``$ genkit-sessions ...`` lines of docs/cli.md."""
    return [line[2:] for line in DOCS.read_text().splitlines() if line.startswith("$ genkit-sessions ")]


def argv_of(example: str) -> list[str]:
    """The arguments of an example's genkit-sessions command (what follows a pipe or a redirection is the shell's)."""
    words = shlex.split(example)
    for stop in ("|", ">"):
        if stop in words:
            words = words[: words.index(stop)]
    assert words[0] == "genkit-sessions"
    return words[1:]


def test_every_subcommand_has_help_examples_to_check() -> None:
    commands = {tuple(argv_of(e)[:1]) for e in help_examples()}
    assert {("demo",), ("conformance",), ("sessions",), ("show",), ("tree",), ("export",), ("import",)} <= commands
    assert {("resolve",), ("dynamodb",)} <= commands


@pytest.mark.parametrize("example", help_examples() + docs_examples())
def test_every_example_is_a_command_line_the_parser_accepts(example: str) -> None:
    try:
        build_parser().parse_args(argv_of(example))
    except SystemExit as exit_:
        pytest.fail(f"{example!r} is refused by the parser (exit status {exit_.code})")


@pytest.mark.parametrize(
    "example", [e for e in help_examples() if argv_of(e)[0] in ("conformance", "demo")], ids=lambda e: e
)
def test_every_example_that_needs_no_table_runs_as_written(example: str, tmp_path: Path) -> None:
    command = shlex.join([sys.executable, "-m", "genkit_sessions.cli.main"])
    result = subprocess.run(
        command + example.removeprefix("genkit-sessions"),
        shell=True,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env_without_credentials(),
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Error" not in result.stderr.split("\n", 1)[0]
    assert result.stdout


def test_a_conformance_store_that_names_no_factory_is_invalid_argument_with_an_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "conformance", "--store", "memory")
    assert code == 1
    assert err.splitlines() == [
        "INVALID_ARGUMENT: --store 'memory': use MODULE:FACTORY, "
        "for example genkit_sessions_conformance.factories:memory"
    ]


def test_a_conformance_area_that_names_no_area_is_invalid_argument_naming_the_areas(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "conformance", "--area", "nope")
    assert code == 1 and err.startswith("INVALID_ARGUMENT: --area 'nope': no such area; the areas are ")
