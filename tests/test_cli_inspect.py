"""``sessions list``, ``show`` and ``tree``: what an operator sees of a table, and the tree drawings."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import boto3
import pytest

from genkit_sessions import SessionSnapshot, SessionState
from genkit_sessions.cli.demo import run_demo
from genkit_sessions.cli.render import render_dot, render_mermaid, render_text
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.model.types import ErrorInfo, Message
from genkit_sessions.model.wire import to_wire
from genkit_sessions.service import SessionService
from tests.cli_helpers import no_credentials, run, run_command, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint


def client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)


class Table:
    """A table on the shared moto server holding the demo's session tree and the service's sessions."""

    def __init__(self) -> None:
        self.name = table_name()
        create_table(client(), self.name)
        self.store = DynamoDBSessionStore(self.name, client(), indexed_metadata=("team",))
        self.tree = run_demo(self.store, io.StringIO())
        self.session_id = self.tree[0].session_id or ""
        service = SessionService(self.store)
        self.ana = [service.create(metadata={"principal": "bo", "team": "support"}) for _ in range(3)]
        for record in self.ana:
            service.append(record.id, [Message.of_text("user", "hi")])

    def args(self) -> list[str]:
        return ["--table", self.name, "--endpoint-url", server_endpoint()]


@pytest.fixture(scope="module")
def table() -> Table:
    return Table()


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def snap(snapshot_id: str, parent: str | None, status: str, messages: int) -> SessionSnapshot:
    state = SessionState(messages=tuple(Message.of_text("user", str(i)) for i in range(messages)))
    return SessionSnapshot(snapshot_id, "s1", parent, "2025-01-01T00:00:00Z", status=status, state=state)  # type: ignore[arg-type]


FORKED = [
    snap("root0000", None, "completed", 2),
    snap("second00", "root0000", "completed", 4),
    snap("failed00", "second00", "failed", 5),
    snap("fork0000", "second00", "completed", 6),
    snap("pending0", "fork0000", "pending", 7),
]


def test_the_text_drawing_of_a_forked_tree_is_exactly_the_expected_one() -> None:
    assert render_text(FORKED, leaf_id="pending0") == [
        "root0000 completed (2 msgs)",
        "`-- second00 completed (4 msgs)",
        "    |-- failed00 failed (5 msgs)",
        "    `-- fork0000 completed (6 msgs)",
        "        `-- pending0 pending (7 msgs)  <- leaf",
    ]


def test_the_mermaid_drawing_names_every_edge_status_and_the_leaf() -> None:
    drawing = render_mermaid(FORKED, leaf_id="pending0")
    assert drawing.startswith("flowchart TD\n")
    assert '  n0["root0000 completed (2 msgs)"]:::completed' in drawing
    assert '  n4["pending0 pending (7 msgs) leaf"]:::pending' in drawing
    assert "  n1 --> n2\n  n1 --> n3\n  n3 --> n4\n" in drawing
    assert "style n4 stroke-width:3px" in drawing


def test_the_dot_drawing_is_a_digraph_with_an_edge_per_parent() -> None:
    drawing = render_dot(FORKED, leaf_id="pending0")
    assert drawing.startswith("digraph session {") and drawing.rstrip().endswith("}")
    assert '"second00" -> "failed00";' in drawing and '"second00" -> "fork0000";' in drawing
    assert 'label="pending0 pending (7 msgs) leaf"' in drawing and "penwidth=3" in drawing


def test_tree_draws_the_demo_session_with_its_fork_and_failed_turn(table: Table, capsys: Any) -> None:
    code, out, _ = run(capsys, "tree", table.session_id, *table.args())
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4
    assert lines[0] == f"{table.tree[0].snapshot_id} completed (2 msgs)"
    assert "failed (5 msgs)" in lines[2] and lines[3].endswith("completed (6 msgs)  <- leaf")


@pytest.mark.parametrize(("fmt", "start"), [("mermaid", "flowchart TD"), ("dot", "digraph session {")])
def test_tree_format_prints_mermaid_and_dot(table: Table, capsys: Any, fmt: str, start: str) -> None:
    code, out, _ = run(capsys, "tree", table.session_id, *table.args(), "--format", fmt, "--short-ids")
    assert code == 0 and out.startswith(start)
    assert table.tree[3].snapshot_id[:8] in out


def test_tree_json_lists_the_nodes_and_marks_the_leaf(table: Table, capsys: Any) -> None:
    code, out, _ = run(capsys, "tree", table.session_id, *table.args(), "--json")
    nodes = json.loads(out)["snapshots"]
    assert code == 0 and [n["status"] for n in nodes] == ["completed", "completed", "failed", "completed"]
    assert [n["leaf"] for n in nodes] == [False, False, False, True]


def test_tree_to_an_image_without_graphviz_names_the_package(
    table: Table, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run(capsys, "tree", table.session_id, *table.args(), "--output", str(tmp_path / "t.svg"))
    assert code == 1 and "FAILED_PRECONDITION: " in err and "graphviz" in err
    assert not (tmp_path / "t.svg").exists()


def test_tree_to_an_image_runs_dot_with_the_dot_drawing(
    table: Table, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "dot"  # stands in for Graphviz: writes its stdin to stdout
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tpng" ] && [ "$#" = 1 ] || exit 3\ncat\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    code, _, err = run(capsys, "tree", table.session_id, *table.args(), "--output", str(tmp_path / "t.png"))
    assert code == 0, err
    assert (tmp_path / "t.png").read_text().startswith("digraph session {")


def test_tree_of_an_unknown_session_is_not_found_and_says_how_to_list(table: Table, capsys: Any) -> None:
    code, _, err = run(capsys, "tree", "no-such-session", *table.args())
    assert code == 1 and "NOT_FOUND: session 'no-such-session' has no snapshots" in err
    assert "sessions list" in err


def test_show_prints_a_summary_with_status_error_and_messages(table: Table, capsys: Any) -> None:
    failed = table.tree[2]
    code, out, _ = run(capsys, "show", failed.snapshot_id, *table.args())
    assert code == 0
    assert f"snapshot   {failed.snapshot_id}" in out
    assert "status     failed (finish reason failed)" in out
    assert "error      DEADLINE_EXCEEDED: the model did not answer in 30 s" in out
    assert "messages   5" in out and "    5 user: Now book the trains." in out


def test_show_json_is_the_snapshot_as_genkit_wire_json(table: Table, capsys: Any) -> None:
    code, out, _ = run(capsys, "show", table.tree[1].snapshot_id, *table.args(), "--json")
    assert code == 0 and json.loads(out) == to_wire(table.tree[1])


def test_show_an_unknown_snapshot_is_not_found(table: Table, capsys: Any) -> None:
    code, _, err = run(capsys, "show", "nope", *table.args())
    assert code == 1 and err.splitlines()[-1].startswith("NOT_FOUND: no snapshot 'nope'")


def test_sessions_list_by_principal_pages_oldest_first(table: Table, capsys: Any) -> None:
    code, out, err = run(capsys, "sessions", "list", "--principal", "bo", "--limit", "2", *table.args())
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [r.id for r in table.ana[:2]]
    token = err.split("--page-token ")[1].split()[0]
    code, out, err = run(capsys, "sessions", "list", "--principal", "bo", "--page-token", token, *table.args())
    assert [line.split()[0] for line in out.splitlines()] == [table.ana[2].id] and "--page-token" not in err


def test_sessions_list_by_an_indexed_key_as_json(table: Table, capsys: Any) -> None:
    code, out, _ = run(
        capsys, "sessions", "list", "--key", "team", "--value", "support", "--all", *table.args(), "--json"
    )
    found = json.loads(out)
    assert code == 0 and [s["sessionId"] for s in found["sessions"]] == [r.id for r in table.ana]
    assert found["sessions"][0]["metadata"] == {"principal": "bo", "team": "support"}
    assert found["nextPageToken"] is None


def test_sessions_list_without_a_filter_scans_the_tenant(table: Table, capsys: Any) -> None:
    code, out, _ = run(capsys, "sessions", "list", "--all", "--limit", "3", *table.args(), "--json")
    ids = {s["sessionId"] for s in json.loads(out)["sessions"]}
    assert code == 0 and table.session_id in ids and {r.id for r in table.ana} <= ids
    code, out, _ = run(capsys, "sessions", "list", "--all", *table.args(), "--tenant", "other", "--json")
    assert json.loads(out)["sessions"] == []


def test_sessions_list_on_a_missing_table_names_the_command_that_creates_it(capsys: Any) -> None:
    code, _, err = run(capsys, "sessions", "list", "--table", "absent", "--endpoint-url", server_endpoint())
    assert code == 1 and "NOT_FOUND: DynamoDB table 'absent' does not exist" in err
    assert "genkit-sessions dynamodb create-table --table absent" in err


def test_list_show_and_tree_as_real_commands_against_a_moto_server(table: Table) -> None:
    listed = run_command("sessions", "list", "--principal", "bo", *table.args())
    assert listed.returncode == 0 and table.ana[0].id in listed.stdout, listed.stderr
    shown = run_command("show", table.tree[0].snapshot_id, *table.args(), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["snapshotId"] == table.tree[0].snapshot_id
    drawn = run_command("tree", table.session_id, *table.args())
    assert drawn.returncode == 0 and drawn.stdout.count("\n") == 4 and "<- leaf" in drawn.stdout


def test_a_snapshot_summary_of_an_error_without_status_says_unknown() -> None:
    from genkit_sessions.cli.sessions_cmd import summary_lines

    failed = SessionSnapshot("x", "s", status="failed", error=ErrorInfo(message="boom"))  # type: ignore[arg-type]
    assert "error      UNKNOWN: boom" in summary_lines(failed)
