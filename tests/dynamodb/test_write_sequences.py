"""Generated write sequences read the same on DynamoDB as on the in-memory store; racing processes lose nothing.

The in-memory store is the model: every operation of a generated sequence (a
new turn from any snapshot, a pending turn, its completion, an abort, a
heartbeat, a deletion, a restore) runs on both stores, and after each one
what a reader can observe (the members, the leaf, the session record, every
snapshot by id, or the error raised) must agree.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import (
    AgentInit,
    GenkitError,
    InMemorySessionStore,
    Message,
    SessionResolver,
    SessionSnapshot,
    SessionState,
)
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from tests.dynamodb_backends import CREDENTIALS, make_client, server_endpoint

SESSIONS = ("s1", "s2")

operation = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(SESSIONS), st.text(max_size=30)),
    st.tuples(st.just("pending"), st.sampled_from(SESSIONS), st.text(max_size=30)),
    st.tuples(st.just("complete"), st.integers(0, 20), st.text(max_size=30)),
    st.tuples(st.just("abort"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("heartbeat"), st.integers(0, 20), st.just("")),
    st.tuples(st.just("delete"), st.sampled_from(SESSIONS), st.just("")),
    st.tuples(st.just("restore"), st.sampled_from(SESSIONS), st.text(max_size=30)),
)


@pytest.fixture(scope="module")
def dynamodb_client() -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        yield make_client()


def _apply(store: Any, step: tuple[str, Any, str], made: list[str], clock: list[int]) -> Any:
    kind, target, text = step
    clock[0] += 1
    if kind in ("turn", "pending"):
        snapshot_id = f"n{clock[0]}"
        leaf = store.get_snapshot(session_id=target)
        messages = (*(leaf.state.messages if leaf is not None and leaf.state else ()), Message.of_text("user", text))
        status = "pending" if kind == "pending" else "completed"
        store.save_snapshot(
            snapshot_id,
            lambda _: SessionSnapshot(
                snapshot_id=snapshot_id,
                parent_id=leaf.snapshot_id if leaf is not None else None,
                state=SessionState(session_id=target, messages=messages),
                status=status,
            ),
        )
        made.append(snapshot_id)
        return snapshot_id
    if kind in ("complete", "abort", "heartbeat"):
        if not made:
            return None
        snapshot_id = made[target % len(made)]
        if kind == "abort":
            return store.abort_snapshot(snapshot_id)
        if kind == "heartbeat":
            return store.heartbeat(snapshot_id).status

        def complete(current: SessionSnapshot | None) -> SessionSnapshot | None:
            if current is None or current.state is None:
                return None
            more = (*current.state.messages, Message.of_text("model", text))
            return attrs.evolve(current, status="completed", state=attrs.evolve(current.state, messages=more))

        saved = store.save_snapshot(snapshot_id, complete)
        return None if saved is None else saved.status
    if kind == "delete":
        return store.delete_session(target)
    snapshot_id = f"r{clock[0]}"
    made.append(snapshot_id)
    restored = SessionSnapshot(
        snapshot_id=snapshot_id,
        session_id=target,
        created_at=f"2020-01-01T00:00:{clock[0] % 60:02d}Z",
        state=SessionState(session_id=target, messages=(Message.of_text("user", text),)),
    )
    return store.restore_snapshots([restored])


def _observe(store: Any, made: list[str]) -> Any:
    seen: dict[str, Any] = {}
    for session_id in SESSIONS:
        leaf = store.get_snapshot(session_id=session_id)
        record = store.get_session_record(session_id)
        seen[session_id] = (
            [s.snapshot_id for s in store.list_snapshots(session_id)],
            None if leaf is None else leaf.snapshot_id,
            None if record is None else (record.version, record.leaf_id),
        )
    for snapshot_id in made:
        found = store.get_snapshot(snapshot_id=snapshot_id)
        seen[snapshot_id] = None if found is None else (found.status, found.state)
    return seen


def _outcome(store: Any, step: tuple[str, Any, str], made: list[str], clock: list[int]) -> Any:
    try:
        return ("ok", _apply(store, step, made, clock))
    except GenkitError as error:
        return ("error", error.status)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, min_size=1, max_size=10))
def test_generated_write_sequences_read_the_same_on_dynamodb_as_in_memory(
    dynamodb_client: Any, steps: list[tuple[str, Any, str]]
) -> None:
    table = f"seq-{uuid.uuid4().hex[:10]}"
    create_table(dynamodb_client, table)
    memory, dynamo = InMemorySessionStore(), DynamoDBSessionStore(table, dynamodb_client)
    made_m: list[str] = []
    made_d: list[str] = []
    clock_m, clock_d = [0], [0]
    for step in steps:
        expected = _outcome(memory, step, made_m, clock_m)
        got = _outcome(dynamo, step, made_d, clock_d)
        assert got == expected, f"{step}: DynamoDB {got}, memory {expected}"
        fresh = DynamoDBSessionStore(table, dynamodb_client)
        assert _normalise(_observe(fresh, made_d)) == _normalise(_observe(memory, made_m)), step
    dynamodb_client.delete_table(TableName=table)


def _normalise(seen: dict[str, Any]) -> dict[str, Any]:
    """Stores stamp their own times: compare states by their messages, not their timestamps."""
    out: dict[str, Any] = {}
    for key, value in seen.items():
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], SessionState | type(None)):
            status, state = value
            out[key] = (status, None if state is None else [m.text for m in state.message_list])
        else:
            out[key] = value
    return out


# --- racing processes --------------------------------------------------------------------------------


def _new_table(prefix: str) -> tuple[str, Any, str]:
    """A table of its own on the shared moto server, for processes to race on: its endpoint, a client, its name."""
    endpoint = server_endpoint()
    client = make_client(endpoint)
    table = f"{prefix}-{uuid.uuid4().hex[:10]}"
    create_table(client, table)
    return endpoint, client, table


def _writer_process(endpoint: str, table: str, writer: int, turns: int, results: Any) -> None:
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, **CREDENTIALS)
    store = DynamoDBSessionStore(table, client)
    saved = []
    for turn in range(turns):
        resolution = SessionResolver.resolve(store, True, AgentInit(session_id="race"))
        assert resolution.session is not None
        resolution.session.add_messages(Message.of_text("user", f"w{writer} t{turn}"))
        saved.append(resolution.session.save().snapshot_id)
    results.put(saved)


def test_writers_in_separate_processes_lose_no_turn_and_the_version_counts_them_all() -> None:
    endpoint, client, table = _new_table("procs")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    writers = [context.Process(target=_writer_process, args=(endpoint, table, n, 6, results)) for n in range(4)]
    for process in writers:
        process.start()
    saved = [snapshot_id for _ in writers for snapshot_id in results.get(timeout=120)]
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0
    store = DynamoDBSessionStore(table, client)
    listed = [s.snapshot_id for s in store.list_snapshots("race")]
    assert sorted(listed) == sorted(saved) and len(saved) == 24  # every save that succeeded is there
    record = store.get_session_record("race")
    assert record is not None and record.version == 24
    leaf = store.get_snapshot(session_id="race")
    assert leaf is not None and leaf.snapshot_id in saved


def _service_process(endpoint: str, table: str, writer: int, turns: int, results: Any) -> None:
    import boto3

    from genkit_sessions import SessionService

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, **CREDENTIALS)
    service = SessionService(DynamoDBSessionStore(table, client))
    record = service.find_or_create("shared", metadata={"principal": f"writer-{writer}"})
    for turn in range(turns):
        service.append("shared", [Message.of_text("user", f"w{writer} t{turn}")])
    results.put((record.created_at, dict(record.metadata)))


def test_service_writers_in_separate_processes_share_one_record_and_lose_no_append() -> None:
    from genkit_sessions import SessionService

    endpoint, client, table = _new_table("svc")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    writers = [context.Process(target=_service_process, args=(endpoint, table, n, 5, results)) for n in range(4)]
    for process in writers:
        process.start()
    records = [results.get(timeout=120) for _ in writers]
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert len({(created, tuple(md.items())) for created, md in records}) == 1  # V2: one record, all saw it
    service = SessionService(DynamoDBSessionStore(table, client))
    history = [m.text for m in service.get_messages("shared")]
    assert sorted(history) == sorted(f"w{w} t{t}" for w in range(4) for t in range(5))  # V9: none lost
    assert service.version("shared") == 20
    owner = records[0][1]["principal"]
    assert [r.id for r in service.find_by_metadata("principal", owner).records] == ["shared"]


def _an_hour_on() -> Any:
    from datetime import datetime, timedelta, timezone

    return datetime.now(timezone.utc) + timedelta(hours=1)


def _reuser_process(endpoint: str, table: str, writer: int, results: Any) -> None:
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, **CREDENTIALS)
    store = DynamoDBSessionStore(table, client, clock=_an_hour_on)
    if writer < 0:  # the deleter: the expired session, then everything expired
        results.put(("deleted", store.delete_session("old") + store.delete_expired_sessions(_an_hour_on())))
        return
    mine = f"w{writer}"
    new = SessionSnapshot(snapshot_id="e", session_id=mine, state=SessionState(session_id=mine))
    saved = store.save_snapshot("e", lambda current: new if current is None else None)
    results.put((mine, saved.session_id if saved is not None else None))


def test_processes_reusing_an_id_of_an_expired_session_while_it_is_deleted_leave_it_in_exactly_one_session() -> None:
    from datetime import timedelta

    endpoint, client, table = _new_table("reuse")
    setup = DynamoDBSessionStore(table, client)
    setup.create_session("old", ttl=timedelta(seconds=30))
    for n, snapshot_id in enumerate(("e", "f", "g")):
        parent = ("e", "f")[n - 1] if n else None
        setup.save_snapshot(
            snapshot_id,
            lambda _, i=snapshot_id, p=parent: SessionSnapshot(
                snapshot_id=i, session_id="old", parent_id=p, state=SessionState(session_id="old")
            ),
        )
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=_reuser_process, args=(endpoint, table, n, results)) for n in (-1, 0, 1, 2)]
    for process in workers:
        process.start()
    answers = dict(results.get(timeout=120) for _ in workers)
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    winners = [mine for mine, got in answers.items() if mine != "deleted" and got is not None]
    assert len(winners) == 1 and answers[winners[0]] == winners[0]  # one save made it; the others saw it
    reader = DynamoDBSessionStore(table, client, clock=_an_hour_on)
    found = reader.get_snapshot(snapshot_id="e")
    assert found is not None and found.session_id == winners[0]
    assert [s.snapshot_id for s in reader.list_snapshots(winners[0])] == ["e"]
    assert reader.get_snapshot(snapshot_id="f") is None and reader.get_snapshot(snapshot_id="g") is None
    assert reader.list_snapshots("old") == [] and reader.delete_expired_sessions(_an_hour_on()) == 0
    items = client.scan(TableName=table)["Items"]
    snapshot_items = sorted(i["pk"]["S"].split("\x1f")[-1] for i in items if i["pk"]["S"].startswith("\x1fn\x1f"))
    live_heads = sorted(i["pk"]["S"].split("\x1f")[-1] for i in items if i["sk"]["S"] == "h" and "dead" not in i)
    expiry_entries = [i for i in items if i["pk"]["S"] == "\x1fx"]
    assert (snapshot_items, live_heads, expiry_entries) == (["e"], winners, []), items  # nothing of "old" is left


ATTEMPTS = 4
"""Creates of session "f" each large-creator process tries."""


def _first_snapshots(kind: str, tag: str) -> list[SessionSnapshot]:
    """What a large creator creates session "f" with: a first snapshot past one transaction (its blob
    staged) and a child (``kind="staged"``), or more snapshots than one transaction holds (``"many"``)."""
    import random

    from tests.dynamodb.helpers import noise

    if kind == "many":
        return [
            SessionSnapshot(
                snapshot_id=f"{tag}-m{i}",
                parent_id=f"{tag}-m{i - 1}" if i else None,
                state=SessionState(messages=(Message.of_text("user", f"{tag} turn {i}"),)),
            )
            for i in range(MANY)
        ]
    big = SessionState(messages=(Message.of_text("user", f"{tag} " + noise(random.Random(tag), 3_500_000)),))
    root = SessionSnapshot(snapshot_id=f"{tag}-root", state=big)
    return [root, SessionSnapshot(snapshot_id=f"{tag}-child", parent_id=f"{tag}-root", state=SessionState())]


MANY = 120
"""First snapshots of a "many" create: more than one transaction holds."""


def _large_creator_process(
    endpoint: str, table: str, kind: str, writer: int, attempts: int, results: Any, done: Any
) -> None:
    """Creates session "f" with first snapshots past one transaction (see :func:`_first_snapshots`), again
    and again; writer -1 deletes "f" every few milliseconds until the others are done. Reports each
    attempt's outcome."""
    import random
    import time

    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, **CREDENTIALS)
    store = DynamoDBSessionStore(table, client)
    outcomes: list[tuple[str, str, str]] = []
    if writer < 0:
        while not done.is_set():
            outcomes.append(("delete", str(store.delete_session("f")), ""))
            time.sleep(random.uniform(0.005, 0.05))
        results.put((writer, outcomes))
        return
    for attempt in range(attempts):
        tag = f"w{writer}-{attempt}"
        try:
            store.create_session("f", snapshots=_first_snapshots(kind, tag))
            outcomes.append((tag, "created", ""))
        except GenkitError as exc:
            outcomes.append((tag, exc.status.value, exc.message))
    results.put((writer, outcomes))


