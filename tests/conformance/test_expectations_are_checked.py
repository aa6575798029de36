"""Every expectation a shipped case writes is one the runner checks: changing any one of them makes the
case fail on the in-memory store (which passes every case as written).

Each leaf under an ``expect`` (a status, a value, a matcher token) is changed in turn, as a case
author's slip would change it; a changed case that the schema refuses is left out (the schema test
catches it), and so is a change that only weakens the case (one substring fewer to look for in a
message). Whatever is left must fail, or the expectation it changed is one nothing reads.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions_conformance.cases import CASES_DIR, parse_case_file
from genkit_sessions_conformance.factories import memory
from genkit_sessions_conformance.runner import detect_within

SCHEMA = jsonschema.Draft202012Validator(json.loads((CASES_DIR.parent / "case.schema.json").read_text("utf-8")))
STATUSES = ("NOT_FOUND", "FAILED_PRECONDITION", "INVALID_ARGUMENT", "ALREADY_EXISTS", "ABORTED", "DATA_LOSS")
Path_ = tuple[Any, ...]


def _is_token(value: Any) -> bool:
    """A matcher token (``{"$any": true}`` and the like): one leaf, never walked into."""
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith("$")


def _changes(value: Any) -> Iterator[Any]:
    """What a slip could turn ``value`` into: each is a different expectation, never a weaker token."""
    if _is_token(value):
        token, argument = next(iter(value.items()))
        swaps = {"$absent": {"$any": True}, "$any": {"$absent": True}, "$uuid": "not-it", "$timestamp": "not-it"}
        if token in swaps:
            yield swaps[token]
        elif token == "$contains":
            yield {"$contains": f"{argument}\u2603not-it"}
        elif token == "$length":
            yield {"$length": argument + 1}
        elif token == "$same":
            yield "not-it"
        elif token == "$exact":
            yield from ({"$exact": changed} for changed in _changes(argument))
        return
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, (int, float)):
        yield value + 1
    elif isinstance(value, str):
        yield next(s for s in STATUSES if s != value) if value in STATUSES else value + "~not-it"
    elif value is None:
        yield "not-it"
    elif isinstance(value, list):
        if value:
            yield value[:-1]
        yield [*value, "not-it"]


def _leaves(node: Any, path: Path_) -> Iterator[tuple[Path_, Any]]:
    yield path, node
    if isinstance(node, dict) and not _is_token(node):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))


def _expectations(node: Any, path: Path_ = ()) -> Iterator[Path_]:
    """The path of every ``expect`` object in a case (a resolve case's own, and each step's)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expect":
                yield (*path, key)
            else:
                yield from _expectations(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _expectations(value, (*path, index))


def _at(node: Any, path: Path_) -> Any:
    for key in path:
        node = node[key]
    return node


def _changed_cases(raw: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for root in _expectations(raw):
        for path, leaf in _leaves(_at(raw, root), root):
            weakening_only = path[-1] == "messageContains"  # dropping a substring only asks for less
            for changed in _changes(leaf):
                if weakening_only and isinstance(changed, list) and len(changed) < len(leaf):
                    continue
                case = copy.deepcopy(raw)
                parent = _at(case, path[:-1])
                parent[path[-1]] = changed
                yield f"{'.'.join(map(str, path))} -> {json.dumps(changed)}", case


def _outcomes(area: str, cases: list[dict[str, Any]]) -> list[str]:
    async def run() -> list[str]:
        detected = await detect_within(memory)
        outcomes = []
        for raw in cases:
            (case,) = parse_case_file({"area": area, "cases": [raw]})
            report = await conformance.run_cases(memory, [case], profile=case.profile or "reject", detected=detected)
            outcomes.append(report.results[0].outcome)
        return outcomes

    return asyncio.run(run())


# Races carry no expectations: each is judged against the sequential model (test_concurrency_cases.py).
CASE_FILES = sorted(p for p in CASES_DIR.glob("*.json") if p.stem != "concurrency")


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_changing_any_expectation_of_a_shipped_case_makes_it_fail(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    changed: list[tuple[str, str, dict[str, Any]]] = []
    for raw in document["cases"]:
        for what, case in _changed_cases(raw):
            if not any(SCHEMA.iter_errors({**document, "cases": [case]})):
                changed.append((raw["id"], what, case))
    assert changed, f"{path.name}: no expectation to change"
    outcomes = _outcomes(document["area"], [case for _, _, case in changed])
    unchecked = [
        f"{case_id}: {what}"
        for (case_id, what, _), outcome in zip(changed, outcomes, strict=True)
        if outcome != "failed"
    ]
    assert unchecked == [], f"{len(unchecked)} of {len(changed)} changed expectations still pass"
