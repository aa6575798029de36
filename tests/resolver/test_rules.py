"""Every resolution rule R1-R17 of the contract, through both the sync and the async driver."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    AgentInit,
    GenkitError,
    InMemorySessionStore,
    Message,
    Resolution,
    ResolutionSource,
    ResumePolicy,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    SessionStoreOptions,
    SnapshotStatus,
)
from genkit_sessions.model.clock import format_timestamp

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
Resolve = Callable[..., Resolution]


@pytest.fixture(params=["sync", "async"])
def resolve(request: pytest.FixtureRequest) -> Resolve:
    """Runs a resolution through the sync driver, or through the async one on the store's async face."""
    if request.param == "sync":
        return SessionResolver.resolve  # type: ignore[return-value]

    def run(store: Any, server_managed: bool, init: AgentInit | None, opts: SessionStoreOptions | None = None) -> Any:
        async_store = store.aio if store is not None else None
        return asyncio.run(SessionResolver.aresolve(async_store, server_managed, init, opts))

    return run


def save(
    store: InMemorySessionStore,
    session_id: str,
    snapshot_id: str,
    parent_id: str | None = None,
    status: SnapshotStatus = SnapshotStatus.COMPLETED,
    messages: int = 1,
    context: Any = None,
    custom: Any = None,
) -> SessionSnapshot:
    state = SessionState(
        session_id=session_id,
        messages=tuple(Message.of_text("user", f"{snapshot_id} #{i}") for i in range(messages)),
        custom=custom,
    )
    snapshot = SessionSnapshot(
        snapshot_id=snapshot_id, session_id=session_id, parent_id=parent_id, status=status, state=state
    )
    saved = store.save_snapshot(snapshot_id, lambda _: snapshot, context=context)
    assert saved is not None
    return saved


def raises(status: str, reason: str | None, action: Callable[[], object]) -> GenkitError:
    with pytest.raises(GenkitError) as caught:
        action()
    assert caught.value.status == status, caught.value
    assert caught.value.reason == reason, caught.value
    return caught.value


# --- R1 ----------------------------------------------------------------------------------------


def test_r1_server_managed_without_store_raises_invalid_argument(resolve: Resolve) -> None:
    error = raises("INVALID_ARGUMENT", None, lambda: resolve(None, True, AgentInit()))
    assert "needs a session store" in error.message


def test_r1_client_managed_with_store_raises_invalid_argument(resolve: Resolve) -> None:
    error = raises("INVALID_ARGUMENT", None, lambda: resolve(InMemorySessionStore(), False, AgentInit()))
    assert "no store may be given" in error.message


# --- R2 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "init"), [("snapshotId", AgentInit(snapshot_id="s1")), ("sessionId", AgentInit(session_id="c1"))]
)
def test_r2_client_managed_with_an_id_raises_store_not_configured_naming_the_field(
    resolve: Resolve, field: str, init: AgentInit
) -> None:
    error = raises("FAILED_PRECONDITION", "SESSION_STORE_NOT_CONFIGURED", lambda: resolve(None, False, init))
    assert field in error.message
    assert error.http_code == 400


def test_r2_wins_over_r6_for_a_malformed_session_id_in_client_mode(resolve: Resolve) -> None:
    raises(
        "FAILED_PRECONDITION", "SESSION_STORE_NOT_CONFIGURED", lambda: resolve(None, False, AgentInit(session_id=" "))
    )


def test_r2_wins_over_r3_when_client_sends_both_state_and_snapshot_id(resolve: Resolve) -> None:
    init = AgentInit(snapshot_id="s1", state=SessionState(custom={"a": 1}))
    raises("FAILED_PRECONDITION", "SESSION_STORE_NOT_CONFIGURED", lambda: resolve(None, False, init))


# --- R3 ----------------------------------------------------------------------------------------


def test_r3_client_state_hydrates_keeping_its_session_id(resolve: Resolve) -> None:
    state = SessionState(session_id="chat-7", messages=(Message.of_text("user", "hi"),), custom={"step": 2})
    resolution = resolve(None, False, AgentInit(state=state))
    assert resolution.ok and resolution.rule == "R3"
    assert resolution.source is ResolutionSource.HYDRATED
    assert resolution.session is not None and resolution.session.id == "chat-7"
    assert resolution.session.state == state
    assert resolution.snapshot is None


