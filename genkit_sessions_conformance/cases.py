"""Loading the cases: JSON files under ``conformance/cases``, one per area.

A file is ``{"area": ..., "description": ..., "cases": [...]}``. Loading checks
what the runner relies on (unique ids, known rules, profiles and capabilities,
exactly one kind of action per case) and expands ``{"$repeat": [text, n]}``
into ``text * n`` so long ids stay readable in the files. The full format is
``case.schema.json``.
"""

from __future__ import annotations

import difflib
import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Status

__all__ = [
    "ACTIONS",
    "CAPABILITIES",
    "CASES_DIR",
    "Capability",
    "PROFILES",
    "SHIPPED_DIR",
    "Case",
    "CaseFormatError",
    "expand",
    "load_cases",
    "parse_case_file",
    "select_cases",
]


def _shipped_dir() -> Path:
    """Where the shipped cases, their schema and IMPLEMENTING.md are: ``data/`` inside the installed
    package (a wheel puts the repository's ``conformance/`` folder there), else, in a checkout of the
    repository, that folder itself."""
    installed = Path(__file__).with_name("data")
    if (installed / "cases").is_dir():
        return installed
    return Path(__file__).resolve().parents[1] / "conformance"


SHIPPED_DIR = _shipped_dir()
"""The folder of the shipped case files (``cases/``), ``case.schema.json`` and ``IMPLEMENTING.md``."""
CASES_DIR = SHIPPED_DIR / "cases"
PROFILES = ("reject", "walk-back")


class Capability(str, enum.Enum):
    """The one list of optional capabilities a store may have, each with the store method that provides
    it (None: probed, as tenancy is, by writing under one tenant and reading under another, and processes
    by the factory having a ``share(store)`` that opens the same store in another process).

    Everything else follows it: the runner's detection, ``--claim``, the case format's ``requires``, the
    case schema and IMPLEMENTING.md (a test keeps the last two in step). Members equal their names
    (``Capability.LIST == "list"``).
    """

    method: str | None

    def __new__(cls, name: str, method: str | None) -> Capability:
        member = str.__new__(cls, name)
        member._value_ = name
        member.method = method
        return member

    def __str__(self) -> str:
        return str(self.value)

    RESTORE = ("restore", "restore_snapshots")
    LIST = ("list", "list_snapshots")
    DELETE = ("delete", "delete_session")
    ABORT = ("abort", "abort_snapshot")
    HEARTBEAT = ("heartbeat", "heartbeat")
    WATCH = ("watch", "watch_status")
    RECORDS = ("records", "get_session_record")
    SESSIONS = ("sessions", "create_session")
    HISTORY = ("history", "read_window")
    TENANCY = ("tenancy", None)
    PROCESSES = ("processes", None)


CAPABILITIES: tuple[str, ...] = tuple(c.value for c in Capability)
"""The capability names, in :class:`Capability` order."""
CAPABILITY_METHODS: dict[str, str | None] = {c.value: c.method for c in Capability}
"""Capability name -> the store method that provides it (None: probed)."""
ACTIONS = ("resolve", "steps", "codec")
LEVELS = ("must", "should")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RULE = re.compile(r"^(R([1-9]|1[0-7])|S([1-9]|1[0-2])|V([1-9]|1[0-3])|H[1-4]|M[1-4]|G[1-4]|ID|WIRE|MODEL)$")


class CaseFormatError(ValueError):
    """A case file does not follow the case format; the message names the file and the case."""


@attrs.frozen
class Case:
    """One conformance case: the behaviour it pins, and the raw (expanded) JSON that describes it."""

    id: str
    area: str
    rules: tuple[str, ...]
    description: str
    action: str
    profile: str | None = None
    requires: frozenset[str] = frozenset()
    level: str = "must"
    data: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)

    @property
    def rule(self) -> str:
        """The main rule the case pins (the first one listed)."""
        return self.rules[0]


