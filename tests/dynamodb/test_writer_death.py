"""A writer process killed part-way through a staged write: its parts go, without anyone's help.

A large write stages its parts, lifts their orphan expiry, then commits. A process killed (SIGKILL,
nothing runs after it) once some expiry is lifted leaves parts that never expire and that no
committed snapshot references. The store owes: the session reads as before; a staged write younger
than ``orphan_ttl`` is left alone (its writer may still be at work); and the first ordinary turn of
the session after that removes everything the dead writer left, marker and parts, while every
committed snapshot still reads whole.

The dying writer is a spawned process on the shared moto server; the turns after it are the
resolver's (resume by session id, add a message, save), as an agent framework runs them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import AgentInit, Message, SessionResolver, SessionSnapshot, SnapshotStatus
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from tests.dynamodb.helpers import (
    MARKER_PREFIX,
    PART_PREFIX,
    cold,
    hidden_items_unlisted,
    left_behind,
    parts_left_forever,
    readable_ids,
    save_new,
    scan,
    six_megabytes,
    state_of,
)
from tests.dynamodb.write_paths import (
    PATHS,
    Killed,
    Path,
    Reference,
    StoreFactory,
    clean_run,
    differences,
    drop,
    fresh,
    observe,
    recorded_sequences,
    swept_calls,
)
from tests.dynamodb_backends import CREDENTIALS, guard_of, make_client, server_endpoint

ORPHAN_TTL = timedelta(hours=1)


def _is_lift(operation: str, params: dict[str, Any]) -> bool:
    return operation == "UpdateItem" and params["Key"]["sk"]["S"].startswith(PART_PREFIX)


def _dies_at(point: str, operation: str, params: dict[str, Any], seen: list[int]) -> bool:
    """Whether the writer dies just before this call: at its third lift of a part's expiry, or at its
    commit (every expiry lifted)."""
    if point == "third-lift" and _is_lift(operation, params):
        seen[0] += 1
        return seen[0] == 3
    return point == "commit" and operation == "TransactWriteItems"


def _dying_writer(endpoint: str, table: str, session_id: str, parent_id: str | None, point: str) -> None:
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, **CREDENTIALS)
    seen = [0]

    def maybe_die(params: dict[str, Any], model: Any, **_: Any) -> None:
        if _dies_at(point, model.name, params, seen):
            os.kill(os.getpid(), signal.SIGKILL)

    client.meta.events.register("before-parameter-build.dynamodb", maybe_die)
    store = DynamoDBSessionStore(table, client, orphan_ttl=ORPHAN_TTL)
    save_new(store, "big", six_megabytes(session_id), parent_id=parent_id)
    os._exit(3)  # not reached: the writer dies at its point


def _kill_a_writer(endpoint: str, table: str, session_id: str, parent_id: str | None, point: str) -> None:
    process = multiprocessing.get_context("spawn").Process(
        target=_dying_writer, args=(endpoint, table, session_id, parent_id, point)
    )
    process.start()
    process.join(timeout=300)
    assert process.exitcode == -signal.SIGKILL, f"the writer was not killed at its {point}: {process.exitcode}"


def _turn(store: DynamoDBSessionStore, session_id: str, text: str) -> str:
    resolution = SessionResolver.resolve(store, True, AgentInit(session_id=session_id))
    assert resolution.session is not None, resolution
    resolution.session.add_messages(Message.of_text("user", text))
    return resolution.session.save().snapshot_id


def _markers(store: DynamoDBSessionStore) -> list[str]:
    return [i["sk"]["S"] for i in scan(store, "pk, sk") if i["sk"]["S"].startswith(MARKER_PREFIX)]


@pytest.mark.parametrize("point", ["third-lift", "commit"])
@pytest.mark.parametrize("start", ["child", "root", "created"])
def test_a_writer_killed_mid_staged_write_leaves_nothing_after_the_sessions_next_turn_past_orphan_ttl(
    point: str, start: str
) -> None:
    """``child``: the dead write was a turn of a session; ``root``: the session's first, and the first
    that lands after it is a save; ``created``: that first one is a create with first snapshots (a fork
    landing on the id), which must keep the dead write named for the turn past ``orphan_ttl``."""
    first = start != "child"
    endpoint = server_endpoint()
    client = make_client(endpoint)
    table = f"death-{uuid.uuid4().hex[:10]}"
    create_table(client, table)
    now = [datetime.now(timezone.utc)]
    store = DynamoDBSessionStore(table, client, orphan_ttl=ORPHAN_TTL, clock=lambda: now[0])
    try:
        parent = None if first else save_new(store, "start", state_of("s", ["hello", "hi"])).snapshot_id

        _kill_a_writer(endpoint, table, "s", parent, point)

        fresh = DynamoDBSessionStore(table, client, orphan_ttl=ORPHAN_TTL, clock=lambda: now[0])
        assert fresh.get_snapshot(snapshot_id="big") is None, "the dead writer's snapshot was never committed"
        leaf = fresh.get_snapshot(session_id="s")
        assert (leaf is None) if first else (leaf is not None and leaf.snapshot_id == "start")
        left = parts_left_forever(fresh, readable_ids(fresh, ["s"]))
        assert left, "the writer died after lifting expiries: some parts are permanent"

        if start == "root":  # the session's first turn, after the dead writer's
            save_new(fresh, "start", state_of("s", ["hello", "hi"]))
        elif start == "created":
            fresh.create_session("s", snapshots=[SessionSnapshot(snapshot_id="start", state=state_of("s", ["hi"]))])
        recent = _turn(fresh, "s", "a turn soon after: the staged write may still be at work")
        assert parts_left_forever(fresh, readable_ids(fresh, ["s"])) == left, "a young staged write was touched"
        assert _markers(fresh), "a young staged write's marker was removed"

        now[0] += ORPHAN_TTL + timedelta(minutes=1)
        later = DynamoDBSessionStore(table, client, orphan_ttl=ORPHAN_TTL, clock=lambda: now[0])
        last = _turn(later, "s", "a turn past orphan_ttl")
        guard = guard_of(later)
        guard.reset()
        _turn(later, "s", "and one more")
        assert guard.log == ["GetItem", "BatchGetItem", "TransactWriteItems"], "taking it back left a lasting cost"
        guard.reset()

        reader = DynamoDBSessionStore(table, client)
        live = readable_ids(reader, ["s"])  # raises unless every snapshot reads whole
        assert len(live) == 4 and {"start", recent, last} < live
        assert parts_left_forever(reader, live) == [], "the dead writer's parts outlived the next turn"
        assert _markers(reader) == [], "the dead writer's marker outlived the next turn"
        # No committed snapshot of this session has parts (a create's first snapshots are stored as a restore
        # stores them, blob in parts): every other part left is the dead writer's.
        kept = f"{PART_PREFIX}start" if start == "created" else None
        parts = [i["sk"]["S"] for i in scan(reader, "pk, sk") if i["sk"]["S"].startswith(PART_PREFIX)]
        assert [p for p in parts if kept is None or not p.startswith(kept)] == [], "the dead writer's parts are left"
        leaf = reader.get_snapshot(session_id="s")
        assert leaf is not None and leaf.parent_id == last
        assert [m.text for m in leaf.state.message_list][-3:] == [  # type: ignore[union-attr]
            "a turn soon after: the staged write may still be at work",
            "a turn past orphan_ttl",
            "and one more",
        ]
    finally:
        client.delete_table(TableName=table)


@pytest.mark.parametrize("point", ["third-lift", "commit"])
def test_a_first_write_whose_writer_died_in_a_session_no_one_resumes_is_taken_back_by_delete_expired_sessions(
    point: str,
) -> None:
    """The common first-turn case: the session's id was made for this write and never reached a client,
    so no save will ever come; the store's periodic job finds the write from its expiry index."""
    endpoint = server_endpoint()
    client = make_client(endpoint)
    table = f"death-{uuid.uuid4().hex[:10]}"
    create_table(client, table)
    store = DynamoDBSessionStore(table, client, orphan_ttl=ORPHAN_TTL)
    try:
        save_new(store, "other", state_of("kept", ["a session that stays"]))
        _kill_a_writer(endpoint, table, "lost", None, point)
        assert parts_left_forever(store, readable_ids(store, ["lost", "kept"])), "some parts are permanent"

        soon = datetime.now(timezone.utc) + timedelta(minutes=1)
        assert store.delete_expired_sessions(soon) == 0
        assert _markers(store), "a staged write younger than orphan_ttl was taken back"

        later = soon + ORPHAN_TTL
        assert store.delete_expired_sessions(later) == 0, "no session was deleted: none had expired"
        assert parts_left_forever(store, readable_ids(store, ["lost", "kept"])) == []
        assert _markers(store) == []
        assert store.get_snapshot(session_id="lost") is None and store.get_session_record("lost") is None
        kept = store.get_snapshot(session_id="kept")
        assert kept is not None and kept.snapshot_id == "other"
        assert store.delete_expired_sessions(later) == 0  # nothing is left for a second run
    finally:
        client.delete_table(TableName=table)


