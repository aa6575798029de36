"""The command line: tables on stdout, JSON and JUnit XML files, and an exit status CI can use."""

from __future__ import annotations

import io
import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions.cli.main import main as genkit_sessions_main
from genkit_sessions_conformance.cli import load_factory, main
from genkit_sessions_conformance.factories import memory
from genkit_sessions_conformance.report import GENERATED_MARKER, progress_printer


def test_python_m_conformance_passes_the_memory_store_and_writes_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["--json", str(tmp_path / "r.json"), "--junit-xml", str(tmp_path / "r.xml"), "--by-rule"])
    out = capsys.readouterr().out
    assert status == 0
    assert "| resolver " in out and "| S12 " in out and out.rstrip().endswith("|")
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["ok"] is True and data["summary"]["failed"] == 0
    assert len(data["cases"]) == len(conformance.load_cases())
    suites = ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")
    assert {s.get("name") for s in suites} == {
        "resolver",
        "store",
        "wire",
        "ids",
        "records",
        "service",
        "history",
        "memory",
        "concurrency",
        "watch-and-leaf",
    }
    assert sum(int(s.get("tests", 0)) for s in suites) == len(data["cases"])


def test_a_broken_store_exits_non_zero_and_names_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--store", "tests.conformance.broken_stores:OldestLeaf", "--junit-xml", str(tmp_path / "r.xml")])
    out = capsys.readouterr().out
    assert status == 1
    assert "[S8]" in out and "FAIL: required cases failed" in out
    failures = ET.parse(tmp_path / "r.xml").getroot().iter("failure")
    assert any(f.get("type") == "S8" for f in failures)


def test_genkit_sessions_conformance_runs_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert genkit_sessions_main(["conformance", "--area", "ids", "--profile", "walk-back"]) == 0
    assert "| ids " in capsys.readouterr().out


def test_markdown_output_keeps_the_hand_written_preface(tmp_path: Path) -> None:
    target = tmp_path / "results.md"
    target.write_text(f"# Notes\n\nkept\n{GENERATED_MARKER}\nstale\n", encoding="utf-8")
    assert main(["--area", "ids", "--markdown", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert text.startswith(f"# Notes\n\nkept\n{GENERATED_MARKER}\n")
    assert "stale" not in text and "| `ID-store-unicode` | ids | passed |" in text


@pytest.mark.parametrize(
    "spec", ["no-colon", "genkit_sessions:nothing_here", "no_such_module_x:f", "conformance:PROFILES"]
)
def test_a_bad_store_spec_is_refused_with_a_message(spec: str) -> None:
    with pytest.raises(SystemExit, match="--store"):
        load_factory(spec)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_is_rewritten_in_place_on_a_terminal() -> None:
    stream = _Tty()
    conformance.run_suite(memory, areas=["ids"], on_result=progress_printer(stream))
    text = stream.getvalue()
    assert text.count("\r") >= len(conformance.load_cases(areas=["ids"]))
    assert "\n" not in text


def test_progress_prints_only_failures_when_not_a_terminal() -> None:
    stream = io.StringIO()
    conformance.run_suite(memory, areas=["ids"], on_result=progress_printer(stream))
    assert stream.getvalue() == ""


@pytest.mark.parametrize("option", ["--json", "--junit-xml", "--markdown"])
@pytest.mark.parametrize("where", ["missing directory", "a directory"])
def test_an_unwritable_report_path_is_invalid_argument_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, where: str
) -> None:
    target = tmp_path / "no-such-dir" / "report" if where == "missing directory" else tmp_path
    assert main(["--area", "ids", option, str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no summary table: the cases never ran
    assert captured.err.startswith(f"INVALID_ARGUMENT: {option} {target}: ")
    assert ("does not exist; create it" if where == "missing directory" else "is a directory; give a file name") in (
        captured.err
    )
    assert captured.err.count("\n") == 1 and not (tmp_path / "no-such-dir").exists()


def test_genkit_sessions_conformance_refuses_an_unwritable_report_path_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "r.json"
    assert genkit_sessions_main(["conformance", "--area", "ids", "--json", str(target)]) != 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"INVALID_ARGUMENT: --json {target}: the directory")


def test_the_markdown_command_line_reruns_the_same_selection_shell_quoted(tmp_path: Path) -> None:
    target = tmp_path / "my results.md"
    argv = ["--area", "ids", "--case", "ID-store-unicode", "--case", "ID-snapshot-id-513-bytes", "--claim", "list"]
    assert main([*argv, "--profile", "walk-back", "--markdown", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    command = next(line for line in text.splitlines() if line.startswith("Command: `"))[len("Command: `") : -1]
    assert shlex.split(command) == [
        "python",
        "-m",
        "genkit_sessions_conformance",
        "--store",
        "genkit_sessions_conformance.factories:memory",
        "--profile",
        "walk-back",
        "--claim",
        "list",
        "--area",
        "ids",
        "--case",
        "ID-store-unicode",
        "--case",
        "ID-snapshot-id-513-bytes",
        "--markdown",
        str(target),
    ]
