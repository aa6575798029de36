"""Commands the CLI suggests (in errors, in ``dynamodb doctor`` fixes, in hints) are shell-quoted and carry the
options that reach the same table: a table name, tenant or endpoint with spaces or quotes still runs as shown."""

from __future__ import annotations

import shlex
import subprocess
import sys
from typing import Any

import boto3
import pytest

from genkit_sessions.dynamodb import create_table
from tests.cli_helpers import env_without_credentials, no_credentials, run, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint

AWKWARD = 'it\'s a "table" $HOME'
TENANT = "o'brien & co"


def client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def quoted(text: str) -> str:
    """The command between the last pair of backticks in ``text``."""
    return text.rsplit("`", 2)[1]


def run_in_shell(command: str) -> subprocess.CompletedProcess[str]:
    """``command`` (a suggested ``genkit-sessions ...`` line) run by the shell, as a user would paste it."""
    assert command.startswith("genkit-sessions ")
    real = shlex.join([sys.executable, "-m", "genkit_sessions.cli.main"])
    return subprocess.run(
        real + command.removeprefix("genkit-sessions"),
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        env=env_without_credentials(),
    )


def test_the_create_table_a_missing_table_suggests_is_quoted_and_runs_as_shown(capsys: Any) -> None:
    name = f"{AWKWARD} {table_name()}"
    code, _, err = run(capsys, "sessions", "list", "--table", name, "--endpoint-url", server_endpoint())
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: DynamoDB table ")
    suggested = quoted(err)
    assert shlex.split(suggested) == [
        "genkit-sessions", "dynamodb", "create-table", "--table", name, "--endpoint-url", server_endpoint()
    ]  # fmt: skip
    created = run_in_shell(suggested)
    assert created.returncode == 0, created.stderr
    code, _, err = run(capsys, "sessions", "list", "--table", name, "--endpoint-url", server_endpoint())
    assert code == 0, err


def test_every_doctor_fix_is_quoted_and_the_create_table_fix_runs_as_shown(capsys: Any) -> None:
    name = f"{AWKWARD} {table_name()}"
    args = ["--table", name, "--endpoint-url", server_endpoint(), "--region", "us-east-1"]
    code, out, err = run(capsys, "dynamodb", "doctor", *args, "--json")
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: ")
    fix = json_findings(out)["table"]["fix"]
    assert shlex.split(fix) == ["genkit-sessions", "dynamodb", "create-table", *args]
    assert run_in_shell(fix).returncode == 0
    code, _, err = run(capsys, "dynamodb", "doctor", *args)
    assert code == 0, err


def json_findings(out: str) -> dict[str, Any]:
    import json

    return {f["check"]: f for f in json.loads(out)["findings"]}


def test_the_doctor_fixes_for_wrong_keys_and_ttl_split_back_into_their_words(capsys: Any) -> None:
    name = f"{AWKWARD} {table_name()}"
    client().create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    endpoint = ["--endpoint-url", server_endpoint()]
    code, out, _ = run(capsys, "dynamodb", "doctor", "--table", name, *endpoint, "--json")
    findings = json_findings(out)
    assert code == 1
    assert shlex.split(findings["ttl"]["fix"]) == [
        "aws", "dynamodb", "update-time-to-live", "--table-name", name, *endpoint,
        "--time-to-live-specification", "Enabled=true,AttributeName=exp",
    ]  # fmt: skip
    keys = findings["key schema"]["fix"]
    create = keys.split("create a new table (", 1)[1].split("), then", 1)[0]
    assert shlex.split(create) == ["genkit-sessions", "dynamodb", "create-table", "--table", f"{name}-v2", *endpoint]
    copy = keys.rsplit(": ", 1)[1]
    export, imported = copy.split(" | ")
    assert shlex.split(export) == ["genkit-sessions", "export", "--all", "--table", name, *endpoint]
    assert shlex.split(imported) == ["genkit-sessions", "import", "-", "--table", f"{name}-v2", *endpoint]


@pytest.fixture(scope="module")
def table() -> list[str]:
    name = f"{AWKWARD} {table_name()}"
    create_table(client(), name)
    return ["--table", name, "--endpoint-url", server_endpoint(), "--tenant", TENANT]


def test_the_tree_a_missing_snapshot_suggests_names_the_same_table_and_tenant_quoted(
    table: list[str], capsys: Any
) -> None:
    code, _, err = run(capsys, "show", "no such snapshot", *table)
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: no snapshot 'no such snapshot'")
    assert shlex.split(quoted(err)) == ["genkit-sessions", "tree", "SESSION_ID", *table]


@pytest.mark.parametrize("command", [["tree", "no such session"], ["export", "--session", "no such session"]])
def test_the_sessions_list_a_missing_session_suggests_runs_as_shown(
    table: list[str], capsys: Any, command: list[str]
) -> None:
    code, _, err = run(capsys, *command, *table)
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: ")
    suggested = quoted(err)
    assert shlex.split(suggested) == ["genkit-sessions", "sessions", "list", *table]
    listed = run_in_shell(suggested)
    assert listed.returncode == 0, listed.stderr