# --- a writer that dies before any call of any write path ---------------------------------------------


SEQUENCES = recorded_sequences()
DEATHS = [  # a death at any part's lift leaves what a death at the first or last does: those two are kept
    (path, index, SEQUENCES[path.name][index])
    for path in PATHS
    for index in swept_calls(path, SEQUENCES[path.name], every_call=False)
]


_REFERENCES: dict[tuple[str, str], Reference] = {}


def _janitor(store: DynamoDBSessionStore, path: Path) -> None:
    """What the store does later without being told what a dead writer left: the session's next turn
    (when it has a leaf to resume) and the periodic ``delete_expired_sessions``, both past ``orphan_ttl``."""
    now = path.options.get("clock", lambda: datetime.now(timezone.utc))()  # the path's own time, when it has one
    later = now + timedelta(days=1, minutes=1)  # orphan_ttl is 1 day by default
    after = DynamoDBSessionStore(store.table_name, store.client, **{**path.options, "clock": lambda: later})
    leaf = after.get_snapshot(session_id="s")
    if leaf is not None and leaf.status is SnapshotStatus.PENDING:  # its detached turn completes
        after.save_snapshot(leaf.snapshot_id, lambda current: attrs.evolve(current, status=SnapshotStatus.COMPLETED))
    elif leaf is not None:
        resolution = SessionResolver.resolve(after, True, AgentInit(session_id="s"))
        assert resolution.session is not None, resolution
        resolution.session.add_messages(Message.of_text("user", "a later turn"))
        resolution.session.save()
    after.delete_expired_sessions(later)


