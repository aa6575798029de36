"""Reporters: the live progress line, the per-area (and per-rule) tables, JSON and JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from conformance.runner import CaseResult, SuiteReport

__all__ = [
    "progress_printer",
    "render_rule_table",
    "render_summary",
    "to_json",
    "to_junit_xml",
    "write_json",
    "write_junit",
]

_OUTCOMES = ("passed", "failed", "skipped")


def progress_printer(stream: IO[str]) -> Callable[[int, int, CaseResult], None]:
    """A callback that keeps one live line up to date (``[ 57/308] resolver R12-linear-chain``).

    On a terminal the line is rewritten in place; otherwise only failures are printed as they happen.
    """
    live = stream.isatty()
    failed = 0

    def show(index: int, total: int, result: CaseResult) -> None:
        nonlocal failed
        failed += result.outcome == "failed"
        if live:
            width = len(str(total))
            line = f"[{index:>{width}}/{total}] {failed} failed  {result.case.area:<8} {result.case.id}"
            stream.write("\r" + line[:100].ljust(100))
            if index == total:
                stream.write("\r" + " " * 100 + "\r")
        elif result.outcome == "failed":
            stream.write(f"FAIL {result.case.id}: {result.message}\n")
        stream.flush()

    return show


def _table(headers: list[str], rows: Iterable[list[str]]) -> str:
    rows = list(rows)
    widths = [
        max(len(headers[i]), *(len(r[i]) for r in rows)) if rows else len(headers[i]) for i in range(len(headers))
    ]

    def line(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    rule = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def _counts(results: Iterable[CaseResult]) -> list[str]:
    tally = Counter(r.outcome for r in results)
    return [str(tally[o]) for o in _OUTCOMES] + [str(sum(tally.values()))]


def render_summary(report: SuiteReport) -> str:
    """The header, the capabilities, a table per area, the failures and why cases were skipped."""
    areas: dict[str, list[CaseResult]] = {}
    for result in report.results:
        areas.setdefault(result.case.area, []).append(result)
    caps = ", ".join(f"{name} {'yes' if found else 'no'}" for name, found in report.capabilities.items())
    lines = [
        f"conformance: store {report.store}, profile {report.profile}, "
        f"{len(report.results)} cases in {report.seconds:.2f} s",
        f"capabilities: {caps}"
        + (
            f" (claimed, not detected: {', '.join(report.claimed_not_detected)})" if report.claimed_not_detected else ""
        ),
        "",
        _table(
            ["area", *_OUTCOMES, "total"],
            [[area, *_counts(results)] for area, results in areas.items()] + [["all", *_counts(report.results)]],
        ),
    ]
    if report.failures:
        lines += ["", "failures:"]
        for result in report.failures:
            optional = "" if result.case.level == "must" else " (should: does not fail the run)"
            lines.append(f"  {result.case.id}{optional}: {result.message}")
    skipped = Counter(r.message for r in report.results if r.outcome == "skipped")
    if skipped:
        lines += ["", "skipped: " + "; ".join(f"{why} ({n})" for why, n in sorted(skipped.items()))]
    lines += ["", "PASS" if report.ok else "FAIL: required cases failed"]
    return "\n".join(lines)


def render_rule_table(report: SuiteReport) -> str:
    """Outcomes counted by the rule each case pins (its first rule)."""
    rules: dict[str, list[CaseResult]] = {}
    for result in report.results:
        rules.setdefault(result.case.rule, []).append(result)

    def order(rule: str) -> tuple[int, int, str]:
        kind = {"R": 0, "S": 1}.get(rule[0], 2)
        return (kind, int(rule[1:]) if kind < 2 else 0, rule)

    return _table(["rule", *_OUTCOMES, "total"], [[rule, *_counts(rules[rule])] for rule in sorted(rules, key=order)])


def to_json(report: SuiteReport) -> dict[str, Any]:
    """The report as plain JSON data."""
    return {
        "store": report.store,
        "profile": report.profile,
        "seconds": round(report.seconds, 4),
        "ok": report.ok,
        "capabilities": dict(report.capabilities),
        "claimedNotDetected": list(report.claimed_not_detected),
        "summary": {outcome: report.count(outcome) for outcome in _OUTCOMES},
        "cases": [
            {
                "id": r.case.id,
                "area": r.case.area,
                "rules": list(r.case.rules),
                "level": r.case.level,
                "description": r.case.description,
                "outcome": r.outcome,
                "message": r.message,
                "seconds": round(r.seconds, 6),
            }
            for r in report.results
        ],
    }


def write_json(report: SuiteReport, path: Path) -> None:
    """Write :func:`to_json` to ``path``."""
    path.write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def to_junit_xml(report: SuiteReport) -> ET.Element:
    """The report as JUnit XML: one ``testsuite`` per area, one ``testcase`` per case."""
    root = ET.Element("testsuites", name=f"conformance ({report.store}, {report.profile})")
    areas: dict[str, list[CaseResult]] = {}
    for result in report.results:
        areas.setdefault(result.case.area, []).append(result)
    for area, results in areas.items():
        tally = Counter(r.outcome for r in results)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=area,
            tests=str(len(results)),
            failures=str(tally["failed"]),
            skipped=str(tally["skipped"]),
            errors="0",
            time=f"{sum(r.seconds for r in results):.4f}",
        )
        for r in results:
            case = ET.SubElement(
                suite, "testcase", classname=f"conformance.{area}", name=r.case.id, time=f"{r.seconds:.6f}"
            )
            if r.outcome == "failed":
                ET.SubElement(case, "failure", message=r.message, type=r.case.rule).text = r.case.description
            elif r.outcome == "skipped":
                ET.SubElement(case, "skipped", message=r.message)
    return root


def write_junit(report: SuiteReport, path: Path) -> None:
    """Write :func:`to_junit_xml` to ``path``."""
    tree = ET.ElementTree(to_junit_xml(report))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