def test_r3_client_state_without_session_id_gets_a_new_uuid(resolve: Resolve) -> None:
    resolution = resolve(None, False, AgentInit(state=SessionState(custom={"a": 1})))
    assert resolution.session is not None and UUID4.match(resolution.session.id)
    assert resolution.session.state.session_id == resolution.session.id
    assert resolution.session.custom == {"a": 1}


def test_r3_hydrated_session_returns_final_state_and_refuses_to_save(resolve: Resolve) -> None:
    resolution = resolve(None, False, AgentInit(state=SessionState(session_id="c")))
    session = resolution.session
    assert session is not None and not session.server_managed
    session.add_messages(Message.of_text("model", "hello"))
    assert [m.text for m in session.final_state().message_list] == ["hello"]
    raises("FAILED_PRECONDITION", "SESSION_STORE_NOT_CONFIGURED", session.save)


# --- R4 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("init", [None, AgentInit()], ids=["init-none", "init-empty"])
def test_r4_client_managed_with_nothing_is_a_fresh_session_with_a_new_uuid(resolve: Resolve, init: Any) -> None:
    resolution = resolve(None, False, init)
    assert resolution.ok and resolution.rule == "R4" and resolution.source is ResolutionSource.FRESH
    assert resolution.session is not None and UUID4.match(resolution.session.id)
    assert resolution.session.messages == ()


# --- R5 ----------------------------------------------------------------------------------------


def test_r5_server_managed_with_client_state_raises_failed_precondition(resolve: Resolve) -> None:
    init = AgentInit(session_id="s", state=SessionState(session_id="s"))
    error = raises("FAILED_PRECONDITION", None, lambda: resolve(InMemorySessionStore(), True, init))
    assert "state" in error.message


# --- R6 ----------------------------------------------------------------------------------------

BAD_IDS = {
    "empty": "",
    "whitespace": " \t ",
    "control-char": "abc\x00def",
    "newline": "abc\ndef",
    "too-long": "x" * 513,
    "too-long-multibyte": "é" * 257,
}


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
def test_r6_invalid_snapshot_id_raises_invalid_snapshot_id(resolve: Resolve, bad: str) -> None:
    raises(
        "INVALID_ARGUMENT",
        "INVALID_SNAPSHOT_ID",
        lambda: resolve(InMemorySessionStore(), True, AgentInit(snapshot_id=bad)),
    )


@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
def test_r6_invalid_session_id_raises_invalid_session_id(resolve: Resolve, bad: str) -> None:
    raises(
        "INVALID_ARGUMENT",
        "INVALID_SESSION_ID",
        lambda: resolve(InMemorySessionStore(), True, AgentInit(session_id=bad)),
    )


def test_r6_an_id_of_exactly_512_utf8_bytes_is_valid(resolve: Resolve) -> None:
    resolution = resolve(InMemorySessionStore(), True, AgentInit(session_id="é" * 256))
    assert resolution.ok and resolution.rule == "R11"


# --- R7 ----------------------------------------------------------------------------------------


def test_r7_unknown_snapshot_id_raises_snapshot_not_found(resolve: Resolve) -> None:
    error = raises(
        "INVALID_ARGUMENT",
        "SNAPSHOT_NOT_FOUND",
        lambda: resolve(InMemorySessionStore(), True, AgentInit(snapshot_id="nope")),
    )
    assert "nope" in error.message


def test_r7_snapshot_of_another_tenant_is_not_found(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "sess", "snap", context={"tenant": "acme"})
    other = SessionStoreOptions(context={"tenant": "globex"})
    raises("INVALID_ARGUMENT", "SNAPSHOT_NOT_FOUND", lambda: resolve(store, True, AgentInit(snapshot_id="snap"), other))
    mine = resolve(store, True, AgentInit(snapshot_id="snap"), SessionStoreOptions(context={"tenant": "acme"}))
    assert mine.ok and mine.rule == "R10"


# --- R8 ----------------------------------------------------------------------------------------


def test_r8_snapshot_of_another_session_raises_invalid_session_id(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "alice", "a1")
    init = AgentInit(snapshot_id="a1", session_id="bob")
    raises("INVALID_ARGUMENT", "INVALID_SESSION_ID", lambda: resolve(store, True, init))


