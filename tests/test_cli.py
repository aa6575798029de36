"""The ``genkit-sessions`` command: the demo narrates every resolver path and draws the tree; every command
exits 0 / 1 / 2, prints errors as ``STATUS: message``, survives a closed pipe and Ctrl-C, and reaches a local
endpoint without configured credentials."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from genkit_sessions import InMemorySessionStore, SnapshotStatus, __version__
from genkit_sessions.cli import demo
from genkit_sessions.cli.demo import run_demo
from genkit_sessions.cli.main import main
from genkit_sessions.errors import GenkitError
from tests.cli_helpers import env_without_credentials, no_credentials, run, run_command, table_name
from tests.dynamodb_backends import server_endpoint


def test_demo_walks_every_path_and_ends_with_the_tree() -> None:
    out = io.StringIO()
    tree = run_demo(InMemorySessionStore(), out)
    text = out.getvalue()
    for rule in (
        "R14 -> fresh",
        "R12 -> resumed_by_session_id",
        "raised (R13)",
        "R13 -> resumed_by_session_id",
        "R10 -> resumed_by_snapshot_id",
        "R3 -> hydrated",
        "raised (R1)",
        "raised (R2)",
        "raised (R5)",
        "raised (R6)",
        "raised (R7)",
        "raised (R8)",
        "raised (R9)",
    ):
        assert rule in text, rule
    assert [s.effective_status for s in tree] == [
        SnapshotStatus.COMPLETED,
        SnapshotStatus.COMPLETED,
        SnapshotStatus.FAILED,
        SnapshotStatus.COMPLETED,
    ]
    assert tree[2].parent_id == tree[3].parent_id == tree[1].snapshot_id
    assert "<- leaf" in text.split("The session service")[0]


def test_demo_ends_with_a_service_session_created_looked_up_refused_compacted_and_forked() -> None:
    out = io.StringIO()
    run_demo(InMemorySessionStore(), out)
    service_part = out.getvalue().split("The session service")[1]
    assert "for principal ana (version 0" in service_part
    assert "ok=False; the session is at version 4, unchanged" in service_part
    assert "covered 6 messages, kept 2" in service_part
    assert "full history (9)" in service_part and "(3):" in service_part
    assert service_part.rstrip().endswith("the fork still has 9")


def test_console_command_runs_the_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "genkit_sessions.cli.main", "demo"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "The session's snapshot tree" in result.stdout


def test_main_returns_zero_after_the_demo(capsys: object) -> None:
    assert main(["demo", "--store", "memory"]) == 0


# --- command hygiene -------------------------------------------------------------------------------


def test_version_prints_the_package_version_and_exits_zero(capsys: Any) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"genkit-sessions {__version__}"


def test_a_usage_error_exits_two_with_argparses_message(capsys: Any) -> None:
    code, _, err = run(capsys, "no-such-command")
    assert code == 2 and "invalid choice" in err
    code, _, err = run(capsys, "dynamodb", "create-table")
    assert code == 2 and "--table" in err


def test_a_genkit_error_exits_one_printed_as_status_colon_message(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(_: Any) -> int:
        raise GenkitError("NOT_FOUND", "no session 's1'; list them with `genkit-sessions sessions list`")

    monkeypatch.setattr(demo, "_run", fail)
    code, out, err = run(capsys, "demo")
    assert code == 1 and out == ""
    assert err == "NOT_FOUND: no session 's1'; list them with `genkit-sessions sessions list`\n"


def test_ctrl_c_exits_130_with_a_one_line_message_and_no_traceback(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(_: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_run", interrupted)
    code, _, err = run(capsys, "demo")
    assert code == 130 and err == "CANCELLED: interrupted\n"


def test_a_closed_pipe_ends_the_demo_quietly_without_a_traceback() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "genkit_sessions.cli.main", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # what `| head` does once it has its lines; closed before the demo's first write
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["demo"],
        ["conformance"],
        ["dynamodb", "create-table"],
        ["dynamodb", "doctor"],
        ["sessions", "list"],
        ["show"],
        ["tree"],
        ["export"],
        ["import"],
        ["resolve"],
    ],
)
def test_every_subcommand_help_ends_with_an_example(capsys: Any, argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv, "--help")
    assert code == 0
    example = out.split("example")[-1]
    assert "genkit-sessions " + argv[0] in example


def test_create_table_on_a_local_endpoint_without_credentials_uses_placeholders_and_says_so(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_credentials(monkeypatch)
    table = table_name()
    code, out, err = run(capsys, "dynamodb", "create-table", "--table", table, "--endpoint-url", server_endpoint())
    assert code == 0, err
    assert f"DynamoDB table {table!r} is ready" in out
    assert "note: no AWS credentials are configured; using placeholder credentials" in err


def test_create_table_as_a_real_command_against_a_moto_server_without_credentials() -> None:
    table = table_name()
    result = run_command("dynamodb", "create-table", "--table", table, "--endpoint-url", server_endpoint())
    assert result.returncode == 0, result.stderr
    assert "placeholder credentials" in result.stderr
    again = run_command("dynamodb", "create-table", "--table", table, "--endpoint-url", server_endpoint())
    assert again.returncode == 1 and again.stderr.splitlines()[-1].startswith("ALREADY_EXISTS: ")
    assert "Traceback" not in again.stderr
    assert env_without_credentials().get("AWS_ACCESS_KEY_ID") is None
