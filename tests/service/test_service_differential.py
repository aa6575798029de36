"""A differential property test of the session service (contract sections 6-8): random sequences of
service calls run on a ``SessionService`` over the in-memory store and on two ``SessionService``s over
DynamoDB (two store instances on one table, taking turns at random, as two processes would), under one
clock that ticks a millisecond a step and that the sequence moves on. After every step both must agree:
the same answer, or a ``GenkitError`` of the same status.

Operations: create and find-or-create a session (with or without a ttl, sliding or not), append and add
an interaction (with or without an expected version, tool calls included), compact, fork a snapshot into
another session, replace the messages, set metadata, delete, move the clock on, delete expired
sessions, and every read (the record, the version, the full and the active messages, a bounded window,
the history stream in chunks of a session's leaf or of any snapshot minted, the history with its
fallback, a metadata search).

Snapshot ids the service mints are random, so each side's ids are named by the order they first appear
in its answers: the same sequence of answers on both sides gives the same names.

``GENKIT_SERVICE_DIFF_EXAMPLES`` (default 10) sets how many sequences run; ``GENKIT_FUZZ_REPORT``
prints the counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from genkit_sessions import (
    AppendResult,
    CompactionResult,
    InMemorySessionStore,
    KeepLastStrategy,
    Message,
    MessageCountTrigger,
    Role,
    SessionService,
    SessionSnapshot,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
)
from genkit_sessions.stores.protocol import HistoryWindow, SessionPage, SessionRecord
from tests.stores.machines import Agreement, StepClock, outcome, run_machine

EXAMPLES = int(os.environ.get("GENKIT_SERVICE_DIFF_EXAMPLES", "10"))
SESSION_IDS = ("s1", "s2", "s3", "f1", "f2")  # the f-sessions are not there at the start: forks make them
TTLS = (None, timedelta(seconds=30), timedelta(minutes=5))
STEPS = (timedelta(seconds=1), timedelta(seconds=20), timedelta(seconds=45), timedelta(minutes=6))
SHAPES = ("user", "user-model", "tool-call", "tool-answer", "none")


COUNTS = Agreement()


class Names:
    """One side's minted snapshot ids, named by the order they first appear in its answers."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, snapshot_id: str | None) -> str | None:
        if snapshot_id is None:
            return None
        return self.ids.setdefault(snapshot_id, f"#{len(self.ids)}")

    def actual(self, name: str) -> str | None:
        return next((i for i, n in self.ids.items() if n == name), None)


def _texts(messages: Any) -> tuple[str, ...]:
    return tuple(
        f"{m.role}:" + "|".join(getattr(p, "text", None) or type(p).__name__ for p in m.content) for m in messages
    )


