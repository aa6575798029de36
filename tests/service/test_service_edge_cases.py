"""The session service's rules at their edges, on every store: compactions with no summary, strategies that
answer badly, appends after a delete somewhere else, racing first appends, retried appends, expiry to the
microsecond, ttl bounds, explicit contexts, and the store answering the same as every other store."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    ChatMemoryStore,
    Compaction,
    GenkitError,
    KeepLastStrategy,
    SessionService,
    SessionSnapshot,
    SessionState,
)
from genkit_sessions.model.clock import parse_timestamp
from tests.conftest import StoreFactory
from tests.service.test_service_rules import FakeClock, clock, service, texts, user

__all__ = ["clock", "service"]  # fixtures used here


def _ok_version(result: Any) -> tuple[bool, int]:
    return result.ok, result.version


# --- V12 / V11 / V10: a compaction whose summary is empty -------------------------------------------


def test_v12_a_compaction_with_no_summary_keeps_every_covered_message_in_get_messages(
    service: SessionService,
) -> None:
    service.append("s", [user("a"), user("b"), user("c")])
    result = service.compact("s", lambda m: True, lambda m: Compaction(2, ()))
    assert (result.changed, result.covered, result.summary, result.kept) == (True, 2, (), 1)
    assert texts(service.get_active_messages("s")) == ["c"]
    assert texts(service.get_messages("s")) == ["a", "b", "c"]


def test_v12_keep_last_with_a_summarizer_that_returns_nothing_drops_only_the_active_view(
    service: SessionService,
) -> None:
    service.append("s", [user("a"), user("b"), user("c")])
    service.compact("s", lambda m: True, KeepLastStrategy(1, lambda covered: []))
    service.append("s", [user("d")])
    service.compact("s", lambda m: True, lambda m: Compaction(1, (user("summary"),)))
    assert texts(service.get_active_messages("s")) == ["summary", "d"]
    assert texts(service.get_messages("s")) == ["a", "b", "c", "summary", "d"]
    marked = [m for m in service.get_active_messages("s")[1:] if m.metadata and "compaction" in m.metadata]
    assert marked == []  # only the first message of an active view carries a compaction's marker


def test_v10_a_retried_append_after_a_compaction_with_no_summary_is_still_a_no_op(service: SessionService) -> None:
    first = service.append("s", [user("a", eventId="e-1"), user("b"), user("c")])
    service.compact("s", lambda m: True, lambda m: Compaction(2, ()))
    retry = service.append("s", [user("a", eventId="e-1")])
    assert retry.ok and retry.version == first.version + 1  # the compaction's write only
    assert texts(service.get_active_messages("s")) == ["c"]


def test_v12_a_compaction_covering_everything_with_no_summary_is_refused_and_writes_nothing(
    service: SessionService,
) -> None:
    version = service.append("s", [user("a"), user("b")]).version
    with pytest.raises(GenkitError) as refused:
        service.compact("s", lambda m: True, lambda m: Compaction(2, ()))
    assert refused.value.status == "INVALID_ARGUMENT" and "unreachable" in refused.value.message
    assert service.version("s") == version and texts(service.get_active_messages("s")) == ["a", "b"]


@pytest.mark.parametrize("plan", [Compaction(1.5, ()), Compaction("1", ()), Compaction(True, ())])  # type: ignore[arg-type]
def test_v12_a_strategy_covering_a_count_that_is_not_an_int_is_invalid_argument(
    service: SessionService, plan: Compaction
) -> None:
    service.append("s", [user("a"), user("b"), user("c")])
    with pytest.raises(GenkitError) as refused:
        service.compact("s", lambda m: True, lambda m: plan)
    assert refused.value.status == "INVALID_ARGUMENT" and "Compaction.covered" in refused.value.message


def test_v12_a_strategy_whose_summary_holds_a_str_is_invalid_argument(service: SessionService) -> None:
    service.append("s", [user("a"), user("b"), user("c")])
    with pytest.raises(GenkitError) as refused:
        service.compact("s", lambda m: True, lambda m: Compaction(1, ["a summary"]))  # type: ignore[list-item]
    assert refused.value.status == "INVALID_ARGUMENT" and "holds a str" in refused.value.message


# --- V9: appends after the session was deleted elsewhere ----------------------------------------


@pytest.mark.parametrize("deleted_by", ["another service", "the store", "a chat memory"])
def test_v9_an_append_after_a_delete_elsewhere_starts_the_session_again(
    service: SessionService, deleted_by: str
) -> None:
    for n in range(3):
        service.append("s", [user(str(n))])  # the service now holds the leaf
    if deleted_by == "another service":
        SessionService(service.store).delete("s")
    elif deleted_by == "the store":
        service.store.delete_session("s")
    else:
        ChatMemoryStore(service.store).delete_messages("s")
    result = service.append("s", [user("fresh")])
    assert result.ok and texts(service.get_messages("s")) == ["fresh"]


def test_v9_a_stale_expected_version_after_a_delete_elsewhere_answers_ok_false(service: SessionService) -> None:
    for n in range(3):
        service.append("s", [user(str(n))])
    SessionService(service.store).delete("s")
    assert _ok_version(service.append("s", [user("late")], expected_version=3)) == (False, 0)


def test_v9_an_expected_version_of_a_session_deleted_and_started_again_elsewhere_answers_its_version(
    service: SessionService,
) -> None:
    other = SessionService(service.store)
    service.append("s", [user("1")])
    service.append("s", [user("2")])
    other.delete("s")
    restarted = other.append("s", [user("new root")])
    assert _ok_version(service.append("s", [user("x")], expected_version=2)) == (False, restarted.version)


def test_v9_an_append_after_delete_expired_starts_the_session_again(service: SessionService, clock: FakeClock) -> None:
    service.create("s", ttl=timedelta(minutes=1))
    for n in range(3):
        service.append("s", [user(str(n))])
    clock.advance(timedelta(minutes=2))
    assert service.delete_expired() == 1
    result = service.append("s", [user("fresh")])
    assert result.ok and texts(service.get_messages("s")) == ["fresh"]


def test_v9_a_turn_landing_right_after_a_sessions_first_append_is_never_dropped_from_the_branch(
    service: SessionService,
) -> None:
    store, other = service.store, SessionService(service.store)
    real = store.get_session_leaf
    calls: list[str] = []

    def another_writer_lands_after_the_first_write(session_id: str, **kwargs: Any) -> Any:
        calls.append(session_id)
        if len(calls) == 2:  # the read after this service's first write: another process appended first
            other.append(session_id, [user("from-other")])
        return real(session_id, **kwargs)

    store.get_session_leaf = another_writer_lands_after_the_first_write
    try:
        assert service.append("x", [user("a1")]).ok
    finally:
        del store.get_session_leaf
    assert len(calls) >= 2
    service.append("x", [user("a2")])
    assert texts(service.get_messages("x")) == ["a1", "from-other", "a2"]


def test_v10_a_retried_append_with_its_original_expected_version_is_a_no_op_that_returns_ok(
    service: SessionService,
) -> None:
    version = service.append("s", [user("a")]).version
    first = service.append("s", [user("b", eventId="e-b")], expected_version=version)
    retry = service.append("s", [user("b", eventId="e-b")], expected_version=version)  # its answer was lost
    assert first.ok and (retry.ok, retry.version) == (True, first.version)
    assert texts(service.get_messages("s")) == ["a", "b"]


def test_v9_an_expected_version_that_moved_still_refuses_messages_the_branch_does_not_hold(
    service: SessionService,
) -> None:
    version = service.append("s", [user("a", eventId="e-a")]).version
    service.append("s", [user("b")])
    refused = service.append("s", [user("a", eventId="e-a"), user("c", eventId="e-c")], expected_version=version)
    assert refused.ok is False and texts(service.get_messages("s")) == ["a", "b"]


# --- V7: expiry ----------------------------------------------------------------------------------


def test_v7_delete_expired_deletes_a_session_that_expired_a_fraction_of_a_millisecond_before_the_cutoff(
    service: SessionService,
) -> None:
    record = service.create("s", ttl=timedelta(minutes=1))
    assert record.expires_at is not None
    assert service.delete_expired(parse_timestamp(record.expires_at) + timedelta(microseconds=500)) == 1


def test_v7_delete_expired_keeps_a_session_expiring_at_the_cutoff(service: SessionService) -> None:
    record = service.create("s", ttl=timedelta(minutes=1))
    assert record.expires_at is not None
    assert service.delete_expired(parse_timestamp(record.expires_at)) == 0


def test_v7_a_refused_append_into_an_expired_session_leaves_it_for_delete_expired(
    service: SessionService, clock: FakeClock
) -> None:
    service.create("s", ttl=timedelta(minutes=1))
    version = service.append("s", [user("x")]).version
    clock.advance(timedelta(minutes=2))
    assert _ok_version(service.append("s", [user("late")], expected_version=version)) == (False, 0)
    assert service.delete_expired() == 1


@pytest.mark.parametrize("ttl", [timedelta.max, timedelta(days=365 * 8000), timedelta(days=36526)])
def test_v1_a_ttl_past_a_hundred_years_is_invalid_argument_and_creates_nothing(
    service: SessionService, ttl: timedelta
) -> None:
    with pytest.raises(GenkitError) as refused:
        service.create("s", ttl=ttl, metadata={"principal": "p"})
    assert refused.value.status == "INVALID_ARGUMENT" and "ttl=None" in refused.value.message
    assert service.find_by_id("s") is None and service.find_by_metadata("principal", "p").records == ()
    assert service.delete("s") is False


def test_v1_a_ttl_of_a_hundred_years_is_kept(service: SessionService) -> None:
    record = service.create("s", ttl=timedelta(days=36525))
    assert record.expires_at is not None and service.find_by_id("s") is not None


# --- M1-M3 and S10: a call's own context, even an empty one --------------------------------------


def test_m1_an_explicit_empty_context_reads_the_default_tenant_not_the_constructors(make_store: StoreFactory) -> None:
    store = make_store()
    memory = ChatMemoryStore(store, context={"tenant": "acme"})
    memory.update_messages("m", [user("acme's")])
    assert memory.get_messages("m", context={}) == []


def test_m2_an_explicit_empty_context_writes_the_default_tenant_not_the_constructors(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    memory = ChatMemoryStore(store, context={"tenant": "acme"})
    memory.update_messages("m", [user("acme's")])
    memory.update_messages("m", [user("the default tenant's")], context={})
    assert texts(memory.get_messages("m")) == ["acme's"]
    assert texts(memory.get_messages("m", context={})) == ["the default tenant's"]


# --- H2: a window of no session id ----------------------------------------------------------------


@pytest.mark.parametrize("call", ["read_window", "get_history"])
def test_h2_a_window_of_a_session_id_that_is_not_a_string_is_invalid_session_id(
    service: SessionService, call: str
) -> None:
    with pytest.raises(GenkitError) as refused:
        getattr(service, call)(None)
    assert refused.value.reason == "INVALID_SESSION_ID" and "get_snapshot" not in refused.value.message


# --- V8: a state change Python's equality cannot see ----------------------------------------------


@pytest.mark.parametrize("before, after", [(1, True), (1, 1.0), (0.0, -0.0), (True, 1)])
def test_v8_a_change_of_a_value_to_an_equal_one_of_another_json_type_advances_the_version(
    service: SessionService, before: Any, after: Any
) -> None:
    store = service.store
    store.save_snapshot(
        "x1",
        lambda _: SessionSnapshot(
            snapshot_id="x1",
            session_id="s",
            status="completed",
            state=SessionState(session_id="s", custom={"n": before}),
        ),
    )
    assert service.version("s") == 1
    store.save_snapshot("x1", lambda cur: attrs.evolve(cur, state=SessionState(session_id="s", custom={"n": after})))
    stored = store.get_snapshot(snapshot_id="x1")
    assert stored is not None and stored.state is not None and repr(stored.state.custom["n"]) == repr(after)
    assert service.version("s") == 2


# --- V1 / V4 / V5: an indexed value of any length ----------------------------------------------------


def test_v4_sessions_are_found_by_indexed_values_longer_than_a_dynamodb_partition_key(service: SessionService) -> None:
    long_a, long_b = "x" * 2100 + "a", "x" * 2100 + "b"  # alike but for their last character
    service.create("s1", metadata={"principal": long_a})
    service.create("s2", metadata={"principal": long_b})
    service.create("s3")
    service.set_metadata("s3", "team", "é" * 3000)
    assert [r.id for r in service.find_by_metadata("principal", long_a).records] == ["s1"]
    assert [r.id for r in service.find_by_metadata("principal", long_b).records] == ["s2"]
    assert [r.id for r in service.find_by_metadata("team", "é" * 3000).records] == ["s3"]
    service.set_metadata("s1", "principal", "short")
    assert service.find_by_metadata("principal", long_a).records == ()
    assert [r.id for r in service.find_by_metadata("principal", "short").records] == ["s1"]
    assert service.delete("s2") and service.find_by_metadata("principal", long_b).records == ()


# --- V3 / V4: a restore of older history moves the creation back, and the index with it ----------------


def _restore_older_root(service: SessionService, session_id: str) -> None:
    old = SessionSnapshot(
        snapshot_id=f"imported-{session_id}",
        session_id=session_id,
        created_at="2020-01-01T00:00:00.000000Z",
        updated_at="2020-01-01T00:00:00.000000Z",
        status="completed",
        state=SessionState(session_id=session_id, messages=(user("old"),)),
    )
    service.store.restore_snapshots([old])


def test_v4_a_session_given_older_history_is_found_by_its_metadata_at_its_new_creation(
    service: SessionService,
) -> None:
    service.create("s", metadata={"principal": "alice", "team": "blue"})
    _restore_older_root(service, "s")
    record = service.find_by_id("s")
    assert record is not None and record.created_at == "2020-01-01T00:00:00.000000Z"
    assert [r.id for r in service.find_by_metadata("principal", "alice").records] == ["s"]
    assert [r.id for r in service.find_by_metadata("team", "blue").records] == ["s"]


def test_v4_pages_after_a_restore_of_older_history_list_each_session_once_oldest_first(
    service: SessionService,
) -> None:
    for n in range(3):
        service.create(f"s{n}", metadata={"principal": "alice"})
    _restore_older_root(service, "s1")
    seen: list[str] = []
    token = None
    for _ in range(6):
        page = service.find_by_metadata("principal", "alice", limit=1, page_token=token)
        seen += [r.id for r in page.records]
        token = page.next_page_token
        if token is None:
            break
    assert seen == ["s1", "s0", "s2"]


def test_v7_a_session_expires_at_its_creation_plus_its_ttl_to_the_millisecond(make_store: StoreFactory) -> None:
    from datetime import datetime, timezone

    frozen = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)  # a clock that does not move
    service = SessionService(make_store(clock=lambda: frozen), clock=lambda: frozen)
    record = service.create("s", ttl=timedelta(hours=1))
    assert record.expires_at is not None
    lasts = parse_timestamp(record.expires_at) - parse_timestamp(record.created_at)
    assert timedelta(hours=1, milliseconds=-1) < lasts <= timedelta(hours=1)  # DynamoDB keeps whole milliseconds


def test_v6_delete_of_an_expired_session_answers_false_and_removes_its_data_with_or_without_snapshots(
    service: SessionService, clock: FakeClock
) -> None:
    service.create("empty", ttl=timedelta(minutes=1))
    service.create("used", ttl=timedelta(minutes=1))
    service.append("used", [user("x")])
    clock.advance(timedelta(minutes=2))
    assert (service.delete("used"), service.delete("empty")) == (False, False)
    assert service.delete_expired() == 0  # nothing of either was left behind
