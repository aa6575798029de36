"""``export`` and ``import``: JSON Lines of Genkit wire snapshots between tables, byte for byte; a bad line
refuses the whole import; a second import writes nothing; Genkit's FileSessionStore directories import."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import InMemorySessionStore, SessionSnapshot, SessionState
from genkit_sessions.cli.demo import run_demo
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.model.types import ErrorInfo, Message
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores.transfer import export_sessions, import_snapshots, snapshot_line
from tests.cli_helpers import no_credentials, run, run_command, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint


def client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)


def fresh_store() -> DynamoDBSessionStore:
    name = table_name()
    create_table(client(), name)
    return DynamoDBSessionStore(name, client())


def args(store: DynamoDBSessionStore) -> list[str]:
    return ["--table", store.table_name, "--endpoint-url", server_endpoint()]


@pytest.fixture(scope="module")
def demo_store() -> DynamoDBSessionStore:
    store = fresh_store()
    run_demo(store, io.StringIO())
    return store


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def test_export_import_export_of_a_tenant_is_byte_identical(
    demo_store: DynamoDBSessionStore, capsys: Any, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    code, _, err = run(capsys, "export", "--all", *args(demo_store), "--output", str(first))
    assert code == 0 and "exported 6 snapshots of 2 sessions" in err, err
    copy = fresh_store()
    code, out, _ = run(capsys, "import", str(first), *args(copy))
    assert code == 0 and out == "imported 6 snapshots of 2 sessions: 6 written, 0 already present\n"
    code, _, _ = run(capsys, "export", "--all", *args(copy), "--output", str(second))
    assert code == 0 and first.read_bytes() == second.read_bytes()
    assert not list(tmp_path.glob("*.partial"))


def test_importing_the_same_file_twice_writes_nothing_the_second_time(
    demo_store: DynamoDBSessionStore, capsys: Any, tmp_path: Path
) -> None:
    exported = tmp_path / "e.jsonl"
    run(capsys, "export", "--all", *args(demo_store), "--output", str(exported))
    copy = fresh_store()
    run(capsys, "import", str(exported), *args(copy))
    versions = {r["sessionId"]: r["version"] for r in _records(copy, capsys)}
    code, out, _ = run(capsys, "import", str(exported), *args(copy), "--json")
    assert code == 0 and json.loads(out) == {
        "snapshots": 6,
        "sessions": 2,
        "written": 0,
        "unchanged": 6,
        "dryRun": False,
    }
    assert {r["sessionId"]: r["version"] for r in _records(copy, capsys)} == versions


def _records(store: DynamoDBSessionStore, capsys: Any) -> list[dict[str, Any]]:
    code, out, _ = run(capsys, "sessions", "list", "--all", *args(store), "--json")
    assert code == 0
    records: list[dict[str, Any]] = json.loads(out)["sessions"]
    return records


def test_one_bad_line_refuses_the_whole_import_and_names_the_line(
    demo_store: DynamoDBSessionStore, capsys: Any, tmp_path: Path
) -> None:
    exported = tmp_path / "e.jsonl"
    run(capsys, "export", "--all", *args(demo_store), "--output", str(exported))
    lines = exported.read_text().splitlines()
    lines.insert(5, json.dumps({"snapshotId": "orphan", "createdAt": "2025-01-01T00:00:00Z"}))
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n")
    copy = fresh_store()
    code, _, err = run(capsys, "import", str(broken), *args(copy))
    assert code == 1
    assert err.splitlines()[-1].startswith(f"INVALID_ARGUMENT [SESSION_ID_REQUIRED]: line 6 of {broken}: ")
    assert "nothing was imported" in err
    assert _records(copy, capsys) == []


def test_a_line_that_is_not_json_is_refused_with_its_number(capsys: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"snapshotId": "a", "sessionId": "s", "createdAt": "2025-01-01T00:00:00Z"}\n{not json\n')
    code, _, err = run(capsys, "import", str(bad), *args(fresh_store()), "--dry-run")
    assert code == 1 and f"line 2 of {bad}" in err and "INVALID_ARGUMENT" in err


def test_a_dry_run_checks_and_writes_nothing(demo_store: DynamoDBSessionStore, capsys: Any, tmp_path: Path) -> None:
    exported = tmp_path / "e.jsonl"
    run(capsys, "export", "--all", *args(demo_store), "--output", str(exported))
    copy = fresh_store()
    code, out, _ = run(capsys, "import", str(exported), *args(copy), "--dry-run")
    assert code == 0 and "checked 6 snapshots of 2 sessions: all valid; wrote nothing" in out
    assert _records(copy, capsys) == []


def test_export_of_one_session_and_of_a_principals_sessions(demo_store: DynamoDBSessionStore, capsys: Any) -> None:
    everything = [json.loads(line) for line in _export(capsys, demo_store, "--all").splitlines()]
    sessions = list(dict.fromkeys(s["sessionId"] for s in everything))
    one = _export(capsys, demo_store, "--session", sessions[0]).splitlines()
    assert [json.loads(line)["sessionId"] for line in one] == [sessions[0]] * len(one)
    anas = [json.loads(line)["sessionId"] for line in _export(capsys, demo_store, "--principal", "ana").splitlines()]
    assert anas and len(set(anas)) == 1  # the demo's surviving fork belongs to ana


def _export(capsys: Any, store: DynamoDBSessionStore, *selection: str) -> str:
    code, out, err = run(capsys, "export", *selection, *args(store))
    assert code == 0, err
    return out


def test_exporting_a_session_that_does_not_exist_is_not_found(demo_store: DynamoDBSessionStore, capsys: Any) -> None:
    code, _, err = run(capsys, "export", "--session", "ghost", *args(demo_store))
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: 1 of the 1 sessions named have no snapshots")


def test_a_genkit_file_session_store_directory_imports(capsys: Any, tmp_path: Path) -> None:
    agent_api = pytest.importorskip("genkit.exp.agent")
    files = agent_api.FileSessionStore(str(tmp_path / "genkit"))
    root = SessionSnapshot(
        "root-1", None, "", "2025-01-01T00:00:00Z", state=SessionState("s-file", (Message.of_text("user", "hi"),))
    )
    child = SessionSnapshot("child-1", None, "root-1", "2025-01-01T00:00:01Z", state=SessionState("s-file"))
    for ours in (root, child):
        files.write_sync(agent_api.SessionSnapshot.model_validate(to_wire(ours)))
    (tmp_path / "genkit" / "half-written.json.tmp").write_text("{")
    store = fresh_store()
    code, out, err = run(capsys, "import", str(tmp_path / "genkit"), *args(store))
    assert code == 0, err
    assert out == "imported 2 snapshots of 1 sessions: 2 written, 0 already present\n"
    stored = store.list_snapshots("s-file")
    assert [s.snapshot_id for s in stored] == ["root-1", "child-1"] and stored[0].session_id == "s-file"


def test_export_and_import_as_real_commands_through_a_pipe(demo_store: DynamoDBSessionStore) -> None:
    exported = run_command("export", "--all", *args(demo_store))
    assert exported.returncode == 0 and exported.stdout.count("\n") == 6, exported.stderr
    assert "\r" not in exported.stderr  # no progress bar when stderr is not a terminal
    copy = fresh_store()
    imported = run_command("import", "-", *args(copy), stdin=exported.stdout)
    assert imported.returncode == 0 and "6 written" in imported.stdout, imported.stderr
    again = run_command("export", "--all", *args(copy))
    assert again.stdout == exported.stdout


def test_the_progress_bar_draws_a_bar_with_a_total_and_ends_its_line() -> None:
    from genkit_sessions.cli._progress import ProgressBar

    out = io.StringIO()
    bar = ProgressBar("snapshots", 4, stream=out, force=True)
    bar(4)
    bar.close()
    assert "[##############################] 100%  4/4 snapshots" in out.getvalue() and out.getvalue().endswith("\n")
    silent = io.StringIO()
    ProgressBar("snapshots", 4, stream=silent)(4)
    assert silent.getvalue() == ""


# --- the round trip, property-tested ---------------------------------------------------------------

STATUSES = [None, "pending", "aborting", "completed", "aborted", "failed"]


@st.composite
def trees(draw: st.DrawFn) -> list[SessionSnapshot]:
    """1-3 sessions, up to 50 snapshots in all: random parents (forks), every status, unicode text."""
    snapshots: list[SessionSnapshot] = []
    for session in range(draw(st.integers(1, 3))):
        count = draw(st.integers(1, 50 // 3 + (50 % 3 if session == 0 else 0)))
        ids = [f"t{session}-{i:02d}" for i in range(count)]
        for i, snapshot_id in enumerate(ids):
            status = draw(st.sampled_from(STATUSES))
            texts = draw(st.lists(st.text(max_size=12), max_size=3))
            snapshots.append(
                SessionSnapshot(
                    snapshot_id,
                    f"session-{session}",
                    ids[draw(st.integers(0, i - 1))] if i else None,
                    f"2025-01-01T00:00:{draw(st.integers(0, 59)):02d}Z",
                    status=status,  # type: ignore[arg-type]
                    error=ErrorInfo("INTERNAL", message="boom") if status == "failed" else None,
                    state=SessionState(f"session-{session}", tuple(Message.of_text("user", t) for t in texts)),
                )
            )
    return snapshots


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(snapshots=trees(), batch_size=st.sampled_from([1, 7, 100]))
def test_any_tree_round_trips_byte_for_byte_through_a_fresh_table(
    snapshots: list[SessionSnapshot], batch_size: int, tmp_path: Path
) -> None:
    source = InMemorySessionStore()
    source.restore_snapshots(snapshots)
    sessions = sorted({s.session_id or "" for s in snapshots})
    first = io.StringIO()
    export_sessions(source, sessions, first)
    path = tmp_path / f"tree-{batch_size}.jsonl"
    path.write_text(first.getvalue(), encoding="utf-8")
    copy = fresh_store()
    counts = import_snapshots(copy, path, batch_size=batch_size)
    assert (counts.snapshots, counts.written, counts.unchanged) == (len(snapshots), len(snapshots), 0)
    second = io.StringIO()
    export_sessions(copy, sessions, second)
    assert second.getvalue() == first.getvalue()
    assert import_snapshots(copy, path, batch_size=batch_size).written == 0
    assert sorted(first.getvalue().split("\n")[:-1]) == sorted(snapshot_line(s) for s in snapshots)
