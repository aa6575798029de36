"""The command line shared by ``python -m genkit_sessions_conformance`` and ``genkit-sessions conformance``."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions_conformance.cases import CAPABILITIES, PROFILES, Case
from genkit_sessions_conformance.cases import select_cases as _select_cases
from genkit_sessions_conformance.report import (
    progress_printer,
    render_rule_table,
    render_summary,
    write_json,
    write_junit,
    write_markdown,
)
from genkit_sessions_conformance.runner import DEFAULT_CASE_TIMEOUT, StoreFactory, run_cases

__all__ = ["DEFAULT_STORE", "add_arguments", "load_factory", "main", "run_from_args", "select_cases"]

DEFAULT_STORE = "genkit_sessions_conformance.factories:memory"
EXIT_USAGE = 2
"""The exit status of a usage error (an unknown --case or --area, an unwritable report path)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the suite's options to ``parser``."""
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="MODULE:FACTORY",
        help="a callable returning a fresh, empty store (sync or async) for each case (default: %(default)s)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default="reject",
        help="R13 for a non-completed leaf: reject (Go, Java; default) or walk-back (JS, Python)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--junit-xml", type=Path, metavar="FILE", help="also write the results as JUnit XML to FILE")
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE", help="also write every case's result as markdown to FILE"
    )
    parser.add_argument("--area", action="append", help="run only this area (repeatable): resolver, store, wire, ids")
    parser.add_argument("--case", action="append", metavar="ID", help="run only the case with this id (repeatable)")
    parser.add_argument(
        "--claim",
        action="append",
        default=[],
        choices=CAPABILITIES,
        help="a capability the store is meant to have: run its cases even if detection misses it (repeatable)",
    )
    parser.add_argument("--by-rule", action="store_true", help="also print a table of outcomes per rule")
    parser.add_argument(
        "--case-timeout",
        type=_seconds,
        default=DEFAULT_CASE_TIMEOUT,
        metavar="SECONDS",
        help="fail a case that takes longer than this, and go on (default: %(default)g)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def load_factory(spec: str) -> StoreFactory:
    """Import ``module:attribute`` (the attribute may be dotted) and return it; it must be callable.

    The current directory is searched first, as ``python -m`` does, so ``--store mystore:make`` finds
    ``./mystore.py`` whichever way the suite was started.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise SystemExit(f"--store {spec!r}: use MODULE:FACTORY, for example {DEFAULT_STORE}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"--store {spec!r}: cannot import {module_name!r}: {exc}") from None
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise SystemExit(f"--store {spec!r}: {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise SystemExit(f"--store {spec!r}: {attribute!r} is not callable; name a class or a function")
    factory: StoreFactory = target
    return factory


def run_from_args(args: argparse.Namespace) -> int:
    """Run the suite as the parsed options say, print the tables; 0 when every required case passed."""
    for option in ("json", "junit_xml", "markdown"):
        _check_writable(f"--{option.replace('_', '-')}", getattr(args, option))
    factory = load_factory(args.store)
    cases = select_cases(args.area, args.case)
    try:
        report = asyncio.run(
            run_cases(
                factory,
                cases,
                profile=args.profile,
                store_name=args.store,
                claims=args.claim,
                on_result=progress_printer(sys.stderr),
                case_timeout=args.case_timeout,
            )
        )
    except GenkitError as error:  # the factory makes no stores: one clear error, not a failure per case
        raise SystemExit(f"--store {args.store}: {error.message}") from None
    print(render_summary(report))
    if args.by_rule:
        print()
        print(render_rule_table(report))
    writers: list[tuple[str, Path | None, Callable[[Path], None]]] = [
        ("--json", args.json, lambda p: write_json(report, p)),
        ("--junit-xml", args.junit_xml, lambda p: write_junit(report, p)),
        ("--markdown", args.markdown, lambda p: write_markdown(report, p, _command(args))),
    ]
    for option, path, write in writers:
        if path is None:
            continue
        try:
            write(path)
        except OSError as error:  # it became unwritable while the cases ran
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"{option} {shlex.quote(str(path))}: the report could not be written ({error.strerror or error}); "
                "the results above stand; give another path and run again",
            ) from None
    return 0 if report.ok else 1


_SUFFIXES = {"--json": ".json", "--junit-xml": ".xml", "--markdown": ".md"}


def _check_writable(option: str, path: Path | None) -> None:
    """Refuse a report path that cannot be written, before any case runs (INVALID_ARGUMENT)."""
    if path is None:
        return
    parent = path.parent
    problem = None
    if path.is_dir():
        example = path / ("results" + _SUFFIXES.get(option, ""))
        problem = "is a directory; give a file name, for example " + shlex.quote(str(example))
    elif not parent.is_dir():
        problem = f"the directory {str(parent)!r} does not exist; create it or give a path in an existing directory"
    elif path.exists() and not os.access(path, os.W_OK):
        problem = "cannot be written (no permission); give another path or make the file writable"
    elif not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        problem = f"the directory {str(parent)!r} cannot be written (no permission); give another path"
    if problem is not None:
        raise GenkitError(Status.INVALID_ARGUMENT, f"{option} {shlex.quote(str(path))}: {problem}")


def select_cases(areas: Sequence[str] | None, ids: Sequence[str] | None) -> list[Case]:
    """The shipped cases of ``areas`` and ``ids`` (None: all). An area or an id that names no case is
    INVALID_ARGUMENT naming what exists (see :func:`genkit_sessions_conformance.cases.select_cases`),
    so a typo can never make a run pass on fewer cases, or on nothing."""
    return _select_cases(areas, ids)


def _command(args: argparse.Namespace) -> str:
    """The shell-quoted command line that reproduces this run: the store, profile, claims and every
    selection option given (--area, --case), and the --markdown file (the other output files left out)."""
    parts = ["python", "-m", "genkit_sessions_conformance", "--store", args.store, "--profile", args.profile]
    for option, values in (("--claim", args.claim), ("--area", args.area), ("--case", args.case)):
        for value in values or ():
            parts += [option, value]
    if args.by_rule:
        parts.append("--by-rule")
    if args.case_timeout != DEFAULT_CASE_TIMEOUT:
        parts += ["--case-timeout", f"{args.case_timeout:g}"]
    if args.markdown is not None:
        parts += ["--markdown", str(args.markdown)]
    return shlex.join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m genkit_sessions_conformance``."""
    parser = argparse.ArgumentParser(
        prog="python -m genkit_sessions_conformance",
        description="Run the genkit_sessions conformance cases against a session store.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except GenkitError as error:  # a usage error: one line naming its status, no traceback
        print(str(error), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit_:
        if isinstance(exit_.code, str):  # the suite's own usage errors (a --store naming nothing)
            print(f"{Status.INVALID_ARGUMENT.value}: {exit_.code}", file=sys.stderr)
            return EXIT_USAGE
        raise