def test_r8_matching_session_and_snapshot_ids_resume(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "alice", "a1")
    resolution = resolve(store, True, AgentInit(snapshot_id="a1", session_id="alice"))
    assert resolution.ok and resolution.rule == "R10"


def test_r8_is_checked_before_r9(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "alice", "a1", status=SnapshotStatus.FAILED)
    raises(
        "INVALID_ARGUMENT",
        "INVALID_SESSION_ID",
        lambda: resolve(store, True, AgentInit(snapshot_id="a1", session_id="bob")),
    )


# --- R9 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", [SnapshotStatus.PENDING, SnapshotStatus.ABORTING, SnapshotStatus.FAILED, SnapshotStatus.ABORTED]
)
def test_r9_snapshot_that_is_not_completed_raises_not_resumable(resolve: Resolve, status: SnapshotStatus) -> None:
    store = InMemorySessionStore()
    save(store, "s", "p")
    save(store, "s", "x", parent_id="p", status=status)
    error = raises(
        "FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE", lambda: resolve(store, True, AgentInit(snapshot_id="x"))
    )
    assert status.value in error.message


def test_r9_pending_snapshot_with_a_stale_heartbeat_reads_as_expired(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "x", status=SnapshotStatus.PENDING)
    later = SessionStoreOptions(heartbeat_timeout=30, clock=lambda: datetime.now(timezone.utc) + timedelta(seconds=31))
    error = raises(
        "FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE", lambda: resolve(store, True, AgentInit(snapshot_id="x"), later)
    )
    assert error.details["status"] == "expired"


# --- R10 ---------------------------------------------------------------------------------------


