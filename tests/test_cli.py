"""The ``genkit-sessions`` command: the demo narrates every resolver path and draws the tree."""

from __future__ import annotations

import io
import subprocess
import sys

from genkit_sessions import InMemorySessionStore, SnapshotStatus
from genkit_sessions.cli.demo import run_demo
from genkit_sessions.cli.main import main


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
