"""The contract in docs/contract.md and everything that cites it agree on the rule ids."""

from __future__ import annotations

import re
from pathlib import Path

from genkit_sessions_conformance import load_cases
from genkit_sessions_conformance.cases import _RULE
from genkit_sessions_conformance.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")


def _table_ids() -> list[str]:
    return re.findall(r"^\| ([RSVHMG]\d+) \|", CONTRACT, flags=re.MULTILINE)


def test_the_contract_states_every_rule_once_in_table_order() -> None:
    ids = _table_ids()
    expected = (
        [f"R{n}" for n in range(1, 18)]
        + [f"S{n}" for n in range(1, 13)]
        + [f"V{n}" for n in range(1, 14)]
        + [f"H{n}" for n in range(1, 5)]
        + [f"M{n}" for n in range(1, 5)]
        + [f"G{n}" for n in range(1, 5)]
    )
    assert ids == expected


def test_the_report_quotes_a_line_for_every_rule_of_the_contract_and_no_other() -> None:
    assert sorted(RULES) == sorted([*_table_ids(), "ID", "WIRE", "MODEL"])
    for name in ("MODEL", "WIRE", "ID"):
        assert f"(`{name}`)" in CONTRACT


def test_every_rule_id_a_case_may_pin_is_in_the_contract() -> None:
    assert all(_RULE.match(rule) for rule in RULES)
    pinned = {rule for case in load_cases() for rule in case.rules}
    assert pinned <= set(RULES)


def test_implementing_guide_points_to_the_contract_and_the_python_protocol() -> None:
    guide = (ROOT / "conformance" / "IMPLEMENTING.md").read_text(encoding="utf-8")
    assert "../docs/contract.md" in guide
    assert "genkit_sessions/stores/protocol.py" in guide
    assert "SPEC" not in guide


def test_no_document_or_case_file_cites_a_spec_outside_the_repository() -> None:
    cited = [
        path.relative_to(ROOT).as_posix()
        for path in [
            ROOT / "README.md",
            *ROOT.glob("conformance/cases/*.json"),
            ROOT / "conformance" / "js" / "runner.mjs",
        ]
        if "SPEC" in path.read_text(encoding="utf-8")
    ]
    assert cited == []