def test_r10_completed_snapshot_resumes_and_the_next_save_forks_from_it(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    first = save(store, "s", "a", messages=2)
    save(store, "s", "b", parent_id="a", messages=4)
    resolution = resolve(store, True, AgentInit(snapshot_id="a"))
    assert resolution.ok and resolution.rule == "R10"
    assert resolution.source is ResolutionSource.RESUMED_BY_SNAPSHOT_ID
    assert resolution.snapshot == first
    session = resolution.session
    assert session is not None and session.id == "s" and len(session.messages) == 2
    session.add_messages(Message.of_text("user", "fork"))
    is_sync = resolve is SessionResolver.resolve
    fork = session.save(finish_reason="stop") if is_sync else asyncio.run(session.asave(finish_reason="stop"))
    assert fork.parent_id == "a" and fork.session_id == "s"
    assert {s.snapshot_id for s in store.list_snapshots("s") if s.parent_id == "a"} == {"b", fork.snapshot_id}


# --- R11 ---------------------------------------------------------------------------------------


def test_r11_unknown_session_id_starts_fresh_under_that_id(resolve: Resolve) -> None:
    resolution = resolve(InMemorySessionStore(), True, AgentInit(session_id="brand-new"))
    assert resolution.ok and resolution.rule == "R11" and resolution.source is ResolutionSource.FRESH
    assert resolution.session is not None and resolution.session.id == "brand-new"
    assert resolution.snapshot is None


# --- R12 ---------------------------------------------------------------------------------------


def test_r12_completed_leaf_resumes_by_session_id(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a")
    leaf = save(store, "s", "b", parent_id="a", messages=3)
    resolution = resolve(store, True, AgentInit(session_id="s"))
    assert resolution.ok and resolution.rule == "R12"
    assert resolution.source is ResolutionSource.RESUMED_BY_SESSION_ID
    assert resolution.snapshot == leaf
    assert resolution.session is not None and resolution.session.state == leaf.state


def test_r12_after_a_fork_the_most_recently_created_leaf_wins(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "root")
    save(store, "s", "left", parent_id="root")
    save(store, "s", "right", parent_id="root")
    save(store, "s", "left-2", parent_id="left")
    resolution = resolve(store, True, AgentInit(session_id="s"))
    assert resolution.snapshot is not None and resolution.snapshot.snapshot_id == "left-2"


# --- R13 ---------------------------------------------------------------------------------------

NOT_COMPLETED = [SnapshotStatus.PENDING, SnapshotStatus.ABORTING, SnapshotStatus.FAILED, SnapshotStatus.ABORTED]


@pytest.mark.parametrize("status", NOT_COMPLETED)
def test_r13_leaf_not_completed_raises_not_resumable_by_default(resolve: Resolve, status: SnapshotStatus) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a")
    save(store, "s", "b", parent_id="a", status=status)
    error = raises(
        "FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE", lambda: resolve(store, True, AgentInit(session_id="s"))
    )
    assert error.details["snapshotId"] == "b"


def test_r13_expired_leaf_raises_not_resumable(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a", status=SnapshotStatus.PENDING)
    later = SessionStoreOptions(clock=lambda: datetime.now(timezone.utc) + timedelta(minutes=5))
    error = raises(
        "FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE", lambda: resolve(store, True, AgentInit(session_id="s"), later)
    )
    assert error.details["status"] == "expired"


def test_r13_fresh_heartbeat_keeps_a_pending_leaf_pending(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a", status=SnapshotStatus.PENDING)
    store.heartbeat("a")
    soon = SessionStoreOptions(clock=lambda: datetime.now(timezone.utc) + timedelta(seconds=10))
    error = raises(
        "FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE", lambda: resolve(store, True, AgentInit(session_id="s"), soon)
    )
    assert error.details["status"] == "pending"


@pytest.mark.parametrize("status", NOT_COMPLETED)
def test_r13_walk_back_resumes_the_nearest_completed_ancestor(resolve: Resolve, status: SnapshotStatus) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a")
    good = save(store, "s", "b", parent_id="a", messages=2)
    save(store, "s", "c", parent_id="b", status=SnapshotStatus.FAILED)
    save(store, "s", "d", parent_id="c", status=status)
    resolution = resolve(
        store, True, AgentInit(session_id="s"), SessionStoreOptions(resume_policy=ResumePolicy.WALK_BACK)
    )
    assert resolution.ok and resolution.rule == "R13"
    assert resolution.source is ResolutionSource.RESUMED_BY_SESSION_ID
    assert resolution.snapshot == good


def test_r13_walk_back_without_a_completed_ancestor_starts_fresh_under_the_id(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a", status=SnapshotStatus.FAILED)
    save(store, "s", "b", parent_id="a", status=SnapshotStatus.ABORTED)
    resolution = resolve(store, True, AgentInit(session_id="s"), SessionStoreOptions(resume_policy="walk-back"))
    assert resolution.ok and resolution.source is ResolutionSource.FRESH
    assert resolution.session is not None and resolution.session.id == "s" and resolution.snapshot is None


# --- R14 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("init", [None, AgentInit()], ids=["init-none", "init-empty"])
def test_r14_server_managed_with_nothing_is_a_fresh_session(resolve: Resolve, init: Any) -> None:
    store = InMemorySessionStore()
    resolution = resolve(store, True, init)
    assert resolution.ok and resolution.rule == "R14" and resolution.source is ResolutionSource.FRESH
    assert resolution.session is not None and UUID4.match(resolution.session.id)
    assert store.list_snapshots(resolution.session.id) == []


# --- R15 ---------------------------------------------------------------------------------------


class FailingStore:
    """A store whose backend fails every read with ``error`` (sync and async faces)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.aio = self._Async(self)

    def get_snapshot(self, **_: Any) -> SessionSnapshot | None:
        raise self.error

    def save_snapshot(self, *_: Any, **__: Any) -> SessionSnapshot | None:
        raise self.error

    class _Async:
        def __init__(self, outer: FailingStore) -> None:
            self.outer = outer

        async def get_snapshot(self, **kwargs: Any) -> SessionSnapshot | None:
            return self.outer.get_snapshot(**kwargs)

        async def save_snapshot(self, *args: Any, **kwargs: Any) -> SessionSnapshot | None:
            return self.outer.save_snapshot(*args, **kwargs)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (GenkitError("UNAVAILABLE", "endpoint unreachable"), "UNAVAILABLE"),
        (GenkitError("RESOURCE_EXHAUSTED", "throttled: ProvisionedThroughputExceeded"), "RESOURCE_EXHAUSTED"),
        (GenkitError("DEADLINE_EXCEEDED", "read timed out"), "DEADLINE_EXCEEDED"),
        (GenkitError("FAILED_PRECONDITION", "table sessions does not exist"), "FAILED_PRECONDITION"),
        (TimeoutError("socket timed out"), "DEADLINE_EXCEEDED"),
        (ConnectionRefusedError("connection refused"), "UNAVAILABLE"),
        (RuntimeError("driver exploded"), "UNKNOWN"),
    ],
    ids=["unavailable", "throttled", "deadline", "missing-table", "raw-timeout", "raw-connection", "raw-other"],
)
@pytest.mark.parametrize(
    "init", [AgentInit(session_id="s"), AgentInit(snapshot_id="x")], ids=["by-session", "by-snapshot"]
)
def test_r15_store_failure_is_a_graceful_failure_with_the_mapped_status(
    resolve: Resolve, error: BaseException, status: str, init: AgentInit
) -> None:
    resolution = resolve(FailingStore(error), True, init)
    assert not resolution.ok and resolution.rule == "R15"
    assert resolution.error is not None and resolution.error.status == status
    assert str(error.message if isinstance(error, GenkitError) else error) in resolution.error.message


# --- R16 ---------------------------------------------------------------------------------------


def test_r16_store_reporting_undecodable_data_is_a_data_loss_failure(resolve: Resolve) -> None:
    resolution = resolve(
        FailingStore(GenkitError("DATA_LOSS", "snapshot x: bad zlib stream")), True, AgentInit(snapshot_id="x")
    )
    assert resolution.rule == "R16" and resolution.error is not None and resolution.error.status == "DATA_LOSS"
    assert "bad zlib stream" in resolution.error.message


def test_r16_cyclic_parent_chain_under_walk_back_is_data_loss(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    stamp = format_timestamp(datetime(2026, 1, 1, tzinfo=timezone.utc))
    store.restore_snapshots(
        [
            SessionSnapshot(snapshot_id="a", session_id="s", parent_id="b", created_at=stamp, status="failed"),
            SessionSnapshot(snapshot_id="b", session_id="s", parent_id="a", created_at=stamp, status="failed"),
            SessionSnapshot(snapshot_id="c", session_id="s", parent_id="b", created_at=stamp, status="failed"),
        ]
    )
    resolution = resolve(store, True, AgentInit(session_id="s"), SessionStoreOptions(resume_policy="walk-back"))
    assert resolution.rule == "R16" and resolution.error is not None and resolution.error.status == "DATA_LOSS"
    assert "loops" in resolution.error.message


def test_r16_broken_parent_chain_under_walk_back_is_data_loss(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    stamp = format_timestamp(datetime(2026, 1, 1, tzinfo=timezone.utc))
    store.restore_snapshots(
        [SessionSnapshot(snapshot_id="c", session_id="s", parent_id="gone", created_at=stamp, status="failed")]
    )
    resolution = resolve(store, True, AgentInit(session_id="s"), SessionStoreOptions(resume_policy="walk-back"))
    assert resolution.rule == "R16" and resolution.error is not None and resolution.error.status == "DATA_LOSS"
    assert "broken" in resolution.error.message


class WrongAnswerStore(FailingStore):
    """A store that answers with something other than what was asked."""

    def __init__(self, answer: Any) -> None:
        super().__init__(RuntimeError("unused"))
        self.answer = answer

    def get_snapshot(self, **_: Any) -> Any:
        return self.answer


@pytest.mark.parametrize(
    ("answer", "init"),
    [
        ({"snapshotId": "x"}, AgentInit(snapshot_id="x")),
        (
            SessionSnapshot(snapshot_id="y", session_id="s", created_at="2026-01-01T00:00:00Z"),
            AgentInit(snapshot_id="x"),
        ),
        (
            SessionSnapshot(snapshot_id="y", session_id="other", created_at="2026-01-01T00:00:00Z"),
            AgentInit(session_id="s"),
        ),
        (SessionSnapshot(snapshot_id="x", created_at="2026-01-01T00:00:00Z"), AgentInit(snapshot_id="x")),
    ],
    ids=["not-a-snapshot", "wrong-snapshot-id", "wrong-session", "no-session-id"],
)
def test_r16_store_answering_with_the_wrong_data_is_data_loss(resolve: Resolve, answer: Any, init: AgentInit) -> None:
    resolution = resolve(WrongAnswerStore(answer), True, init)
    assert resolution.rule == "R16" and resolution.error is not None and resolution.error.status == "DATA_LOSS"


# --- R17 ---------------------------------------------------------------------------------------


def require_plan(custom: Any) -> list[str]:
    if not isinstance(custom, dict) or "plan" not in custom:
        return ["custom state must hold a 'plan'"]
    return []


def test_r17_validator_rejecting_resumed_state_is_an_invalid_argument_failure(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a", custom={"notes": []})
    opts = SessionStoreOptions(state_validator=require_plan)
    resolution = resolve(store, True, AgentInit(session_id="s"), opts)
    assert not resolution.ok and resolution.rule == "R17"
    assert resolution.error is not None and resolution.error.status == "INVALID_ARGUMENT"
    assert resolution.error.details["findings"] == ("custom state must hold a 'plan'",)


def test_r17_validator_rejecting_client_state_is_a_failure(resolve: Resolve) -> None:
    opts = SessionStoreOptions(state_validator=require_plan)
    resolution = resolve(None, False, AgentInit(state=SessionState(custom={"x": 1})), opts)
    assert resolution.rule == "R17" and not resolution.ok


def test_r17_validator_raising_value_error_counts_as_a_finding(resolve: Resolve) -> None:
    def strict(custom: Any) -> None:
        raise ValueError("step must be an integer")

    resolution = resolve(
        None, False, AgentInit(state=SessionState(custom={})), SessionStoreOptions(state_validator=strict)
    )
    assert resolution.error is not None and "step must be an integer" in resolution.error.message


def test_r17_validator_accepting_the_state_lets_the_turn_start(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a", custom={"plan": "lisbon"})
    resolution = resolve(store, True, AgentInit(session_id="s"), SessionStoreOptions(state_validator=require_plan))
    assert resolution.ok and resolution.rule == "R12"


# --- resolving changes nothing ----------------------------------------------------------------


def test_resolving_changes_neither_the_init_nor_the_store(resolve: Resolve) -> None:
    store = InMemorySessionStore()
    save(store, "s", "a")
    save(store, "s", "b", parent_id="a", status=SnapshotStatus.FAILED)
    before = list(store.list_snapshots("s"))
    init = AgentInit(session_id="s")
    kept = attrs.evolve(init)
    for opts in (SessionStoreOptions(), SessionStoreOptions(resume_policy="walk-back")):
        with contextlib.suppress(GenkitError):
            resolve(store, True, init, opts)
    assert init == kept
    assert list(store.list_snapshots("s")) == before


def test_sync_driver_refuses_an_async_store_and_async_driver_a_sync_one() -> None:
    store = InMemorySessionStore()
    raises("INVALID_ARGUMENT", None, lambda: SessionResolver.resolve(store.aio, True, AgentInit()))  # type: ignore[arg-type]
    raises(
        "INVALID_ARGUMENT",
        None,
        lambda: asyncio.run(SessionResolver.aresolve(store, True, AgentInit())),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("context", "require_tenant", "said"),
    [
        ({"tenantId": "acme"}, False, "'tenantId'"),
        ({"tenant": ""}, False, "non-empty string"),
        ({"tenant": 3}, False, "non-empty string"),
        ({"tenant": "a\x00b"}, False, "control character"),
        ({}, True, "requires a tenant"),
        (None, True, "requires a tenant"),
    ],
    ids=["near-miss-key", "empty-tenant", "int-tenant", "tenant-breaking-id-rules", "none-required", "no-context"],
)
@pytest.mark.parametrize(
    "init", [AgentInit(session_id="s"), AgentInit(snapshot_id="x")], ids=["by-session", "by-snapshot"]
)
def test_a_context_the_store_refuses_is_raised_as_invalid_argument_not_a_graceful_failure(
    resolve: Resolve, context: Any, require_tenant: bool, said: str, init: AgentInit
) -> None:
    store = InMemorySessionStore(require_tenant=require_tenant)
    with pytest.raises(GenkitError) as caught:
        resolve(store, True, init, SessionStoreOptions(context=context))
    assert caught.value.status == "INVALID_ARGUMENT" and said in caught.value.message


def test_a_store_refusing_a_read_with_invalid_argument_is_raised_as_the_callers_mistake(resolve: Resolve) -> None:
    refusal = GenkitError("INVALID_ARGUMENT", "context names no org; pass context={'org': 'acme'}")
    with pytest.raises(GenkitError) as caught:
        resolve(FailingStore(refusal), True, AgentInit(session_id="s"))
    assert caught.value is refusal
