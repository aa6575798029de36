"""``--tenant``: one check for every command that takes it. A value no store accepts is refused by each
command with the same INVALID_ARGUMENT line, exit status 1, before anything is read or written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from genkit_sessions.dynamodb import create_table
from tests.cli_helpers import no_credentials, run, run_command, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint

COMMANDS = [
    ["sessions", "list"],
    ["sessions", "list", "--principal", "ana"],
    ["sessions", "list", "--key", "team", "--value", "support"],
    ["show", "snap-1"],
    ["tree", "sess-1"],
    ["export", "--all"],
    ["export", "--session", "sess-1"],
    ["export", "--principal", "ana"],
    ["import", "SOURCE"],
    ["import", "SOURCE", "--dry-run"],
    ["resolve", "--init", "{}"],
    ["resolve", "--init", '{"sessionId": "sess-1"}'],
]

HINT = (
    "; pass the tenant's id (at most 512 UTF-8 bytes, not only spaces, no control characters), "
    "or leave --tenant out for the default tenant"
)
BAD = {
    "empty": ("", "--tenant '' names no tenant"),
    "spaces": ("   ", "--tenant '   ' must not be empty or whitespace-only"),
    "a control character": ("a\x1fb", "--tenant 'a\\x1fb' contains the control character U+001F at index 1"),
    "a newline": ("acme\n", "--tenant 'acme\\n' contains the control character U+000A at index 4"),
    "too long": ("t" * 513, "--tenant '" + "t" * 76 + "... is 513 UTF-8 bytes long; the limit is 512"),
}


@pytest.fixture(scope="module")
def table() -> list[str]:
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)
    name = table_name()
    create_table(client, name)
    return ["--table", name, "--endpoint-url", server_endpoint()]


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def argv_for(command: list[str], tmp_path: Path) -> list[str]:
    source = tmp_path / "empty.jsonl"
    source.write_text("")
    return [str(source) if word == "SOURCE" else word for word in command]


@pytest.mark.parametrize("bad", list(BAD), ids=str)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_tenant_no_store_accepts_is_the_same_invalid_argument_for_every_command(
    table: list[str], capsys: Any, tmp_path: Path, command: list[str], bad: str
) -> None:
    value, problem = BAD[bad]
    code, out, err = run(capsys, *argv_for(command, tmp_path), *table, "--tenant", value)
    assert code == 1 and out == ""
    assert err.splitlines()[-1] == f"INVALID_ARGUMENT: {problem}{HINT}"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_valid_tenant_with_spaces_and_quotes_is_accepted_by_every_command(
    table: list[str], capsys: Any, tmp_path: Path, command: list[str]
) -> None:
    code, _, err = run(capsys, *argv_for(command, tmp_path), *table, "--tenant", "o'brien & co")
    assert "INVALID_ARGUMENT" not in err
    assert code in (0, 1) and (code == 0 or err.splitlines()[-1].startswith("NOT_FOUND: "))


def test_a_whitespace_tenant_as_a_real_command_is_refused_without_a_traceback(table: list[str]) -> None:
    result = run_command("sessions", "list", *table, "--tenant", " ")
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("INVALID_ARGUMENT: --tenant ' ' must not be empty")