@pytest.mark.parametrize(
    ("path", "index"),
    [(path, index) for path, index, _ in DEATHS],
    ids=[f"{path.name}-{index:02d}-{operation}" for path, index, operation in DEATHS],
)
def test_a_writer_dying_before_any_call_reads_as_before_or_after_and_leaves_nothing_past_orphan_ttl(
    make_dynamo: StoreFactory, request: pytest.FixtureRequest, path: Path, index: int
) -> None:
    key = (request.node.callspec.params["make_dynamo"], path.name)
    if key not in _REFERENCES:
        _REFERENCES[key] = clean_run(make_dynamo, path)
    reference = _REFERENCES[key]
    store = fresh(make_dynamo, path)
    try:
        before = reference.before
        operation = path.operation(cold(store, **path.options))
        seen = [0]

        def die(op: str, params: dict[str, Any]) -> None:
            seen[0] += 1
            if seen[0] == index + 1:
                raise Killed

        guard_of(store).faults.append(die)
        try:
            operation.run()
            pytest.fail("the writer outlived its death")
        except Killed:
            pass
        finally:
            guard_of(store).faults.clear()

        observed = observe(store, path, operation)
        if observed != before:
            after = reference.after
            assert observed == after, (
                f"reads neither as before nor as after. Against before: {differences(observed, before)}. "
                f"Against after: {differences(observed, after)}"
            )
        _janitor(store, path)
        reader = cold(store)
        if path.deletes and reader.get_snapshot(session_id="s") is None:  # it had begun: the janitor finished it
            assert left_behind(reader) == [], "a deletion whose writer died left the session's items behind"
            return
        assert parts_left_forever(reader, readable_ids(reader, ["s"])) == [], "the dead writer's parts stayed"
        assert _markers(reader) == [], "the dead writer's staging marker stayed"
        assert hidden_items_unlisted(reader) == [], "the dead writer's snapshot items stayed"
    finally:
        drop(store)
