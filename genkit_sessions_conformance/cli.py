"""The command line shared by ``python -m genkit_sessions_conformance`` and ``genkit-sessions conformance``."""

from __future__ import annotations

import argparse
import asyncio
import difflib
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from genkit_sessions.errors import GenkitError
from genkit_sessions_conformance.cases import CAPABILITIES, CASES_DIR, PROFILES, Case, load_cases
from genkit_sessions_conformance.report import (
    progress_printer,
    render_rule_table,
    render_summary,
    write_json,
    write_junit,
    write_markdown,
)
from genkit_sessions_conformance.runner import StoreFactory, run_cases

__all__ = ["DEFAULT_STORE", "add_arguments", "load_factory", "main", "run_from_args", "select_cases"]

DEFAULT_STORE = "genkit_sessions_conformance.factories:memory"


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
            )
        )
    except GenkitError as error:  # the factory makes no stores: one clear error, not a failure per case
        raise SystemExit(f"--store {args.store}: {error.message}") from None
    print(render_summary(report))
    if args.by_rule:
        print()
        print(render_rule_table(report))
    if args.json is not None:
        write_json(report, args.json)
    if args.junit_xml is not None:
        write_junit(report, args.junit_xml)
    if args.markdown is not None:
        write_markdown(report, args.markdown, _command(args))
    return 0 if report.ok else 1


def select_cases(areas: Sequence[str] | None, ids: Sequence[str] | None) -> list[Case]:
    """The shipped cases of ``areas`` and ``ids`` (None: all). An area or an id that names no case is an
    error (exit status 2) naming what exists, so a typo can never make a run pass on nothing."""
    everything = load_cases()
    known_areas = sorted({c.area for c in everything})
    unknown = [a for a in areas or () if a not in known_areas]
    if unknown:
        raise SystemExit(f"--area {', '.join(unknown)}: no such area; the areas are {', '.join(known_areas)}")
    known_ids = [c.id for c in everything]
    missing = [i for i in ids or () if i not in known_ids]
    if missing:
        hints = []
        for case_id in missing:
            close = difflib.get_close_matches(case_id, known_ids, n=3)
            hints.append(f"{case_id!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise SystemExit(
            f"--case {', '.join(hints)}: no case has this id; ids are listed in the JSON report (--json) "
            f"and in the case files ({CASES_DIR})"
        )
    cases = load_cases(areas=areas, ids=ids)
    if not cases:
        raise SystemExit("no case matches both --area and --case; drop one of them")
    return cases


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this run (output files left out)."""
    parts = ["python -m genkit_sessions_conformance", f"--store {args.store}", f"--profile {args.profile}"]
    parts += [f"--claim {c}" for c in args.claim]
    parts += [f"--area {a}" for a in args.area or ()]
    if args.markdown is not None:
        parts.append(f"--markdown {args.markdown}")
    return " ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m genkit_sessions_conformance``."""
    parser = argparse.ArgumentParser(
        prog="python -m genkit_sessions_conformance",
        description="Run the genkit_sessions conformance cases against a session store.",
    )
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))
