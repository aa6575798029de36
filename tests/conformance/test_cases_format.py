"""The shipped cases: they load, follow the schema, and cover every rule of the contract."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from genkit_sessions_conformance.cases import CASES_DIR, CaseFormatError, load_cases, parse_case_file

SCHEMA = Path(CASES_DIR).parent / "case.schema.json"


def test_there_are_at_least_150_cases_with_unique_ids() -> None:
    cases = load_cases()
    assert len(cases) >= 150
    assert len({c.id for c in cases}) == len(cases)


def test_every_rule_of_the_contract_has_a_case() -> None:
    covered = Counter(rule for case in load_cases() for rule in case.rules)
    wanted = [f"R{n}" for n in range(1, 18)] + [f"S{n}" for n in range(1, 13)] + ["ID", "WIRE", "MODEL"]
    wanted += [f"V{n}" for n in range(1, 14)] + [f"H{n}" for n in range(1, 5)] + [f"M{n}" for n in range(1, 4)]
    assert [rule for rule in wanted if not covered[rule]] == []


def test_one_file_per_area() -> None:
    areas = {path.stem: json.loads(path.read_text(encoding="utf-8"))["area"] for path in CASES_DIR.glob("*.json")}
    assert areas == {
        "resolver": "resolver",
        "store": "store",
        "wire": "wire",
        "ids": "ids",
        "records": "records",
        "service": "service",
        "history": "history",
        "memory": "memory",
        "concurrency": "concurrency",
        "watch-and-leaf": "watch-and-leaf",
    }


def test_profile_dependent_cases_are_tagged() -> None:
    tagged = {c.profile for c in load_cases() if c.rule == "R13"}
    assert tagged == {"reject", "walk-back"}


@pytest.mark.parametrize("path", sorted(CASES_DIR.glob("*.json")), ids=lambda p: p.name)
def test_case_file_follows_the_schema(path: Path) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(json.loads(path.read_text(encoding="utf-8"))),
        key=lambda e: list(e.absolute_path),
    )
    assert [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]] == []


def test_descriptions_are_one_line() -> None:
    assert [c.id for c in load_cases() if "\n" in c.description or len(c.description) > 160] == []


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"cases": []}, "area"),
        ({"area": "x", "cases": [{"id": "a b", "rule": "S1", "description": "d", "steps": []}]}, "id"),
        ({"area": "x", "cases": [{"id": "a", "rule": "S13", "description": "d", "steps": []}]}, "rule"),
        ({"area": "x", "cases": [{"id": "a", "rule": "S1", "description": "d"}]}, "exactly one of"),
        (
            {"area": "x", "cases": [{"id": "a", "rule": "S1", "description": "d", "steps": [], "profile": "x"}]},
            "profile",
        ),
        (
            {"area": "x", "cases": [{"id": "a", "rule": "S1", "description": "d", "steps": [], "requires": ["fly"]}]},
            "requires",
        ),
        ({"area": "x", "cases": [{"id": "a", "rule": "S1", "description": "d", "resolve": {}}]}, "expect"),
    ],
)
def test_malformed_case_files_are_refused_with_the_problem_named(document: object, problem: str) -> None:
    with pytest.raises(CaseFormatError, match=re.escape(problem)):
        parse_case_file(document, "bad.json")


def test_duplicate_ids_across_files_are_refused(tmp_path: Path) -> None:
    case = {"id": "same", "rule": "S1", "description": "d", "steps": []}
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps({"area": name, "cases": [case]}), encoding="utf-8")
    with pytest.raises(CaseFormatError, match=re.escape("also used in a.json")):
        load_cases(tmp_path)


def test_the_capability_list_is_the_one_the_schema_and_the_guide_name() -> None:
    from genkit_sessions_conformance.cases import CAPABILITIES, CAPABILITY_METHODS
    from genkit_sessions_conformance.store_handle import METHOD_CAPABILITIES

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    requires = _find_key(schema, "requires")["requires"]["items"]["enum"]  # type: ignore[index]
    assert requires == list(CAPABILITIES)
    guide = (CASES_DIR.parent / "IMPLEMENTING.md").read_text(encoding="utf-8")
    assert [c for c in CAPABILITIES if f"`{c}`" not in guide] == []
    assert {c: m for c, m in CAPABILITY_METHODS.items() if m is not None} == METHOD_CAPABILITIES


def _find_key(node: object, key: str) -> dict[str, object]:
    """The first JSON object under ``node`` that has ``key``."""
    if isinstance(node, dict):
        if key in node:
            return node
        for value in node.values():
            try:
                return _find_key(value, key)
            except KeyError:
                continue
    if isinstance(node, list):
        for value in node:
            try:
                return _find_key(value, key)
            except KeyError:
                continue
    raise KeyError(key)