def expand(value: Any) -> Any:
    """Replace every ``{"$repeat": [text, n]}`` with ``text * n``, recursively."""
    if isinstance(value, Mapping):
        if set(value) == {"$repeat"}:
            spec = value["$repeat"]
            if not (
                isinstance(spec, list)
                and len(spec) == 2
                and isinstance(spec[0], str)
                and isinstance(spec[1], int)
                and not isinstance(spec[1], bool)
                and spec[1] >= 0
            ):
                raise CaseFormatError(f"$repeat takes [text, count], got {spec!r}")
            return spec[0] * spec[1]
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def _case(raw: Any, area: str, where: str) -> Case:
    if not isinstance(raw, Mapping):
        raise CaseFormatError(f"{where}: a case must be an object")
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not _ID.match(case_id):
        raise CaseFormatError(f"{where}: id {case_id!r} must match {_ID.pattern}")
    where = f"{where} ({case_id})"
    rules = raw.get("rules") if "rules" in raw else [raw.get("rule")]
    if not isinstance(rules, list) or not rules or not all(isinstance(r, str) and _RULE.match(r) for r in rules):
        raise CaseFormatError(
            f"{where}: rule(s) {rules!r} must be rule ids of docs/contract.md: "
            "R1-R17, S1-S12, V1-V13, H1-H4, M1-M4, G1-G4, ID, WIRE or MODEL"
        )
    description = raw.get("description")
    if not isinstance(description, str) or not description.strip():
        raise CaseFormatError(f"{where}: description must be a non-empty string")
    actions = [a for a in ACTIONS if a in raw]
    if len(actions) != 1:
        raise CaseFormatError(f"{where}: a case has exactly one of {', '.join(ACTIONS)}; found {actions or 'none'}")
    if actions[0] != "steps" and not isinstance(raw.get("expect"), Mapping):
        raise CaseFormatError(f"{where}: a {actions[0]} case needs an expect object")
    profile = raw.get("profile")
    if profile is not None and profile not in PROFILES:
        raise CaseFormatError(f"{where}: profile {profile!r} is not one of {PROFILES}")
    requires = raw.get("requires", [])
    if not isinstance(requires, list) or any(r not in CAPABILITIES for r in requires):
        raise CaseFormatError(f"{where}: requires {requires!r} must list capabilities from {CAPABILITIES}")
    level = raw.get("level", "must")
    if level not in LEVELS:
        raise CaseFormatError(f"{where}: level {level!r} is not one of {LEVELS}")
    return Case(
        id=case_id,
        area=area,
        rules=tuple(rules),
        description=description,
        action=actions[0],
        profile=profile,
        requires=frozenset(requires),
        level=level,
        data=expand(dict(raw)),
    )


def parse_case_file(document: Any, where: str = "<cases>") -> list[Case]:
    """The cases of one parsed case file."""
    if not isinstance(document, Mapping):
        raise CaseFormatError(f"{where}: a case file must be a JSON object")
    area = document.get("area")
    if not isinstance(area, str) or not area:
        raise CaseFormatError(f"{where}: area must be a non-empty string")
    raw_cases = document.get("cases")
    if not isinstance(raw_cases, list):
        raise CaseFormatError(f"{where}: cases must be an array")
    return [_case(raw, area, f"{where}[{index}]") for index, raw in enumerate(raw_cases)]


def load_cases(
    directory: Path | None = None,
    *,
    areas: Iterable[str] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Case]:
    """Every case under ``directory`` (default: the shipped cases), optionally only some areas or ids.

    Raises :class:`CaseFormatError` for a malformed file or a duplicate id.
    """
    directory = CASES_DIR if directory is None else directory
    wanted_areas = None if areas is None else set(areas)
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise CaseFormatError(f"{path.name}: not valid JSON: {exc}") from None
        for case in parse_case_file(document, path.name):
            if case.id in seen:
                raise CaseFormatError(f"{path.name}: case id {case.id!r} is also used in {seen[case.id]}")
            seen[case.id] = path.name
            if wanted_areas is not None and case.area not in wanted_areas:
                continue
            if ids is not None and case.id not in ids:
                continue
            cases.append(case)
    return cases


def select_cases(
    areas: Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    directory: Path | None = None,
) -> list[Case]:
    """The cases of ``areas`` and ``ids`` (None: all), refusing a selection that names nothing.

    An area no case has, an id no case has, or areas and ids with no case in common is
    INVALID_ARGUMENT naming what was asked for and what exists (the valid areas, an id's close
    matches), so a typo can never make a run pass having run fewer cases, or none.
    """
    everything = load_cases(directory)
    wanted_areas = None if areas is None else list(areas)
    wanted_ids = None if ids is None else list(ids)
    known_areas = sorted({c.area for c in everything})
    unknown = [a for a in wanted_areas or () if a not in known_areas]
    if unknown:
        hints = [_with_close_matches(area, known_areas, 1) for area in unknown]
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"--area {', '.join(hints)}: no such area; the areas are {', '.join(known_areas)}",
        )
    known_ids = [c.id for c in everything]
    missing = [i for i in wanted_ids or () if i not in known_ids]
    if missing:
        hints = [_with_close_matches(case_id, known_ids, 3) for case_id in missing]
        where = CASES_DIR if directory is None else directory
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"--case {', '.join(hints)}: no case has this id; give an id from the case files ({where}) "
            "or the JSON report (--json)",
        )
    cases = [
        c
        for c in everything
        if (wanted_areas is None or c.area in wanted_areas) and (wanted_ids is None or c.id in wanted_ids)
    ]
    if not cases:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            "no case matches both --area and --case (each case id belongs to one area); drop one of them "
            "or name the case's own area",
        )
    return cases


def _with_close_matches(name: str, known: list[str], n: int) -> str:
    """``name`` quoted, with up to ``n`` of the ``known`` names it is closest to."""
    close = difflib.get_close_matches(name, known, n=n)
    return f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else "")