def _plain(value: Any, names: Names) -> Any:
    """What both sides must agree on, with minted ids named and without the stamps each store makes."""
    if isinstance(value, SessionSnapshot):
        texts = _texts(value.state.messages) if value.state is not None else None
        parent = names(value.parent_id) if value.parent_id else value.parent_id
        return ("snapshot", names(value.snapshot_id), value.session_id, parent, str(value.status), texts)
    if isinstance(value, SessionRecord):
        expiry = None if value.expires_at is None else value.expires_at[:19]
        metadata = tuple(sorted(value.metadata.items()))
        leaf = names(value.leaf_id)
        return ("record", value.id, value.version, leaf, expiry, value.ttl, value.sliding, metadata)
    if isinstance(value, AppendResult):
        return ("append", value.ok, value.version, _plain(value.snapshot, names))
    if isinstance(value, CompactionResult):
        return ("compaction", value.changed, value.covered, _texts(value.summary), value.kept)
    if isinstance(value, HistoryWindow):
        return ("window", _texts(value.messages), value.truncated)
    if isinstance(value, SessionPage):
        return ("page", tuple(_plain(r, names) for r in value.records), value.next_page_token is not None)
    if isinstance(value, Message):
        return _texts([value])[0]
    if isinstance(value, (list, tuple)):
        return tuple(_plain(item, names) for item in value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def _messages(shape: str, turn: int) -> tuple[Message | None, tuple[Message, ...]]:
    """A user message (or none) and what follows it, for one interaction of ``shape``."""
    said = Message(role=Role.USER, content=(TextPart(f"user {turn}"),))
    if shape == "user":
        return said, ()
    if shape == "user-model":
        return said, (Message(role=Role.MODEL, content=(TextPart(f"model {turn}"),)),)
    if shape == "tool-call":
        call = ToolRequestPart(ToolRequest(name="lookup", ref=f"r{turn}", input={"q": turn}))
        return said, (Message(role=Role.MODEL, content=(call,)),)
    if shape == "tool-answer":
        answer = ToolResponsePart(ToolResponse(name="lookup", ref=f"r{turn}", output={"a": turn}))
        return None, (Message(role=Role.TOOL, content=(answer,)), Message(role=Role.MODEL, content=(TextPart("ok"),)))
    return None, ()  # "none": no message at all


class ServiceDifferentialMachine(RuleBasedStateMachine):
    make: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = StepClock()
        self.memory = SessionService(
            InMemorySessionStore(clock=self.clock, indexed_metadata=["team"]), clock=self.clock
        )
        first = type(self).make(clock=self.clock, indexed_metadata=["team"])
        second = type(first)(first.table_name, first.client, clock=self.clock, indexed_metadata=["team"])
        self.dynamo = (SessionService(first, clock=self.clock), SessionService(second, clock=self.clock))
        self.names = (Names(), Names())
        self.turn = 0
        COUNTS.sequences += 1

    def both(self, writer: int, call: Callable[[SessionService, Names], Any]) -> Any:
        """Run ``call`` on each side (DynamoDB through service ``writer``); they must agree."""
        self.turn += 1
        self.clock.tick()
        memory_names, dynamo_names = self.names
        expected = outcome(lambda: call(self.memory, memory_names), lambda answer: _plain(answer, memory_names))
        got = outcome(lambda: call(self.dynamo[writer], dynamo_names), lambda answer: _plain(answer, dynamo_names))
        return COUNTS.check(self.turn, expected, got)

    @initialize(
        turns=st.lists(st.tuples(st.sampled_from(SESSION_IDS[:3]), st.sampled_from(SHAPES)), max_size=12),
        writer=st.integers(0, 1),
    )
    def sessions_with_history(self, turns: list[tuple[str, str]], writer: int) -> None:
        for session in SESSION_IDS[:3]:
            self.both(writer, lambda service, _: service.create(session))  # noqa: B023 (called at once)
        for session, shape in turns:
            self._add(writer, session, shape, None, interaction=True)

    @rule(
        session=st.sampled_from(SESSION_IDS),
        ttl=st.sampled_from(TTLS),
        sliding=st.booleans(),
        team=st.sampled_from((None, "red", "blue")),
        find=st.booleans(),
        writer=st.integers(0, 1),
    )
    def create(
        self, session: str, ttl: timedelta | None, sliding: bool, team: str | None, find: bool, writer: int
    ) -> None:
        metadata = {"team": team} if team else None

        def call(service: SessionService, _: Names) -> Any:
            make = service.find_or_create if find else service.create
            return make(session, ttl=ttl, sliding=sliding, metadata=metadata)

        self.both(writer, call)

    @rule(
        session=st.sampled_from(SESSION_IDS),
        shapes=st.lists(st.sampled_from(SHAPES), min_size=1, max_size=4),
        expected=st.sampled_from((None, None, None, 0, 1, 2, 4)),
        interaction=st.booleans(),
        writer=st.integers(0, 1),
    )
    def append(self, session: str, shapes: list[str], expected: int | None, interaction: bool, writer: int) -> None:
        for shape in shapes:
            self._add(writer, session, shape, expected, interaction)

    def _add(self, writer: int, session: str, shape: str, expected: int | None, interaction: bool) -> None:
        said, rest = _messages(shape, self.turn)

        def call(service: SessionService, _: Names) -> Any:
            if interaction:
                return service.add_interaction(session, said, rest, expected_version=expected)
            return service.append(session, ([said] if said else []) + list(rest), expected_version=expected)

        self.both(writer, call)

    @rule(
        session=st.sampled_from(SESSION_IDS),
        over=st.integers(0, 6),
        keep=st.integers(0, 4),
        writer=st.integers(0, 1),
    )
    def compact(self, session: str, over: int, keep: int, writer: int) -> None:
        turn = self.turn
        strategy = KeepLastStrategy(keep, lambda covered: f"summary of {len(covered)} at {turn}")
        self.both(writer, lambda service, _: service.compact(session, MessageCountTrigger(over + 1), strategy))

    @rule(
        source=st.integers(0, 8),
        into=st.sampled_from(SESSION_IDS),
        team=st.sampled_from((None, "red")),
        writer=st.integers(0, 1),
    )
    def fork(self, source: int, into: str, team: str | None, writer: int) -> None:
        metadata = {"team": team} if team else None

        def call(service: SessionService, names: Names) -> Any:
            snapshot_id = names.actual(f"#{source}") or f"never-minted-{source}"
            return service.fork(snapshot_id, new_session_id=into, metadata=metadata)

        self.both(writer, call)

    @rule(session=st.sampled_from(SESSION_IDS), keep=st.integers(0, 3), writer=st.integers(0, 1))
    def replace(self, session: str, keep: int, writer: int) -> None:
        turn = self.turn
        replacement = [Message(role=Role.USER, content=(TextPart(f"kept {i} at {turn}"),)) for i in range(keep)]
        self.both(writer, lambda service, _: service.replace_messages(session, replacement))

    @rule(session=st.sampled_from(SESSION_IDS), team=st.sampled_from(("red", "blue", None)), writer=st.integers(0, 1))
    def set_team(self, session: str, team: str | None, writer: int) -> None:
        self.both(writer, lambda service, _: service.set_metadata(session, "team", team))

    @rule(session=st.sampled_from(SESSION_IDS), writer=st.integers(0, 1))
    def delete(self, session: str, writer: int) -> None:
        self.both(writer, lambda service, _: service.delete(session))

    @rule(by=st.sampled_from(STEPS))
    def time_passes(self, by: timedelta) -> None:
        self.clock.now += by

    @rule(writer=st.integers(0, 1))
    def delete_expired(self, writer: int) -> None:
        self.both(writer, lambda service, _: service.delete_expired())

    @rule(
        session=st.sampled_from(SESSION_IDS),
        max_messages=st.none() | st.integers(1, 5),
        max_bytes=st.none() | st.integers(40, 400),
        chunk=st.integers(1, 4),
        writer=st.integers(0, 1),
    )
    def read(self, session: str, max_messages: int | None, max_bytes: int | None, chunk: int, writer: int) -> None:
        self.both(writer, lambda service, _: service.find_by_id(session))
        self.both(writer, lambda service, _: service.version(session))
        self.both(writer, lambda service, _: service.get_messages(session))
        self.both(writer, lambda service, _: service.get_active_messages(session))
        self.both(
            writer, lambda service, _: service.read_window(session, max_messages=max_messages, max_bytes=max_bytes)
        )
        self.both(writer, lambda service, _: service.get_history(session, max_messages=max_messages, max_bytes=None))
        self.both(writer, lambda service, _: list(service.iter_history(session, chunk_messages=chunk)))
        self.both(writer, lambda service, _: list(service.iter_history(session, chunk_messages=chunk, full=True)))

    @rule(source=st.integers(0, 8), chunk=st.integers(1, 4), full=st.booleans(), writer=st.integers(0, 1))
    def read_snapshot_history(self, source: int, chunk: int, full: bool, writer: int) -> None:
        def call(service: SessionService, names: Names) -> Any:
            snapshot_id = names.actual(f"#{source}") or f"never-minted-{source}"
            return list(service.iter_history(snapshot_id=snapshot_id, chunk_messages=chunk, full=full))

        self.both(writer, call)

    @rule(team=st.sampled_from(("red", "blue")), writer=st.integers(0, 1))
    def search(self, team: str, writer: int) -> None:
        self.both(writer, lambda service, _: service.find_by_metadata("team", team, limit=2))


def test_random_service_calls_agree_on_memory_and_on_dynamodb_services_sharing_a_table(
    request: pytest.FixtureRequest,
) -> None:
    run_machine(ServiceDifferentialMachine, "dynamodb-inprocess", request, examples=EXAMPLES, steps=30)
    COUNTS.report("service differential test")