@pytest.mark.parametrize("kind", ["staged", "many"])
def test_large_creates_and_deletes_of_one_session_in_separate_processes_land_whole_or_leave_nothing(
    kind: str,
) -> None:
    from tests.dynamodb.helpers import hidden_items_unlisted, parts_left_forever

    endpoint, client, table = _new_table("large")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    done = context.Event()
    workers = [
        context.Process(target=_large_creator_process, args=(endpoint, table, kind, n, ATTEMPTS, results, done))
        for n in (-1, 0, 1)
    ]
    for process in workers:
        process.start()
    answers = dict(results.get(timeout=300) for _ in workers[1:])
    done.set()
    answers.update([results.get(timeout=60)])
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    outcomes = [o for n in (0, 1) for o in answers[n]]
    # A create lands, finds the other's session there, or (its staged parts taken by a deletion in every
    # round) gives up with ABORTED and says to retry.
    for tag, status, message in outcomes:
        assert status in ("created", "ALREADY_EXISTS") or (status == "ABORTED" and "retry" in message), (tag, message)
    created = [tag for tag, status, _ in outcomes if status == "created"]
    reader = DynamoDBSessionStore(table, client)
    listed = [s.snapshot_id for s in reader.list_snapshots("f")]
    record = reader.get_session_record("f")
    tags = [f"w{n}-{a}" for n in (0, 1) for a in range(ATTEMPTS)]
    every_id = [s.snapshot_id for tag in tags for s in _first_snapshots(kind, tag)]
    readable = {i for i in every_id if reader.get_snapshot(snapshot_id=i) is not None}
    if record is None:  # a deletion came last: nothing of any create reads
        assert listed == [] and readable == set(), (listed, readable)
    else:  # the create that came last reads whole, equal to what it wrote, and nothing else does
        tag = listed[0].rsplit("-", 1)[0]
        assert tag in created, (listed, outcomes)
        mine = _first_snapshots(kind, tag)
        assert sorted(listed) == sorted(s.snapshot_id for s in mine) and readable == set(listed)
        for snapshot in mine:
            stored = reader.get_snapshot(snapshot_id=snapshot.snapshot_id)
            assert stored is not None and stored.state is not None and snapshot.state is not None
            assert stored.state.message_list == snapshot.state.message_list
        assert record.version % len(mine) == 0 and record.leaf_id == mine[-1].snapshot_id
    store = DynamoDBSessionStore(table, client)
    assert parts_left_forever(store, readable) == [], "a create left parts that nothing references and never expire"
    assert hidden_items_unlisted(store) == [], "a create left snapshot items that nothing lists"
