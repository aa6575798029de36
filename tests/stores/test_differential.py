"""A differential property test: random sequences of session operations run on the in-memory store and
on DynamoDB (two store instances over one table, taking turns at random, as two processes would), under
one clock that ticks a millisecond a step and that the sequence moves on, so sessions expire
mid-sequence. After every step both stores must agree: the same answer, or a ``GenkitError`` of the
same status.

Operations: create a session (with or without a ttl, sliding or not), save a new snapshot (on the leaf,
as a root, on a named parent, pending or completed), finish a pending one, abort, heartbeat, delete a
session, restore a batch of snapshots (roots, children, cycles, any status, stamps that tie), create a
session with its first snapshots (the same, unstamped too, naming another session or an id twice; either
batch now and then padded past what one DynamoDB transaction holds), a save on
an expected version (compare-and-set), set or drop a metadata key, move the clock on, delete expired
sessions, and every read (by id, a session's leaf, its listing, its record). Snapshot ids are shared by
every session, so an id is reused across sessions, after deletions and after expiry.

``GENKIT_DIFF_EXAMPLES`` (default 12) sets how many sequences run; ``GENKIT_FUZZ_REPORT`` prints the
counts (sequences, steps, agreed errors by status).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from genkit_sessions import GenkitError, InMemorySessionStore, Message, SessionSnapshot, SessionState
from genkit_sessions.model.clock import format_timestamp
from genkit_sessions.stores.protocol import CallOptions, SessionRecord
from tests.stores.machines import Agreement, StepClock, outcome, run_machine

EXAMPLES = int(os.environ.get("GENKIT_DIFF_EXAMPLES", "12"))
SNAPSHOT_IDS = ("a", "b", "c", "d", "e")
SESSION_IDS = ("s1", "s2", "s3")
TTLS = (None, timedelta(seconds=30), timedelta(minutes=5))
STEPS = (timedelta(seconds=1), timedelta(seconds=20), timedelta(seconds=45), timedelta(minutes=6))
PADDING = (0, 0, 0, 0, 0, 120)
"""How many more snapshots a restore or a create with first snapshots carries, now and then: 120 take
DynamoDB past one transaction (its items in batches, then its heads)."""


COUNTS = Agreement()


def _second(stamp: str | None) -> str | None:
    return None if stamp is None else stamp[:19]  # DynamoDB keeps expiry in whole milliseconds


def _plain(value: Any) -> Any:
    """What both stores must agree on, without the stamps each makes for itself."""
    if isinstance(value, SessionSnapshot):
        texts = tuple(m.text for m in value.state.messages) if value.state is not None else None
        return ("snapshot", value.snapshot_id, value.session_id, value.parent_id, str(value.status), texts)
    if isinstance(value, SessionRecord):
        expiry = _second(value.expires_at)
        metadata = tuple(sorted(value.metadata.items()))
        return ("record", value.id, value.version, value.leaf_id, expiry, value.ttl, value.sliding, metadata)
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item) for item in value)
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)


def _snapshot(snapshot_id: str, session: str, parent: str | None, status: str, text: str) -> SessionSnapshot:
    state = SessionState(session_id=session, messages=(Message.of_text("user", text),))
    return SessionSnapshot(snapshot_id=snapshot_id, session_id=session, parent_id=parent, status=status, state=state)


class DifferentialMachine(RuleBasedStateMachine):
    make: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = StepClock()
        self.memory = InMemorySessionStore(clock=self.clock)
        first = type(self).make(clock=self.clock)
        second = type(first)(first.table_name, first.client, clock=self.clock)
        self.dynamo = (first, second)
        self.turn = 0
        COUNTS.sequences += 1

    def both(self, writer: int, call: Callable[[Any], Any]) -> Any:
        """Run ``call`` on each store (DynamoDB through instance ``writer``); they must agree."""
        self.turn += 1
        self.clock.tick()
        expected = outcome(lambda: call(self.memory), _plain)
        return COUNTS.check(self.turn, expected, outcome(lambda: call(self.dynamo[writer]), _plain))

    def leaf_id(self, session: str) -> str | None:
        """The session's leaf in memory, to save a child of; None when it has none, or only a cyclic
        chain a restore wrote (DATA_LOSS)."""
        try:
            leaf = self.memory.get_snapshot(session_id=session)
        except GenkitError:
            return None
        return leaf.snapshot_id if leaf is not None else None

    @rule(
        session=st.sampled_from(SESSION_IDS),
        ttl=st.sampled_from(TTLS),
        sliding=st.booleans(),
        writer=st.integers(0, 1),
    )
    def create(self, session: str, ttl: timedelta | None, sliding: bool, writer: int) -> None:
        self.both(writer, lambda store: store.create_session(session, ttl=ttl, sliding=sliding))

    @rule(
        snapshot_id=st.sampled_from(SNAPSHOT_IDS),
        session=st.sampled_from(SESSION_IDS),
        on=st.sampled_from(("leaf", "root", *SNAPSHOT_IDS)),
        status=st.sampled_from(("completed", "pending")),
        writer=st.integers(0, 1),
    )
    def save_new(self, snapshot_id: str, session: str, on: str, status: str, writer: int) -> None:
        parent = {"leaf": self.leaf_id(session), "root": None}.get(on, on)
        new = _snapshot(snapshot_id, session, parent, status, f"{snapshot_id} at {self.turn}")
        self.both(writer, lambda store: store.save_snapshot(snapshot_id, lambda now: new if now is None else None))

    @rule(
        snapshot_id=st.sampled_from(SNAPSHOT_IDS),
        session=st.sampled_from(SESSION_IDS),
        expected=st.integers(0, 4),
        writer=st.integers(0, 1),
    )
    def save_on_version(self, snapshot_id: str, session: str, expected: int, writer: int) -> None:
        parent = self.leaf_id(session)
        new = _snapshot(snapshot_id, session, parent, "completed", f"{snapshot_id} on v{expected} at {self.turn}")
        options = CallOptions(expected_version=expected)
        self.both(
            writer,
            lambda store: store.save_snapshot(snapshot_id, lambda now: new if now is None else None, options=options),
        )

    @rule(
        session=st.sampled_from(SESSION_IDS),
        value=st.sampled_from(("alice", "bob", None)),
        writer=st.integers(0, 1),
    )
    def set_metadata(self, session: str, value: str | None, writer: int) -> None:
        self.both(writer, lambda store: store.set_session_metadata(session, "principal", value))

    @rule(snapshot_id=st.sampled_from(SNAPSHOT_IDS), writer=st.integers(0, 1))
    def finish(self, snapshot_id: str, writer: int) -> None:
        text = f"finished at {self.turn}"

        def done(now: SessionSnapshot | None) -> SessionSnapshot | None:
            if now is None or now.status != "pending":
                return None
            assert now.session_id is not None
            return _snapshot(now.snapshot_id, now.session_id, now.parent_id, "completed", text)

        self.both(writer, lambda store: store.save_snapshot(snapshot_id, done))

    @rule(snapshot_id=st.sampled_from(SNAPSHOT_IDS), writer=st.integers(0, 1))
    def abort(self, snapshot_id: str, writer: int) -> None:
        self.both(writer, lambda store: store.abort_snapshot(snapshot_id))

    @rule(snapshot_id=st.sampled_from(SNAPSHOT_IDS), writer=st.integers(0, 1))
    def heartbeat(self, snapshot_id: str, writer: int) -> None:
        self.both(writer, lambda store: store.heartbeat(snapshot_id))

    @rule(session=st.sampled_from(SESSION_IDS), writer=st.integers(0, 1))
    def delete(self, session: str, writer: int) -> None:
        self.both(writer, lambda store: store.delete_session(session))

    @rule(
        batch=st.lists(
            st.tuples(
                st.sampled_from(SNAPSHOT_IDS),
                st.sampled_from((None, *SNAPSHOT_IDS)),
                st.sampled_from(("completed", "pending", "aborted")),
                st.integers(-2, 0),
            ),
            min_size=1,
            max_size=3,
            unique_by=lambda entry: entry[0],
        ),
        session=st.sampled_from(SESSION_IDS),
        writer=st.integers(0, 1),
        padding=st.sampled_from(PADDING),
    )
    def restore(self, batch: list[tuple[str, str | None, str, int]], session: str, writer: int, padding: int) -> None:
        """A batch of snapshots written verbatim: roots or children of any id (broken chains and cycles
        included), of any status, stamped now or up to two seconds before (so createdAt orders them);
        at times with more children of its first one than one DynamoDB transaction holds."""
        given = []
        for snapshot_id, parent, status, seconds in batch:
            stamp = format_timestamp(self.clock.now + timedelta(seconds=seconds))
            state = _snapshot(snapshot_id, session, None, status, f"restored at {self.turn}").state
            given.append(
                SessionSnapshot(
                    snapshot_id=snapshot_id,
                    session_id=session,
                    parent_id=parent,
                    created_at=stamp,
                    updated_at=stamp,
                    status=status,
                    state=state,
                )
            )
        given += self._padding(given[0], padding, stamped=True)
        self.both(writer, lambda store: store.restore_snapshots(given))

    def _padding(self, first: SessionSnapshot, count: int, stamped: bool) -> list[SessionSnapshot]:
        """``count`` children of ``first``, with ids of their own (no other step uses them)."""
        stamp = format_timestamp(self.clock.now - timedelta(seconds=3))
        stamps = {"created_at": stamp, "updated_at": stamp} if stamped else {}
        return [
            SessionSnapshot(
                snapshot_id=f"pad{self.turn}-{n}",
                session_id=first.session_id,
                parent_id=first.snapshot_id,
                state=SessionState(messages=(Message.of_text("user", f"padding {n}"),)),
                **stamps,
            )
            for n in range(count)
        ]

    @rule(
        batch=st.lists(
            st.tuples(
                st.sampled_from(SNAPSHOT_IDS),
                st.sampled_from((None, *SNAPSHOT_IDS)),
                st.sampled_from(("completed", "pending", "aborted")),
                st.sampled_from((None, -2, 0)),
                st.sampled_from((None, "own", "other")),
            ),
            min_size=1,
            max_size=3,
        ),
        session=st.sampled_from(SESSION_IDS),
        ttl=st.sampled_from(TTLS),
        writer=st.integers(0, 1),
        padding=st.sampled_from(PADDING),
    )
    def create_with_snapshots(
        self,
        batch: list[tuple[str, str | None, str, int | None, str | None]],
        session: str,
        ttl: timedelta | None,
        writer: int,
        padding: int,
    ) -> None:
        """A session created with its first snapshots (what a fork writes): unstamped or stamped, naming
        the session, none, or another; ids that may repeat, or be held by any session; at times with more
        children of its first one than one DynamoDB transaction holds."""
        given = []
        for snapshot_id, parent, status, seconds, names in batch:
            stamps = {}
            if seconds is not None:
                stamp = format_timestamp(self.clock.now + timedelta(seconds=seconds))
                stamps = {"created_at": stamp, "updated_at": stamp}
            owner = {"own": session, "other": "elsewhere", None: None}[names]
            given.append(
                SessionSnapshot(
                    snapshot_id=snapshot_id,
                    session_id=owner,
                    parent_id=parent,
                    status=status,
                    state=SessionState(messages=(Message.of_text("user", f"first at {self.turn}"),)),
                    **stamps,
                )
            )
        given += self._padding(given[0], padding, stamped=False)
        self.both(writer, lambda store: store.create_session(session, ttl=ttl, snapshots=given))

    @rule(by=st.sampled_from(STEPS))
    def time_passes(self, by: timedelta) -> None:
        self.clock.now += by

    @rule(writer=st.integers(0, 1))
    def delete_expired(self, writer: int) -> None:
        self.both(writer, lambda store: store.delete_expired_sessions(self.clock.now))

    @rule(snapshot_id=st.sampled_from(SNAPSHOT_IDS), writer=st.integers(0, 1))
    def get_by_id(self, snapshot_id: str, writer: int) -> None:
        self.both(writer, lambda store: store.get_snapshot(snapshot_id=snapshot_id))

    @rule(session=st.sampled_from(SESSION_IDS), writer=st.integers(0, 1))
    def read_session(self, session: str, writer: int) -> None:
        self.both(writer, lambda store: store.get_snapshot(session_id=session))
        self.both(writer, lambda store: store.list_snapshots(session))
        self.both(writer, lambda store: store.get_session_record(session))


def test_random_session_operations_agree_on_memory_and_on_dynamodb_instances_sharing_a_table(
    request: pytest.FixtureRequest,
) -> None:
    run_machine(DifferentialMachine, "dynamodb-inprocess", request, examples=EXAMPLES, steps=40)
    COUNTS.report("differential test")
