"""The `genkit-sessions dynamodb create-table` command and the embedded moto server of the demo."""

from __future__ import annotations

import pytest

from genkit_sessions import SessionSnapshot
from genkit_sessions.cli.main import main
from genkit_sessions.dynamodb import DynamoDBSessionStore
from genkit_sessions.dynamodb.embedded import demo_store, local_client
from tests.dynamodb.helpers import state_of
from tests.dynamodb_backends import server_endpoint


def test_create_table_command_makes_an_on_demand_table_with_ttl(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    endpoint = server_endpoint()
    assert main(["dynamodb", "create-table", "--table", "cli-made", "--endpoint-url", endpoint]) == 0
    assert "cli-made" in capsys.readouterr().out
    client = local_client(endpoint)
    table = client.describe_table(TableName="cli-made")["Table"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    ttl = client.describe_time_to_live(TableName="cli-made")["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == "exp"
    store = DynamoDBSessionStore("cli-made", client)
    store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", state=state_of("s", ["hi"])))
    assert store.get_snapshot(session_id="s") is not None


def test_create_table_twice_is_already_exists_unless_exist_ok(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    endpoint = server_endpoint()
    args = ["dynamodb", "create-table", "--table", "cli-twice", "--endpoint-url", endpoint]
    assert main(args) == 0
    assert main(args) == 1
    assert "ALREADY_EXISTS" in capsys.readouterr().err
    assert main([*args, "--exist-ok"]) == 0


def test_demo_store_starts_an_embedded_server_and_stops_it() -> None:
    with demo_store(None) as store:
        endpoint = store.client.meta.endpoint_url
        assert endpoint.startswith("http://127.0.0.1:")
        saved = store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", state=state_of("s", ["hi"])))
        assert store.get_snapshot(snapshot_id="a") == saved
    with pytest.raises(Exception):  # noqa: B017 (the server is gone: any connection error will do)
        local_client(endpoint, max_retries=0).list_tables()
