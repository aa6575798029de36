"""An import leaves a stored snapshot alone only when the store holds exactly the file's JSON: numbers that
Python's ``==`` confuses (``1``, ``1.0``, ``True``, ``-0.0``/``0.0``) are different snapshots, and rewritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import InMemorySessionStore, SessionSnapshot, from_wire, to_wire
from genkit_sessions.stores.transfer import import_snapshots

ROOT = {"snapshotId": "s1", "sessionId": "sess", "createdAt": "2026-01-01T00:00:00Z", "status": "completed"}


@pytest.mark.parametrize(
    ("stored", "given"),
    [({"x": 1}, {"x": 1.0}), ([1, 0], [True, False]), ({"x": 0.0}, {"x": -0.0}), ({"x": 1.0}, {"x": 1})],
    ids=["int-then-float", "int-then-bool", "zero-then-negative-zero", "float-then-int"],
)
def test_import_rewrites_a_snapshot_whose_stored_json_differs_only_in_number_types(
    tmp_path: Path, stored: Any, given: Any
) -> None:
    store = InMemorySessionStore()
    store.restore_snapshots([from_wire(SessionSnapshot, {**ROOT, "state": {"custom": stored}})])
    source = tmp_path / "e.jsonl"
    source.write_text(json.dumps({**ROOT, "state": {"custom": given}}) + "\n", encoding="utf-8")

    counts = import_snapshots(store, source)

    assert (counts.written, counts.unchanged) == (1, 0)
    held = to_wire(store.get_snapshot(snapshot_id="s1"))
    assert json.dumps(held["state"]["custom"]) == json.dumps(given)


def test_import_of_the_same_json_twice_writes_nothing_the_second_time(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    source = tmp_path / "e.jsonl"
    source.write_text(json.dumps({**ROOT, "state": {"custom": {"x": 1.0, "y": [True, -0.0, 2]}}}) + "\n")

    first = import_snapshots(store, source)
    second = import_snapshots(store, source)

    assert (first.written, second.written, second.unchanged) == (1, 0, 1)
