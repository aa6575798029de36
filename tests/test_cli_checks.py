"""``resolve --init`` (a dry run that names the deciding rule and writes nothing) and ``dynamodb doctor``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from genkit_sessions.cli.demo import run_demo
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from tests.cli_helpers import no_credentials, run, run_command, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint


def client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)


@pytest.fixture(scope="module")
def demo() -> tuple[DynamoDBSessionStore, list[Any]]:
    name = table_name()
    create_table(client(), name)
    store = DynamoDBSessionStore(name, client())
    return store, run_demo(store, io.StringIO())


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def args(store: DynamoDBSessionStore) -> list[str]:
    return ["--table", store.table_name, "--endpoint-url", server_endpoint()]


def test_resolve_by_session_id_names_r12_and_the_leaf_without_writing(demo: Any, capsys: Any) -> None:
    store, tree = demo
    session_id = tree[0].session_id
    before = store.get_session_record(session_id)
    init = json.dumps({"sessionId": session_id})
    code, out, _ = run(capsys, "resolve", "--init", init, *args(store), "--json")
    found = json.loads(out)
    assert code == 0 and found["rule"] == "R12" and found["source"] == "resumed_by_session_id"
    assert found["snapshotId"] == tree[3].snapshot_id and found["messages"] == 6
    assert store.get_session_record(session_id) == before


def test_resolve_of_a_failed_snapshot_says_r9_raises(demo: Any, capsys: Any) -> None:
    store, tree = demo
    code, _, err = run(capsys, "resolve", "--init", json.dumps({"snapshotId": tree[2].snapshot_id}), *args(store))
    assert code == 1 and err.splitlines()[-1].startswith("FAILED_PRECONDITION")
    assert "R9 raises" in err


def test_resolve_of_nothing_is_a_fresh_session(demo: Any, capsys: Any) -> None:
    code, out, _ = run(capsys, "resolve", "--init", "{}", *args(demo[0]))
    assert code == 0 and out.startswith("R14: fresh session ")


def test_resolve_misuse_raises_with_its_rule_and_exit_one(demo: Any, capsys: Any) -> None:
    code, _, err = run(capsys, "resolve", "--init", '{"sessionId": "   "}', *args(demo[0]))
    assert code == 1 and "R6 raises" in err.splitlines()[-1]
    code, _, err = run(capsys, "resolve", "--init", '{"sessionID": "x"}', *args(demo[0]))
    assert code == 1 and "INVALID_ARGUMENT" in err and "sessionID" in err


def test_doctor_passes_a_table_made_by_create_table(capsys: Any) -> None:
    name = table_name()
    create_table(client(), name)
    code, out, _ = run(capsys, "dynamodb", "doctor", "--table", name, "--endpoint-url", server_endpoint())
    assert code == 0, out
    assert [line.split()[0] for line in out.splitlines()] == ["ok"] * 4


def test_doctor_of_a_missing_table_is_not_found_as_for_every_command_and_says_to_create_it(capsys: Any) -> None:
    code, out, err = run(capsys, "dynamodb", "doctor", "--table", "ghost", "--endpoint-url", server_endpoint())
    assert code == 1 and "FAIL table: table 'ghost' does not exist" in out
    assert f"fix: genkit-sessions dynamodb create-table --table ghost --endpoint-url {server_endpoint()}" in out
    assert err.splitlines()[-1] == (
        "NOT_FOUND: DynamoDB table 'ghost' does not exist; create it with "
        f"`genkit-sessions dynamodb create-table --table ghost --endpoint-url {server_endpoint()}`"
    )


def test_doctor_finds_wrong_keys_and_ttl_off_each_with_a_fix(capsys: Any) -> None:
    name = table_name()
    client().create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    code, out, _ = run(capsys, "dynamodb", "doctor", "--table", name, "--endpoint-url", server_endpoint(), "--json")
    findings = {f["check"]: f for f in json.loads(out)["findings"]}
    assert code == 1
    assert not findings["key schema"]["ok"] and "create-table" in findings["key schema"]["fix"]
    assert not findings["ttl"]["ok"] and "update-time-to-live" in findings["ttl"]["fix"]
    assert "AttributeName=exp" in findings["ttl"]["fix"]


def test_resolve_and_doctor_as_real_commands_against_a_moto_server(demo: Any) -> None:
    store, tree = demo
    resolved = run_command("resolve", "--init", json.dumps({"sessionId": tree[0].session_id}), *args(store))
    assert resolved.returncode == 0 and resolved.stdout.startswith("R12: "), resolved.stderr
    doctor = run_command("dynamodb", "doctor", *args(store))
    assert doctor.returncode == 0 and "ok   ttl: TTL ENABLED on 'exp'" in doctor.stdout, doctor.stdout


def test_an_import_source_that_does_not_exist_is_not_found_as_docs_cli_md_says(capsys: Any, tmp_path: Path) -> None:
    missing, name = tmp_path / "absent.jsonl", table_name()
    create_table(client(), name)
    code, _, err = run(capsys, "import", str(missing), "--table", name, "--endpoint-url", server_endpoint())
    assert code == 1 and err.splitlines()[-1].startswith(f"NOT_FOUND: {missing} does not exist")
    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text().split())
    assert "a source that does not exist is NOT_FOUND naming it" in docs
    assert "a source that cannot be read is FAILED_PRECONDITION" not in docs
