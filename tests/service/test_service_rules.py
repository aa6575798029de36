"""The session service's rules V1-V13 (contract section 6), on every store: memory, DynamoDB in-process and
on a moto server over HTTP. Each test is named for what it proves and the rule it pins."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from genkit_sessions import (
    AgentInit,
    AsyncSessionService,
    Compaction,
    GenkitError,
    KeepLastStrategy,
    Message,
    MessageCountTrigger,
    Role,
    SessionResolver,
    SessionService,
    SessionSnapshot,
    SessionState,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
)
from tests.conftest import StoreFactory


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service(make_store: StoreFactory, clock: FakeClock) -> SessionService:
    return SessionService(make_store(clock=clock, indexed_metadata=["team"]), clock=clock)


def user(text: str, **metadata: Any) -> Message:
    return Message(role=Role.USER, content=(TextPart(text),), metadata=metadata or None)


def model(text: str) -> Message:
    return Message(role=Role.MODEL, content=(TextPart(text),))


def texts(messages: Any) -> list[str]:
    return [m.text for m in messages]


def summarize(messages: Any) -> str:
    return f"summary of {len(messages)}"


# --- V1 create -------------------------------------------------------------------------------


def test_v1_create_writes_a_record_with_no_snapshots_and_mints_a_uuid(service: SessionService) -> None:
    record = service.create(metadata={"principal": "alice"})
    assert len(record.id) == 36 and record.version == 0 and record.leaf_id is None
    assert dict(record.metadata) == {"principal": "alice"}
    assert service.find_by_id(record.id) == record
    assert service.store.get_snapshot(session_id=record.id) is None
    assert service.store.list_snapshots(record.id) == []


def test_v1_create_of_a_live_id_is_already_exists_session_exists(service: SessionService) -> None:
    service.create("taken")
    with pytest.raises(GenkitError) as raised:
        service.create("taken")
    assert (raised.value.status, raised.value.reason) == ("ALREADY_EXISTS", "SESSION_EXISTS")


@pytest.mark.parametrize("metadata", [{"principal": ""}, {"": "x"}, {"principal": 3}, {"k": None}, ["principal"]])
def test_v1_metadata_that_is_not_non_empty_strings_is_invalid_argument(service: SessionService, metadata: Any) -> None:
    with pytest.raises(GenkitError) as raised:
        service.create("s", metadata=metadata)
    assert raised.value.status == "INVALID_ARGUMENT"
    assert service.find_by_id("s") is None


@pytest.mark.parametrize("session_id", ["", "   ", "a\x00b", "x" * 513])
def test_v1_an_invalid_id_is_invalid_argument(service: SessionService, session_id: str) -> None:
    with pytest.raises(GenkitError) as raised:
        service.create(session_id)
    assert (raised.value.status, raised.value.reason) == ("INVALID_ARGUMENT", "INVALID_SESSION_ID")


# --- V2 find_or_create -----------------------------------------------------------------------


def test_v2_concurrent_first_uses_create_exactly_one_record_and_all_get_it(service: SessionService) -> None:
    results: list[Any] = []
    barrier = threading.Barrier(6)

    def first_use(n: int) -> None:
        barrier.wait()
        results.append(service.find_or_create("shared", metadata={"principal": f"user-{n}"}))

    threads = [threading.Thread(target=first_use, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and len({(r.created_at, r.metadata["principal"]) for r in results}) == 1
    owner = results[0].metadata["principal"]
    assert [r.id for r in service.find_by_metadata("principal", owner).records] == ["shared"]


def test_v2_find_or_create_returns_the_stored_record_not_the_request(service: SessionService) -> None:
    first = service.create("s", metadata={"principal": "alice"})
    again = service.find_or_create("s", metadata={"principal": "bob"})
    assert again == first


# --- V3 find_by_id ---------------------------------------------------------------------------


def test_v3_a_session_made_by_a_resolver_turn_has_a_record_created_with_its_root(service: SessionService) -> None:
    resolution = SessionResolver.resolve(service.store, True, AgentInit(session_id="turns"))
    assert resolution.session is not None
    resolution.session.add_messages(user("hi"), model("hello"))
    root = resolution.session.save()
    record = service.find_by_id("turns")
    assert record is not None
    assert (record.created_at, record.version, record.leaf_id, dict(record.metadata)) == (
        root.created_at,
        1,
        root.snapshot_id,
        {},
    )


def test_v3_absent_deleted_and_expired_sessions_read_as_none(service: SessionService, clock: FakeClock) -> None:
    assert service.find_by_id("never") is None
    service.create("gone")
    service.delete("gone")
    assert service.find_by_id("gone") is None
    service.create("brief", ttl=timedelta(minutes=5))
    clock.advance(timedelta(minutes=5))
    assert service.find_by_id("brief") is None


# --- V4 find_by_metadata ---------------------------------------------------------------------


def test_v4_lookup_returns_live_sessions_oldest_first_in_pages(service: SessionService) -> None:
    for n in range(5):
        service.create(f"s{n}", metadata={"principal": "alice"})
    service.create("other", metadata={"principal": "bob"})
    first = service.find_by_metadata("principal", "alice", limit=2)
    assert [r.id for r in first.records] == ["s0", "s1"] and first.next_page_token is not None
    second = service.find_by_metadata("principal", "alice", limit=2, page_token=first.next_page_token)
    third = service.find_by_metadata("principal", "alice", limit=2, page_token=second.next_page_token)
    assert [r.id for r in second.records] == ["s2", "s3"]
    assert [r.id for r in third.records] == ["s4"] and third.next_page_token is None
    assert [r.id for r in service.iter_by_metadata("principal", "alice")] == [f"s{n}" for n in range(5)]


def test_v4_a_key_the_store_does_not_index_is_invalid_argument(service: SessionService) -> None:
    service.create("s", metadata={"colour": "blue", "team": "red"})
    with pytest.raises(GenkitError) as raised:
        service.find_by_metadata("colour", "blue")
    assert raised.value.status == "INVALID_ARGUMENT" and "indexed_metadata" in raised.value.message
    assert [r.id for r in service.find_by_metadata("team", "red").records] == ["s"]


def test_v4_a_create_or_change_is_visible_to_the_next_query_and_a_delete_is_gone(service: SessionService) -> None:
    service.create("a", metadata={"principal": "alice"})
    service.set_metadata("a", "principal", "carol")
    assert service.find_by_metadata("principal", "alice").records == ()
    assert [r.id for r in service.find_by_metadata("principal", "carol").records] == ["a"]
    service.delete("a")
    assert service.find_by_metadata("principal", "carol").records == ()


def test_v4_a_page_token_that_was_not_handed_out_is_invalid_argument(service: SessionService) -> None:
    with pytest.raises(GenkitError) as raised:
        service.find_by_metadata("principal", "alice", page_token="not-a-token")
    assert raised.value.status == "INVALID_ARGUMENT"


# --- V5 set_metadata -------------------------------------------------------------------------


def test_v5_set_metadata_changes_and_removes_one_key(service: SessionService) -> None:
    service.create("s", metadata={"principal": "alice", "title": "trip"})
    assert dict(service.set_metadata("s", "title", "holiday").metadata) == {"principal": "alice", "title": "holiday"}
    assert dict(service.set_metadata("s", "principal", None).metadata) == {"title": "holiday"}
    assert service.find_by_metadata("principal", "alice").records == ()
    assert dict(service.find_by_id("s").metadata) == {"title": "holiday"}  # type: ignore[union-attr]


def test_v5_set_metadata_of_no_live_session_is_not_found(service: SessionService) -> None:
    with pytest.raises(GenkitError) as raised:
        service.set_metadata("absent", "principal", "x")
    assert (raised.value.status, raised.value.reason) == ("NOT_FOUND", "SESSION_NOT_FOUND")


# --- V6 delete -------------------------------------------------------------------------------


def test_v6_delete_removes_record_snapshots_and_index_entries(service: SessionService) -> None:
    service.create("s", metadata={"principal": "alice"})
    appended = service.append("s", [user("hi"), model("hello")])
    assert service.delete("s") is True
    assert service.delete("s") is False
    assert service.find_by_id("s") is None
    assert service.store.get_snapshot(snapshot_id=appended.snapshot.snapshot_id) is None  # type: ignore[union-attr]
    assert service.store.list_snapshots("s") == []
    assert service.find_by_metadata("principal", "alice").records == ()
    assert service.get_messages("s") == ()


def test_v6_a_save_racing_a_delete_is_deleted_with_it_or_fails_with_a_status(service: SessionService) -> None:
    service.create("race")
    service.append("race", [user("0")])
    errors: list[GenkitError] = []

    def appender() -> None:
        for n in range(1, 6):
            try:
                service.append("race", [user(str(n))])
            except GenkitError as error:
                errors.append(error)

    thread = threading.Thread(target=appender)
    thread.start()
    service.delete("race")
    thread.join()
    snapshots = service.store.list_snapshots("race")
    record = service.find_by_id("race")
    if record is None:
        assert snapshots == []
    else:  # appends after the delete made the session again, whole: every snapshot reads back
        assert [s.snapshot_id for s in snapshots][-1] == record.leaf_id
        assert all(service.store.get_snapshot(snapshot_id=s.snapshot_id) == s for s in snapshots)
    assert all(e.status in ("FAILED_PRECONDITION", "ABORTED", "INVALID_ARGUMENT") for e in errors)


# --- V7 expiry -------------------------------------------------------------------------------


def test_v7_an_expired_session_reads_as_absent_everywhere_before_anything_deletes_it(
    service: SessionService, clock: FakeClock
) -> None:
    service.create("brief", ttl=timedelta(hours=1), metadata={"principal": "alice"})
    snapshot = service.append("brief", [user("hi")]).snapshot
    assert snapshot is not None
    record = service.find_by_id("brief")
    assert record is not None and record.expires_at is not None and record.ttl == timedelta(hours=1)
    clock.advance(timedelta(hours=1))
    store = service.store
    assert service.find_by_id("brief") is None
    assert store.get_snapshot(session_id="brief") is None
    assert store.get_snapshot(snapshot_id=snapshot.snapshot_id) is None
    assert store.list_snapshots("brief") == []
    assert service.find_by_metadata("principal", "alice").records == ()
    with pytest.raises(GenkitError) as raised:  # R7: resuming it is as for a snapshot never saved
        SessionResolver.resolve(store, True, AgentInit(snapshot_id=snapshot.snapshot_id))
    assert raised.value.reason == "SNAPSHOT_NOT_FOUND"


def test_v7_delete_expired_deletes_only_sessions_expired_before_the_cutoff(
    service: SessionService, clock: FakeClock
) -> None:
    for n in range(3):
        service.create(f"short{n}", ttl=timedelta(minutes=1))
        service.append(f"short{n}", [user("x")])
    service.create("long", ttl=timedelta(days=1))
    service.create("forever")
    clock.advance(timedelta(minutes=2))
    assert service.delete_expired() == 3
    assert service.delete_expired() == 0
    assert service.find_by_id("long") is not None and service.find_by_id("forever") is not None
    assert all(service.store.list_snapshots(f"short{n}") == [] for n in range(3))


def test_v7_a_sliding_expiry_moves_with_every_write(service: SessionService, clock: FakeClock) -> None:
    service.create("slide", ttl=timedelta(minutes=10), sliding=True)
    for _ in range(3):
        clock.advance(timedelta(minutes=8))
        service.append("slide", [user("still here")])
    assert service.delete_expired() == 0
    assert service.find_by_id("slide") is not None
    clock.advance(timedelta(minutes=11))
    assert service.find_by_id("slide") is None
    assert service.delete_expired() == 1


def test_v7_an_expired_id_can_be_created_again(service: SessionService, clock: FakeClock) -> None:
    service.create("reuse", ttl=timedelta(seconds=30), metadata={"principal": "alice"})
    service.append("reuse", [user("old")])
    clock.advance(timedelta(minutes=1))
    service.create("reuse", metadata={"principal": "bob"})
    assert service.get_messages("reuse") == ()
    assert service.find_by_metadata("principal", "alice").records == ()
    assert [r.id for r in service.find_by_metadata("principal", "bob").records] == ["reuse"]


# --- V8 version ------------------------------------------------------------------------------


def test_v8_the_version_moves_by_one_per_write_and_never_on_metadata_or_heartbeat(service: SessionService) -> None:
    assert service.version("s") == 0
    service.create("s", metadata={"principal": "a"})
    assert service.version("s") == 0
    assert [service.append("s", [user(str(n))]).version for n in range(3)] == [1, 2, 3]
    service.set_metadata("s", "principal", "b")
    assert service.version("s") == 3


def test_v8_a_session_deleted_and_made_again_never_reuses_a_number(service: SessionService) -> None:
    for n in range(3):
        service.append("again", [user(str(n))])
    service.delete("again")
    assert service.version("again") == 0
    result = service.append("again", [user("new")])
    assert result.version > 3 and service.version("again") == result.version


# --- V9 append -------------------------------------------------------------------------------


def test_v9_append_writes_a_completed_child_of_the_leaf_holding_its_messages_plus_these(
    service: SessionService,
) -> None:
    first = service.append("chat", [user("hi"), model("hello")])
    second = service.append("chat", [user("more")], expected_version=first.version)
    assert first.ok and second.ok and second.snapshot is not None and first.snapshot is not None
    assert second.snapshot.parent_id == first.snapshot.snapshot_id
    assert second.snapshot.effective_status == "completed"
    assert texts(service.get_active_messages("chat")) == ["hi", "hello", "more"]


def test_v9_a_stale_expected_version_writes_nothing_and_returns_the_current_one(service: SessionService) -> None:
    service.append("chat", [user("one")])
    service.append("chat", [user("two")])
    stale = service.append("chat", [user("lost?")], expected_version=1)
    assert (stale.ok, stale.version, stale.snapshot) == (False, 2, None)
    assert texts(service.get_messages("chat")) == ["one", "two"]
    assert service.append("ghost", [user("x")], expected_version=4) == stale.__class__(False, 0, None)
    assert service.find_by_id("ghost") is None


def test_v9_a_stale_version_from_another_service_instance_is_refused(make_store: StoreFactory) -> None:
    store = make_store()
    mine, theirs = SessionService(store), SessionService(store)
    version = mine.append("chat", [user("one")]).version
    theirs.append("chat", [user("two")])
    refused = mine.append("chat", [user("three")], expected_version=version)
    assert (refused.ok, refused.version) == (False, 2)


def test_v9_appends_without_a_version_from_two_writers_lose_no_turn(service: SessionService) -> None:
    other = SessionService(service.store)
    service.append("both", [user("start")])

    def write(svc: SessionService, tag: str) -> None:
        for n in range(5):
            svc.append("both", [user(f"{tag}{n}")])

    threads = [threading.Thread(target=write, args=(s, t)) for s, t in ((service, "a"), (other, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = texts(service.get_messages("both"))
    assert sorted(history) == sorted(["start", *(f"a{n}" for n in range(5)), *(f"b{n}" for n in range(5))])
    assert service.version("both") == 11


def test_v9_a_leaf_that_is_not_completed_is_failed_precondition(service: SessionService) -> None:
    state = SessionState(messages=(user("hi"),))
    service.store.save_snapshot(
        "p", lambda _: SessionSnapshot(snapshot_id="p", session_id="busy", state=state, status="pending")
    )
    with pytest.raises(GenkitError) as raised:
        service.append("busy", [user("more")])
    assert (raised.value.status, raised.value.reason) == ("FAILED_PRECONDITION", "SNAPSHOT_NOT_RESUMABLE")


# --- V10 event ids ---------------------------------------------------------------------------


def test_v10_appended_messages_carry_an_event_id_and_a_retry_is_a_no_op(service: SessionService) -> None:
    minted = service.append("s", [user("hi")])
    assert minted.snapshot is not None
    event_id = minted.snapshot.state.messages[0].metadata["eventId"]  # type: ignore[union-attr]
    assert isinstance(event_id, str) and len(event_id) == 32
    given = service.append("s", [user("retried", eventId="e-1")])
    retry = service.append("s", [user("retried", eventId="e-1")])
    assert retry.ok and retry.version == given.version
    assert texts(service.get_messages("s")) == ["hi", "retried"]


def test_v10_the_same_event_id_twice_in_one_call_is_invalid_argument(service: SessionService) -> None:
    with pytest.raises(GenkitError) as raised:
        service.append("s", [user("a", eventId="dup"), user("b", eventId="dup")])
    assert raised.value.status == "INVALID_ARGUMENT"
    assert service.find_by_id("s") is None


def test_v10_an_event_id_a_compaction_covered_is_still_on_the_branch(service: SessionService) -> None:
    service.append("s", [user("first", eventId="e-first")])
    for n in range(5):
        service.append("s", [user(str(n))])
    assert service.compact("s", MessageCountTrigger(2), KeepLastStrategy(1, summarize)).changed
    again = service.append("s", [user("first", eventId="e-first")])
    assert again.ok and "first" not in texts(service.get_active_messages("s"))
    assert texts(service.get_messages("s")).count("first") == 1


@pytest.mark.parametrize("messages", ["hello", [object()], [], None])
def test_v10_messages_that_are_not_a_list_of_message_are_invalid_argument(
    service: SessionService, messages: Any
) -> None:
    with pytest.raises(GenkitError) as raised:
        service.append("s", messages)
    assert raised.value.status == "INVALID_ARGUMENT"


# --- V11 full and active history, V12 compaction ---------------------------------------------


def _chat(service: SessionService, session_id: str, turns: int) -> None:
    for n in range(turns):
        service.append(session_id, [user(f"u{n}"), model(f"m{n}")])


def test_v11_v12_compaction_replaces_the_active_view_and_keeps_the_full_history(service: SessionService) -> None:
    _chat(service, "s", 5)
    result = service.compact("s", MessageCountTrigger(4), KeepLastStrategy(2, summarize))
    assert (result.changed, result.covered, result.kept, texts(result.summary)) == (True, 8, 2, ["summary of 8"])
    assert texts(service.get_active_messages("s")) == ["summary of 8", "u4", "m4"]
    full = ["u0", "m0", "u1", "m1", "u2", "m2", "u3", "m3", "summary of 8", "u4", "m4"]
    assert texts(service.get_messages("s")) == full
    service.append("s", [user("after")])
    service.compact("s", MessageCountTrigger(2), KeepLastStrategy(1, summarize))
    assert texts(service.get_active_messages("s")) == ["summary of 3", "after"]
    assert texts(service.get_messages("s")) == [*full, "summary of 3", "after"]


def test_v11_a_genkit_client_resuming_a_compacted_session_gets_the_active_view(service: SessionService) -> None:
    _chat(service, "s", 4)
    service.compact("s", MessageCountTrigger(3), KeepLastStrategy(2, summarize))
    resolution = SessionResolver.resolve(service.store, True, AgentInit(session_id="s"))
    assert resolution.session is not None
    assert texts(resolution.session.state.messages) == ["summary of 6", "u3", "m3"]
    resolution.session.add_messages(user("next"), model("reply"))
    resolution.session.save()
    assert service.version("s") == 6  # the resolver's turn-end save moves the same version
    assert texts(service.get_messages("s"))[-3:] == ["m3", "next", "reply"]
    assert texts(service.get_messages("s"))[:2] == ["u0", "m0"]


def test_v12_a_trigger_that_does_not_fire_changes_nothing(service: SessionService) -> None:
    _chat(service, "s", 2)
    result = service.compact("s", MessageCountTrigger(10), KeepLastStrategy(2, summarize))
    assert (result.changed, result.kept) == (False, 4)
    assert service.version("s") == 2


def test_v12_a_boundary_never_leaves_an_orphaned_tool_response(service: SessionService) -> None:
    call = Message(role=Role.MODEL, content=(ToolRequestPart(ToolRequest(name="weather", ref="1")),))
    answer = Message(role=Role.TOOL, content=(ToolResponsePart(ToolResponse(name="weather", ref="1", output=3)),))
    service.append("s", [user("a"), model("b"), user("weather?"), call, answer, model("3 degrees")])
    result = service.compact("s", MessageCountTrigger(2), KeepLastStrategy(2, summarize))  # would split at the answer
    assert result.changed and result.covered == 3
    active = service.get_active_messages("s")
    assert texts(active[:1]) == ["summary of 3"]
    assert (active[1].content, active[2].content) == (call.content, answer.content)


def test_v12_an_append_landing_during_a_compaction_joins_the_kept_tail(service: SessionService) -> None:
    _chat(service, "s", 4)
    other = SessionService(service.store)
    raced: list[int] = []

    def summarize_slowly(messages: Any) -> str:
        if not raced:
            raced.append(other.append("s", [user("landed meanwhile")]).version)
        return f"summary of {len(messages)}"

    result = service.compact("s", MessageCountTrigger(3), KeepLastStrategy(2, summarize_slowly))
    assert result.changed and result.covered == 6
    assert texts(service.get_active_messages("s")) == ["summary of 6", "u3", "m3", "landed meanwhile"]
    assert "landed meanwhile" in texts(service.get_messages("s"))


class _Overtaken:
    """A store on which another writer appends right after every leaf read: a compaction's version-checked
    write then always finds the version moved."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.other = SessionService(store)
        self.indexed_metadata = store.indexed_metadata

    def get_snapshot(self, **kwargs: Any) -> Any:
        found = self.store.get_snapshot(**kwargs)
        if found is not None and found.session_id is not None:
            self.other.append(found.session_id, [user("overtaking")])
        return found

    def get_session_record(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.get_session_record(*args, **kwargs)

    def get_session_leaf(self, session_id: str, **kwargs: Any) -> Any:
        found = self.store.get_session_leaf(session_id, **kwargs)
        self.other.append(session_id, [user("overtaking")])
        return found

    def save_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.save_snapshot(*args, **kwargs)

    def create_session(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.create_session(*args, **kwargs)

    def set_session_metadata(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.set_session_metadata(*args, **kwargs)

    def find_sessions(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.find_sessions(*args, **kwargs)

    def delete_session(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.delete_session(*args, **kwargs)

    def delete_expired_sessions(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.delete_expired_sessions(*args, **kwargs)


def test_v12_appends_that_keep_overtaking_give_up_after_max_attempts(service: SessionService) -> None:
    _chat(service, "s", 3)
    overtaken = SessionService(_Overtaken(service.store))  # type: ignore[arg-type]
    calls: list[int] = []

    def strategy(messages: Any) -> Compaction:
        calls.append(len(messages))
        return Compaction(2, (model("summary"),))

    result = overtaken.compact("s", MessageCountTrigger(1), strategy, max_attempts=2)
    assert not result.changed and len(calls) == 1  # the plan is reused while its covered prefix stands
    assert "summary" not in texts(service.get_messages("s"))
    assert texts(service.get_messages("s"))[-2:] == ["overtaking", "overtaking"]


# --- V13 fork --------------------------------------------------------------------------------


def test_v13_a_fork_starts_from_the_snapshot_and_leaves_the_source_unchanged(service: SessionService) -> None:
    _chat(service, "src", 3)
    middle = service.store.list_snapshots("src")[1]
    before = service.find_by_id("src")
    fork = service.fork(middle.snapshot_id, new_session_id="fork", metadata={"principal": "alice"})
    assert fork.id == "fork" and dict(fork.metadata) == {"principal": "alice"}
    assert texts(service.get_messages("fork")) == ["u0", "m0", "u1", "m1"]
    assert service.find_by_id("src") == before
    service.append("fork", [user("fork only")])
    assert "fork only" not in texts(service.get_messages("src"))


def test_v13_deleting_either_side_of_a_fork_of_a_compacted_session_never_changes_the_other(
    service: SessionService,
) -> None:
    _chat(service, "src", 5)
    service.compact("src", MessageCountTrigger(4), KeepLastStrategy(2, summarize))
    full = texts(service.get_messages("src"))
    leaf = service.find_by_id("src")
    assert leaf is not None and leaf.leaf_id is not None
    fork = service.fork(leaf.leaf_id)
    assert texts(service.get_messages(fork.id)) == full
    assert fork.version == 2 == service.version(fork.id)  # V8: the archive and the first snapshot
    assert texts(service.get_active_messages(fork.id)) == texts(service.get_active_messages("src"))
    service.delete("src")
    assert texts(service.get_messages(fork.id)) == full
    second = service.fork(service.find_by_id(fork.id).leaf_id)  # type: ignore[union-attr,arg-type]
    service.delete(fork.id)
    assert texts(service.get_messages(second.id)) == full


class _WithoutRestore:
    """A store with the record protocol but no ``restore_snapshots``, and a ``create_session`` that takes
    no first snapshots, as a store author's may be."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def create_session(
        self,
        session_id: str,
        *,
        metadata: Any = None,
        ttl: Any = None,
        sliding: bool = False,
        context: Any = None,
    ) -> Any:
        return self._store.create_session(session_id, metadata=metadata, ttl=ttl, sliding=sliding, context=context)

    def __getattr__(self, name: str) -> Any:
        if name == "restore_snapshots":
            raise AttributeError(name)
        return getattr(self._store, name)


def test_v13_a_fork_of_a_compacted_session_on_a_store_without_restore_holds_the_whole_history(
    service: SessionService, clock: FakeClock
) -> None:
    _chat(service, "src", 5)
    service.compact("src", MessageCountTrigger(4), KeepLastStrategy(2, summarize))
    plain = SessionService(_WithoutRestore(service.store), clock=clock)
    leaf = service.find_by_id("src")
    assert leaf is not None and leaf.leaf_id is not None
    fork = plain.fork(leaf.leaf_id, new_session_id="fork")
    assert texts(plain.get_messages("fork")) == texts(service.get_messages("src"))
    assert texts(plain.get_active_messages("fork")) == texts(service.get_active_messages("src"))
    assert plain.version("fork") == 2 == service.version("fork") and fork.version == 2


def test_v13_forking_an_absent_snapshot_is_not_found(service: SessionService) -> None:
    with pytest.raises(GenkitError) as raised:
        service.fork("nope")
    assert (raised.value.status, raised.value.reason) == ("NOT_FOUND", "SNAPSHOT_NOT_FOUND")


# --- tenancy, and the async twin --------------------------------------------------------------


def test_every_rule_holds_per_tenant(service: SessionService) -> None:
    a, b = {"tenant": "a"}, {"tenant": "b"}
    service.create("s", metadata={"principal": "alice"}, context=a)
    service.create("s", metadata={"principal": "alice"}, context=b, ttl=timedelta(seconds=1))
    service.append("s", [user("a only")], context=a)
    assert service.version("s", context=b) == 0
    assert [r.id for r in service.find_by_metadata("principal", "alice", context=b).records] == ["s"]
    service.delete("s", context=b)
    assert texts(service.get_messages("s", context=a)) == ["a only"]
    assert service.find_by_metadata("principal", "alice", context=b).records == ()


def test_the_async_service_runs_the_same_rules_on_the_async_face(make_store: StoreFactory) -> None:
    store = make_store()

    async def scenario() -> None:
        service = AsyncSessionService(store.aio)
        await service.create("s", metadata={"principal": "alice"})
        first = await service.append("s", [user("hi"), model("hello")])
        stale = await service.append("s", [user("x")], expected_version=first.version - 1)
        assert (stale.ok, stale.version) == (False, first.version)

        async def summarize_later(messages: Any) -> str:
            await asyncio.sleep(0)
            return "async summary"

        compacted = await service.compact("s", MessageCountTrigger(1), KeepLastStrategy(1, summarize_later))
        assert compacted.changed
        assert texts(await service.get_messages("s")) == ["hi", "async summary", "hello"]
        assert [r.id async for r in service.iter_by_metadata("principal", "alice")] == ["s"]
        assert await service.delete("s")

    asyncio.run(scenario())


def test_a_store_without_the_record_protocol_is_refused_with_a_clear_error() -> None:
    with pytest.raises(GenkitError) as raised:
        SessionService(object())  # type: ignore[arg-type]
    assert raised.value.status == "INVALID_ARGUMENT" and "InMemorySessionStore" in raised.value.message


def test_a_session_made_by_the_service_resumes_through_the_resolver_and_keeps_its_record(
    service: SessionService, clock: FakeClock
) -> None:
    service.create("made", metadata={"principal": "alice"}, ttl=timedelta(hours=1), sliding=True)
    for text in ("first", "second"):
        resolution = SessionResolver.resolve(service.store, True, AgentInit(session_id="made"))
        assert resolution.ok and resolution.session is not None and resolution.session.id == "made"
        resolution.session.add_messages(user(text), model("ok"))
        resolution.session.save()
        clock.advance(timedelta(minutes=50))  # the sliding expiry moves with each turn-end save
    record = service.find_by_id("made")
    assert record is not None and record.version == 2 and dict(record.metadata) == {"principal": "alice"}
    assert [r.id for r in service.find_by_metadata("principal", "alice").records] == ["made"]
    assert texts(service.get_messages("made")) == ["first", "ok", "second", "ok"]
    assert service.append("made", [user("third")], expected_version=2).ok
