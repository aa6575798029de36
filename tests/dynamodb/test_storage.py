"""How the DynamoDB store lays data out: call budgets, diffs, large states, ids, TTL, deletion."""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from genkit_sessions import (
    AgentInit,
    ErrorInfo,
    GenkitError,
    Message,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    Status,
    to_wire,
)
from genkit_sessions.dynamodb import AsyncDynamoDBSessionStore, DynamoDBSessionStore
from tests.dynamodb.helpers import (
    cold,
    inject_fault,
    left_behind,
    noise,
    parts_left_forever,
    prose,
    save_new,
    scan,
    state_of,
)
from tests.dynamodb.layout import (
    BLOB_PREFIX,
    PAGE_PREFIX,
    SEP,
    SNAPSHOT_SK,
    Recipe,
    head_key,
    pack_record,
    unpack_record,
)
from tests.dynamodb.layout import compress as layout_compress
from tests.dynamodb.layout import decompress as layout_decompress
from tests.dynamodb_backends import guard_of

StoreFactory = Any


def _chat(store: DynamoDBSessionStore, session_id: str, turns: int, size: int = 300, seed: int = 1) -> list[str]:
    """Saves a linear chat the way an agent does: resume the leaf, append two messages, save a child."""
    rng = random.Random(seed)
    ids: list[str] = []
    parent: SessionSnapshot | None = None
    for turn in range(turns):
        base = parent.state if parent is not None and parent.state is not None else SessionState(session_id=session_id)
        added = (Message.of_text("user", prose(rng, size)), Message.of_text("model", prose(rng, size)))
        state = attrs.evolve(base, messages=base.message_list + added, custom={"turn": turn})
        snapshot_id = f"{session_id}-{turn}"
        parent = save_new(store, snapshot_id, state, parent.snapshot_id if parent else None)
        ids.append(snapshot_id)
    return ids


def test_reads_take_at_most_two_calls_whatever_the_history_length(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=10)
    ids = _chat(store, "s", 45)
    written = store.get_snapshot(snapshot_id=ids[-1])
    reader = cold(store)
    guard = guard_of(store)
    for snapshot_id in (ids[0], ids[9], ids[23], ids[-1]):
        guard.reset()
        snapshot = reader.get_snapshot(snapshot_id=snapshot_id)
        assert snapshot is not None and snapshot.snapshot_id == snapshot_id
        assert sum(guard.calls.values()) <= 2, guard.log
    guard.reset()
    leaf = cold(store).get_snapshot(session_id="s")
    assert leaf == written
    assert sum(guard.calls.values()) <= 2, guard.log


def test_a_turn_end_save_after_a_resume_costs_one_transaction(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    _chat(store, "s", 5)
    turn_store = cold(store)  # a fresh process: resume, then save the turn's end
    guard = guard_of(store)
    guard.reset()
    resolution = SessionResolver.resolve(turn_store, True, AgentInit(session_id="s"))
    assert resolution.ok and resolution.snapshot is not None
    assert sum(guard.calls.values()) <= 2, guard.log
    guard.reset()
    parent = resolution.snapshot
    assert parent.state is not None
    state = attrs.evolve(parent.state, messages=(*parent.state.message_list, Message.of_text("user", "one more")))
    save_new(turn_store, "next", state, parent.snapshot_id)
    assert dict(guard.calls) == {"TransactWriteItems": 1}
    assert cold(store).get_snapshot(session_id="s") == turn_store.get_snapshot(snapshot_id="next")


def test_each_turn_writes_only_its_new_content_plus_periodic_pages(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=10)
    guard = guard_of(store)
    _chat(store, "warmup", 10, size=1000)
    guard.reset()
    ids = _chat(store, "s", 40, size=1000)
    early, late = guard.bytes_written, 0
    guard.reset()
    _chat_more(store, ids[-1], 40)
    late = guard.bytes_written
    assert late <= 2 * early, (early, late)
    full_state_bytes = len(str(store.get_snapshot(snapshot_id=ids[-1])))
    assert early / 40 < full_state_bytes / 4


def _chat_more(store: DynamoDBSessionStore, leaf_id: str, turns: int) -> None:
    rng = random.Random(7)
    parent = store.get_snapshot(snapshot_id=leaf_id)
    assert parent is not None and parent.state is not None
    for turn in range(turns):
        assert parent is not None and parent.state is not None
        added = (Message.of_text("user", prose(rng, 1000)), Message.of_text("model", prose(rng, 1000)))
        state = attrs.evolve(parent.state, messages=parent.state.message_list + added)
        parent = save_new(store, f"more-{turn}", state, parent.snapshot_id)


def test_a_state_larger_than_an_item_is_split_and_reads_back_exactly(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    rng = random.Random(3)
    state = state_of("big", [noise(rng, 300_000), noise(rng, 300_000)], custom={"k": noise(rng, 100_000)})
    saved = save_new(store, "big-1", state)
    assert cold(store).get_snapshot(snapshot_id="big-1") == saved
    parts = [i for i in scan(store) if i["sk"]["S"].startswith(BLOB_PREFIX)]
    assert len(parts) >= 2
    assert all("exp" not in p and "stg" not in p for p in parts)


def test_a_six_megabyte_state_commits_atomically_and_reads_back_exactly(make_server_dynamo: StoreFactory) -> None:
    store = make_server_dynamo()
    rng = random.Random(5)
    guard = guard_of(store)
    parent = save_new(store, "p", state_of("huge", ["hello"]))
    texts = [noise(rng, 250_000) for _ in range(24)]  # 6 MB that barely compresses: more than a transaction holds
    guard.reset()
    saved = save_new(store, "six-mb", state_of("huge", texts), parent.snapshot_id)
    assert guard.calls["BatchWriteItem"] >= 1  # parts were staged ahead of the commit
    assert guard.calls["TransactWriteItems"] == 1
    reader = cold(store)
    guard.reset()
    assert reader.get_snapshot(session_id="huge") == saved
    assert sum(guard.calls.values()) <= 2
    parts = [i for i in scan(store) if i["sk"]["S"].startswith(BLOB_PREFIX)]
    assert all("exp" not in p and "stg" not in p for p in parts)
    # A small turn on top of the 6 MB state writes only the new content.
    guard.reset()
    assert saved.state is not None
    child = attrs.evolve(saved.state, messages=(*saved.state.message_list, Message.of_text("user", "and then?")))
    save_new(store, "after-six-mb", child, "six-mb")
    assert guard.bytes_written < 20_000
    assert cold(store).get_snapshot(snapshot_id="after-six-mb") is not None


@pytest.mark.parametrize(
    "weird",
    [
        "quote'\"and#hash:colon",
        "x = :v OR attribute_exists(pk)",
        "ünïcödé-ids-🙂",
        "a" * 512,
        "#head",
    ],
)
def test_any_valid_id_is_only_ever_an_attribute_value(make_dynamo: StoreFactory, weird: str) -> None:
    store = make_dynamo()
    root = save_new(store, weird, state_of(weird, ["hi"]))
    child = save_new(store, weird[:-1] + "!", state_of(weird, ["hi", "there"]), weird)
    assert store.get_snapshot(snapshot_id=weird) == root
    assert store.get_snapshot(session_id=weird) == child
    assert [s.snapshot_id for s in store.list_snapshots(weird)] == [weird, child.snapshot_id]
    assert store.get_snapshot(snapshot_id=weird, context={"tenant": "other"}) is None
    assert store.delete_session(weird) == 2


def test_tenants_are_key_prefixes_that_never_collide(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    save_new(store, "x", state_of("s", ["tenant a"]))
    store.save_snapshot(
        "x", lambda _: SessionSnapshot(snapshot_id="x", state=state_of("s", ["tenant b"])), context={"tenant": "b"}
    )
    a = store.get_snapshot(session_id="s")
    b = store.get_snapshot(session_id="s", context={"tenant": "b"})
    assert a is not None and a.state is not None and a.state.message_list[0].text == "tenant a"
    assert b is not None and b.state is not None and b.state.message_list[0].text == "tenant b"
    assert store.delete_session("s", context={"tenant": "b"}) == 1
    assert store.get_snapshot(session_id="s") == a


def test_ttl_gives_every_item_of_a_session_tree_one_expiry(make_dynamo: StoreFactory) -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    store = make_dynamo(ttl=timedelta(hours=2), clock=lambda: now, checkpoint_every=3)
    _chat(store, "s", 7)
    items = scan(store)
    assert items and all(int(i["exp"]["N"]) == int(now.timestamp()) + 7200 for i in items)


def test_without_ttl_no_item_expires(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    _chat(store, "s", 4)
    assert all("exp" not in i for i in scan(store))


def test_delete_session_removes_every_item_of_the_session_and_nothing_else(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=3, chunk_bytes=1000)
    _chat(store, "keep", 3)
    before = {(i["pk"]["S"], i["sk"]["S"]) for i in scan(store)}
    _chat(store, "gone", 8, size=2000)
    assert store.delete_session("gone") == 8
    assert {(i["pk"]["S"], i["sk"]["S"]) for i in left_behind(store)} == before
    assert store.get_snapshot(session_id="gone") is None
    assert store.get_snapshot(snapshot_id="gone-3") is None


def test_list_snapshots_rebuilds_every_state_of_a_branching_tree(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=2)
    ids = _chat(store, "s", 5)
    fork_parent = store.get_snapshot(snapshot_id=ids[1])
    assert fork_parent is not None and fork_parent.state is not None
    fork = save_new(store, "fork", attrs.evolve(fork_parent.state, custom={"fork": True}), ids[1])
    listed = cold(store).list_snapshots("s")
    assert [s.snapshot_id for s in listed] == [*ids, "fork"]
    assert listed[-1] == fork
    assert all(s == store.get_snapshot(snapshot_id=s.snapshot_id) for s in listed)
    assert store.get_snapshot(session_id="s") == fork


def test_rewriting_a_snapshots_state_keeps_its_children_readable(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=2)
    ids = _chat(store, "s", 4)
    rewritten = store.save_snapshot(
        ids[1], lambda cur: attrs.evolve(cur, state=state_of("s", ["rewritten"], custom={"new": 1}))
    )
    assert rewritten is not None
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id=ids[1]) == rewritten
    child = reader.get_snapshot(snapshot_id=ids[3])
    assert child is not None and child.state is not None and len(child.state.message_list) == 8


def test_rewriting_the_state_of_a_snapshot_stored_in_parts_keeps_its_childrens_parts(make_dynamo: StoreFactory) -> None:
    # the parent's blob is in parts (over 130 KB compressed) and its child's delta is planned on it: the
    # parent's new state is a blob of its own, and the blob the child reads through stays
    store = make_dynamo(chunk_bytes=50_000)
    rng = random.Random(11)
    parent = save_new(store, "p", state_of("s", [noise(rng, 200_000)]))
    assert parent.state is not None
    grown = attrs.evolve(parent.state, messages=(*parent.state.message_list, Message.of_text("model", "ok")))
    child = save_new(store, "c", grown, "p")
    rewritten = store.save_snapshot("p", lambda cur: attrs.evolve(cur, state=state_of("s", [noise(rng, 180_000)])))
    assert rewritten is not None
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="c") == child
    assert reader.get_snapshot(snapshot_id="p") == rewritten


def test_the_async_face_runs_on_the_event_loop_or_on_the_executor_it_was_handed(make_dynamo: StoreFactory) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="handed-over")
    native, offloaded = make_dynamo(), make_dynamo(executor=pool)
    threads: dict[str, list[str]] = {"native": [], "offloaded": []}

    def mutator(kind: str) -> Any:
        def write(current: SessionSnapshot | None) -> SessionSnapshot:
            threads[kind].append(threading.current_thread().name)
            return SessionSnapshot(snapshot_id="a", state=state_of("s", ["hi"]))

        return write

    async def main() -> list[SessionSnapshot | None]:
        leaves = []
        for kind, store in (("offloaded", offloaded), ("native", native)):
            if kind == "native" and not isinstance(store.aio, AsyncDynamoDBSessionStore):
                continue  # in-process moto answers boto3 only: its stores are always handed an executor
            await store.aio.save_snapshot("a", mutator(kind))
            leaves.append(await store.aio.get_snapshot(session_id="s"))
        return leaves

    leaves = asyncio.run(main())
    assert leaves and all(leaf is not None and leaf.snapshot_id == "a" for leaf in leaves)
    assert threads["offloaded"] and all(name.startswith("handed-over") for name in threads["offloaded"])
    assert all(name == threading.main_thread().name for name in threads["native"])
    pool.shutdown()


def test_restoring_over_a_snapshot_keeps_its_children_readable(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    ids = _chat(store, "s", 3)
    middle = store.get_snapshot(snapshot_id=ids[1])
    assert middle is not None
    store.restore_snapshots([attrs.evolve(middle, finish_reason="stop")])
    reader = cold(store)
    restored = reader.get_snapshot(snapshot_id=ids[1])
    assert restored is not None and restored.finish_reason is not None and restored.state == middle.state
    child = reader.get_snapshot(snapshot_id=ids[2])
    assert child is not None and child.state is not None and len(child.state.message_list) == 6
    assert reader.get_snapshot(session_id="s") == child


def test_listing_a_session_larger_than_a_query_page_follows_the_pages(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=2)
    rng = random.Random(9)
    parent = None
    for turn in range(4):  # four turns of ~400 KB that barely compress: the partition holds over 1 MB
        base = parent.state if parent is not None and parent.state is not None else state_of("s", [])
        state = attrs.evolve(base, messages=(*base.message_list, Message.of_text("user", noise(rng, 400_000))))
        parent = save_new(store, f"t{turn}", state, parent.snapshot_id if parent else None)
    guard = guard_of(store)
    guard.reset()
    listed = cold(store).list_snapshots("s")
    assert guard.calls["Query"] >= 2
    assert [s.snapshot_id for s in listed] == ["t0", "t1", "t2", "t3"]
    assert listed[-1] == parent


def test_finishing_a_pending_turn_this_store_saved_costs_one_conditional_write(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", session_id="s", status="pending"))
    guard = guard_of(store)
    guard.reset()
    done = store.save_snapshot("a", lambda current: attrs.evolve(current, status="completed"))
    assert done is not None and done.status == "completed"
    assert dict(guard.calls) == {"TransactWriteItems": 1}  # the snapshot and the session's version, atomically


def test_a_heartbeat_in_a_session_read_to_have_no_expiry_is_one_conditional_update(make_dynamo: StoreFactory) -> None:
    # Neither state nor status changes, so the session's version stays and no transaction is needed (one
    # costs twice the write units); but a store that has not read the head cannot know the session has
    # no expiry, so it checks the head is alive in the same transaction.
    store = make_dynamo()
    store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", session_id="s", status="pending"))
    guard = guard_of(store)
    guard.reset()
    first = store.heartbeat("a")
    assert dict(guard.calls) == {"TransactWriteItems": 1}
    resumed = cold(store)
    assert resumed.get_snapshot(session_id="s") is not None  # reads the head: no expiry
    guard.reset()
    beat = resumed.heartbeat("a")
    assert dict(guard.calls) == {"UpdateItem": 1}
    assert first.heartbeat_at is not None and beat.heartbeat_at is not None and beat.heartbeat_at >= first.heartbeat_at
    assert cold(store).get_snapshot(snapshot_id="a").heartbeat_at == beat.heartbeat_at  # type: ignore[union-attr]
    assert cold(store).get_session_record("s").version == 1  # type: ignore[union-attr]


def test_a_wrong_guess_never_lands_and_the_mutator_sees_what_is_stored(make_dynamo: StoreFactory) -> None:
    writer = make_dynamo()
    writer.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", session_id="s", status="pending"))
    other = cold(writer)  # never saw "a": its first guess is "absent"
    seen: list[SessionSnapshot | None] = []

    def finish(current: SessionSnapshot | None) -> SessionSnapshot:
        seen.append(current)
        base = current or SessionSnapshot(snapshot_id="a", session_id="s")
        return attrs.evolve(base, status="completed")

    done = other.save_snapshot("a", finish)
    assert seen[0] is None and seen[-1] is not None and seen[-1].status == "pending"
    first = writer.get_snapshot(snapshot_id="a")
    assert done is not None and first is not None
    assert first.status == "completed" and first.created_at == seen[-1].created_at
    # A stale cache is a guess too: the writer's cached "pending" copy must not win either.
    writer.save_snapshot("a", lambda current: attrs.evolve(current, finish_reason="stop"))
    assert writer.get_snapshot(snapshot_id="a").status == "completed"  # type: ignore[union-attr]


def test_a_mutator_that_raises_on_the_guess_is_judged_on_a_real_read(make_dynamo: StoreFactory) -> None:
    writer = make_dynamo()
    writer.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", session_id="s", status="pending"))
    beat = cold(writer).heartbeat("a")  # on the guess "absent" the heartbeat mutator raises NOT_FOUND
    assert beat.heartbeat_at is not None and beat.status == "pending"


def test_a_watcher_polling_slower_than_the_changes_still_sees_every_status(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(watch_interval=0.5, watch_max_interval=0.5)
    store.save_snapshot("a", lambda _: SessionSnapshot(snapshot_id="a", session_id="s", status="pending"))

    async def scenario() -> list[str]:
        stream = store.watch_status("a")
        seen = [(await stream.__anext__()).value]
        # Both changes land between two polls.
        await asyncio.to_thread(store.save_snapshot, "a", lambda cur: attrs.evolve(cur, status="aborting"))
        await asyncio.to_thread(store.abort_snapshot, "a")
        seen += [status.value async for status in stream]
        return seen

    assert asyncio.run(scenario()) == ["pending", "aborting", "aborted"]


def _members_named(store: DynamoDBSessionStore, session_id: str) -> tuple[list[str], set[str]]:
    """The member pages of a session (their sort keys) and every id its head and pages name."""
    pages, ids = [], set()
    for item in scan(store):
        if "ids" in item and item["pk"]["S"].endswith(SEP + session_id):
            ids.update(item["ids"]["SS"])
            if item["sk"]["S"].startswith(PAGE_PREFIX):
                pages.append(item["sk"]["S"])
    return pages, ids


def test_a_session_longer_than_its_head_moves_ids_to_member_pages_inside_the_save(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(head_ids=3)
    guard = guard_of(store)
    ids: list[str] = []
    parent: SessionSnapshot | None = None
    for turn in range(10):  # every turn resumes on a cold store, as a new process would
        turn_store = cold(store, head_ids=3)
        parent = turn_store.get_snapshot(session_id="s")
        base = parent.state if parent is not None and parent.state is not None else state_of("s", [])
        guard.reset()
        saved = save_new(turn_store, f"t{turn}", attrs.evolve(base, custom={"turn": turn}), ids[-1] if ids else None)
        assert dict(guard.calls) == {"TransactWriteItems": 1}, f"turn {turn}"
        ids.append(saved.snapshot_id)
    pages, named = _members_named(store, "s")
    assert len(pages) == 3 and named == set(ids)
    reader = cold(store)
    assert [s.snapshot_id for s in reader.list_snapshots("s")] == ids
    leaf = reader.get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id == "t9" and leaf.state is not None and leaf.state.custom == {"turn": 9}
    assert reader.delete_session("s") == 10
    assert left_behind(store) == []


def test_a_writer_that_never_read_the_head_still_pages_a_full_one(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(head_ids=3)
    ids = _chat(store, "s", 3)  # the head is full
    stranger = cold(store, head_ids=3)  # reads the parent, never the head: its commit is conditioned blind
    parent = stranger.get_snapshot(snapshot_id=ids[-1])
    assert parent is not None and parent.state is not None
    child = save_new(stranger, "blind", parent.state, parent.snapshot_id)
    pages, named = _members_named(store, "s")
    assert len(pages) == 1 and named == {*ids, "blind"}
    assert cold(store).get_snapshot(session_id="s") == child
    assert [s.snapshot_id for s in cold(store).list_snapshots("s")] == [*ids, "blind"]


def _before_the_tombstone(store: DynamoDBSessionStore, action: Any) -> None:
    """Run ``action`` just before each of the deleter's writes that make the head a tombstone."""

    def tombstones(update: dict[str, Any]) -> bool:
        names = update.get("ExpressionAttributeNames", {}).values()
        return update.get("Key", {}).get("sk", {}).get("S") == "h" and "del" in names

    def fault(operation: str, params: dict[str, Any]) -> None:
        # The first tombstone lands with the deletion's expiry index entry (a transaction); a rerun's alone.
        updates = [a["Update"] for a in params.get("TransactItems", []) if "Update" in a]
        if (operation == "UpdateItem" and tombstones(params)) or any(tombstones(u) for u in updates):
            action()

    guard_of(store).faults.append(fault)


def test_deleting_a_session_while_a_writer_moves_its_head_reads_it_again(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(head_ids=2)
    ids = _chat(store, "s", 3)
    writer = cold(store, head_ids=2)
    late: list[str] = []

    def a_writer_lands() -> None:
        if not late:  # between the deleter's read of the session and its tombstone
            parent = writer.get_snapshot(session_id="s")
            assert parent is not None and parent.state is not None
            late.append(save_new(writer, "late", parent.state, parent.snapshot_id).snapshot_id)

    _before_the_tombstone(store, a_writer_lands)
    assert store.delete_session("s") == len(ids) + 1  # the late child was not missed
    assert left_behind(store) == []


def test_deleting_a_session_whose_writer_never_stops_still_wins_and_later_writes_fail(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    ids = _chat(store, "s", 2)
    writer = cold(store)

    def a_writer_lands() -> None:
        parent = writer.get_snapshot(session_id="s")
        assert parent is not None and parent.state is not None
        ids.append(save_new(writer, f"late-{len(ids)}", parent.state, parent.snapshot_id).snapshot_id)

    _before_the_tombstone(store, a_writer_lands)
    assert store.delete_session("s") == len(ids)  # the tombstone keeps the late writer's id: nothing is missed
    assert left_behind(store) == []
    assert cold(store).get_snapshot(session_id="s") is None
    with pytest.raises(GenkitError) as caught:  # the writer's next turn has no parent any more
        save_new(writer, "after", SessionState(session_id="s"), ids[-1])
    assert caught.value.status in (Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION)
    assert left_behind(store) == []


def test_completed_snapshots_carry_no_status_attributes_and_a_random_version_until_they_change(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    save_new(store, "done", state_of("s", ["hi"]))
    save_new(store, "running", state_of("s", ["hi", "there"]), "done", status="pending")
    items = {i["pk"]["S"].rpartition(SEP)[2]: i for i in scan(store) if i["sk"]["S"] == SNAPSHOT_SK}
    assert {"st", "sh"}.isdisjoint(items["done"])
    assert items["running"]["st"] == {"S": "pending"} and "sh" not in items["running"]
    versions = {name: int(item["v"]["N"]) for name, item in items.items()}
    assert len(set(versions.values())) == 2 and min(versions.values()) >= 2  # each item's own, at random
    assert store.abort_snapshot("running") == "pending"
    assert cold(store).abort_snapshot("running") == "aborted"  # a second writer, on what is stored
    item = next(i for i in scan(store) if i["pk"]["S"].endswith(SEP + "running"))
    assert item["st"] == {"S": "aborted"} and item["v"] == {"N": str(versions["running"] + 1)}
    assert [s["S"] for s in item["sh"]["L"]] == ["pending", "aborted"]


def test_an_item_written_before_versions_started_at_random_is_updated_on_its_implicit_version(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    save_new(store, "running", state_of("s", ["hi"]), status="pending")
    key = next({"pk": i["pk"], "sk": i["sk"]} for i in scan(store) if i["sk"]["S"] == SNAPSHOT_SK)
    store.client.update_item(TableName=store.table_name, Key=key, UpdateExpression="REMOVE v")  # the old layout
    assert cold(store).abort_snapshot("running") == "pending"
    item = next(i for i in scan(store) if i["sk"]["S"] == SNAPSHOT_SK)
    assert item["st"] == {"S": "aborted"} and item["v"] == {"N": "2"}


def test_restoring_more_snapshots_than_a_head_holds_lists_and_resumes_them_all(make_dynamo: StoreFactory) -> None:
    source = make_dynamo()
    _chat(source, "s", 7)
    snapshots = source.list_snapshots("s")
    target = make_dynamo(head_ids=3)
    assert target.restore_snapshots(snapshots) == 7
    pages, named = _members_named(target, "s")
    assert pages and named == {s.snapshot_id for s in snapshots}
    reader = cold(target, head_ids=3)
    assert list(reader.list_snapshots("s")) == list(snapshots)
    assert reader.get_snapshot(session_id="s") == snapshots[-1]
    child = save_new(reader, "next", state_of("s", ["x"]), snapshots[-1].snapshot_id)
    assert cold(target).get_snapshot(session_id="s") == child


def test_a_writer_holding_an_old_head_version_cannot_drop_an_id_another_writer_added(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()
    root = save_new(store, "root", state_of("s", ["hi"]))  # this store now knows the head's version
    stranger = cold(store)
    assert stranger.get_snapshot(snapshot_id="root") == root  # it never read the head: it adds its id blind
    save_new(stranger, "x", state_of("s", ["hi", "x"]), "root")
    save_new(store, "y", state_of("s", ["hi", "y"]), "root")  # conditioned on the version it saw, now gone
    _, named = _members_named(store, "s")
    assert named == {"root", "x", "y"}
    assert {s.snapshot_id for s in cold(store).list_snapshots("s")} == {"root", "x", "y"}


def test_a_long_chat_reads_its_big_pages_one_page_of_level_one_and_at_most_four_deltas(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()  # checkpoint_every=5: pages of 5 and 10 turns
    ids = _chat(store, "s", 68, size=200)
    item = next(i for i in scan(store) if i["pk"]["S"].endswith(SEP + ids[-1]) and i["sk"]["S"] == SNAPSHOT_SK)
    recipe = Recipe.of(item)
    assert recipe.levels == (2, 2, 2, 2, 2, 2, 1, 0, 0, 0)  # 68 turns = 6 x 10 + 5 + 1 + 1 + 1
    assert recipe.ends[-1] == 2 * 68
    guard = guard_of(store)
    guard.reset()
    leaf = cold(store).get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id == ids[-1] and leaf.state is not None
    assert len(leaf.state.message_list) == 2 * 68
    assert sum(guard.calls.values()) == 2


@pytest.mark.parametrize("writer_knows_the_head", [True, False])
def test_a_child_cannot_land_in_a_session_whose_deletion_stopped_part_way(
    make_dynamo: StoreFactory, writer_knows_the_head: bool
) -> None:
    store = make_dynamo()
    ids = _chat(store, "s", 2)
    writer = cold(store)
    if writer_knows_the_head:
        assert writer.get_snapshot(session_id="s") is not None
    parent = store.get_snapshot(snapshot_id=ids[-1])
    assert parent is not None and parent.state is not None
    store.client.delete_item(TableName=store.table_name, Key=head_key("", "s"))  # the head went first, then a crash
    assert cold(store).get_snapshot(snapshot_id=ids[-1]) is None  # a headless session shows nothing, not half
    with pytest.raises(GenkitError) as caught:
        save_new(writer, "late", parent.state, ids[-1])
    assert caught.value.status in (Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION)
    assert writer.get_snapshot(snapshot_id="late") is None
    assert not [i for i in scan(store) if i["pk"]["S"].endswith("\x1flate")]


@pytest.mark.parametrize("head_read", [True, False], ids=["head-put", "head-update"])
def test_the_snapshot_that_commits_last_is_the_leaf_even_when_stamped_before_one_that_landed_first(
    make_dynamo: StoreFactory, head_read: bool
) -> None:
    store = make_dynamo()
    root = save_new(store, "root", state_of("s", ["hi"]))
    assert root.state is not None
    if head_read:  # the store knows the head's ids, so its commits replace the head whole
        assert store.get_snapshot(session_id="s") == root
    other: list[SessionSnapshot] = []

    def a(_: SessionSnapshot | None) -> SessionSnapshot:
        if not other:  # a's createdAt is already stamped: b lands first and this store now knows b's head
            other.append(save_new(store, "b", root.state, "root"))  # type: ignore[arg-type]
        return SessionSnapshot(snapshot_id="a", parent_id="root", state=root.state)

    saved_a = store.save_snapshot("a", a)
    assert saved_a is not None
    leaf = cold(store).get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id == "a"  # the commit order decides (S8), not createdAt
    record = cold(store).get_session_record("s")
    assert record is not None and record.leaf_id == "a" and record.version == 3


def test_progress_replacing_an_update_blob_in_parts_deletes_the_old_parts_in_the_same_transaction(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo(chunk_bytes=1000)
    store.save_snapshot("p", lambda _: SessionSnapshot(snapshot_id="p", session_id="s", status="pending"))
    guard = guard_of(store)
    names: list[set[str]] = []
    for step in range(3):
        progress = state_of("s", ["hello", "working", noise(random.Random(20 + step), 3_000)])
        guard.reset()
        saved = store.save_snapshot("p", lambda c, s=progress: attrs.evolve(c, state=s) if c else None)
        assert saved is not None and saved.state == progress
        # the new parts, the snapshot, the head and the old parts' deletion in one write; then the read hint
        assert dict(guard.calls) == {"TransactWriteItems": 1, "UpdateItem": 1}
        parts = [i["sk"]["S"] for i in scan(store) if i["sk"]["S"].startswith("b\x1f")]
        names.append({sk.split("\x1f")[2] for sk in parts})
        assert len(names[-1]) == 1, f"only the current update blob's parts are kept: {sorted(parts)}"
        assert len(parts) > 1, "the blob is stored in parts (chunk_bytes=1000)"
    assert len(names[0] | names[1] | names[2]) == 3, "each change wrote a new update blob"
    assert cold(store).get_snapshot(snapshot_id="p").state == progress  # type: ignore[union-attr]


def test_a_write_of_up_to_100_actions_is_one_transaction_and_one_more_is_staged(make_dynamo: StoreFactory) -> None:
    # chunk_bytes=1000: a root's first write is its item, its head and one action per part; these
    # states take 97, 98, 99 and 100 parts, so 99, 100, 101 and 102 actions
    store = make_dynamo(chunk_bytes=1000)
    guard = guard_of(store)
    seen: dict[int, dict[str, int]] = {}
    text = noise(random.Random(7), 140_000)
    for size in (128_000, 129_500, 130_800, 132_000):
        session_id = f"s{size}"
        state = state_of(session_id, [text[:size]])
        guard.reset()
        save_new(store, session_id, state)
        calls = dict(guard.calls)
        parts = [
            item
            for item in scan(store, "pk, sk")
            if item["pk"]["S"].endswith(SEP + session_id) and item["sk"]["S"].startswith(BLOB_PREFIX)
        ]
        seen[len(parts)] = calls
        assert cold(store).get_snapshot(session_id=session_id).state == state  # type: ignore[union-attr]
    assert 98 in seen and 99 in seen, f"the states cross the boundary: {sorted(seen)}"
    for count, calls in seen.items():
        if count + 2 <= 100:
            assert calls == {"TransactWriteItems": 1}, (count, calls)
        else:  # staged: a marker, the parts in batches of 25, each made permanent, then the commit
            assert calls["TransactWriteItems"] == 1 and calls["BatchWriteItem"] >= 4, (count, calls)


def test_a_blob_over_130_kb_compressed_goes_to_parts_and_one_under_it_stays_in_the_snapshot_item(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo()  # chunk_bytes 350,000: both blobs are one part
    rng = random.Random(3)
    small = save_new(store, "small", state_of("a", [noise(rng, 150_000)]))  # about 115 KB compressed
    large = save_new(store, "large", state_of("b", [noise(rng, 200_000)]))  # about 150 KB compressed
    items = scan(store)
    snapshot_items = {i["pk"]["S"].rsplit(SEP, 1)[-1]: i for i in items if i["sk"]["S"] == SNAPSHOT_SK}
    parts = [i for i in items if i["sk"]["S"].startswith(BLOB_PREFIX)]
    assert len(snapshot_items["small"]["rec"]["B"]) > 100_000, "the small blob is packed with its record"
    assert len(snapshot_items["large"]["rec"]["B"]) < 10_000, "the large blob is not"
    assert len(parts) == 1 and parts[0]["pk"]["S"].endswith(SEP + "b") and len(parts[0]["d"]["B"]) > 130 * 1024
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="small") == small
    assert reader.get_snapshot(snapshot_id="large") == large


def test_a_record_over_120_kb_compressed_is_refused_before_anything_is_written(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    trace = noise(random.Random(9), 200_000)  # error details of about 150 KB compressed
    with pytest.raises(GenkitError) as caught:
        save_new(
            store, "p", state_of("s", ["hi"]), error=ErrorInfo(status="UNKNOWN", message="m", details={"t": trace})
        )
    assert caught.value.status is Status.INVALID_ARGUMENT
    assert "everything but its state" in str(caught.value) and "move large data into the state" in str(caught.value)
    assert scan(store) == []
    # the same details under the limit, and the same bytes in the state: both stored
    kept = save_new(
        store,
        "q",
        state_of("s", [trace]),
        error=ErrorInfo(status="UNKNOWN", message="m", details={"t": trace[:100_000]}),
    )
    assert cold(store).get_snapshot(snapshot_id="q") == kept


def test_a_changed_state_of_one_two_or_three_parts_reads_back_exactly(make_dynamo: StoreFactory) -> None:
    # chunk_bytes=1000: update blobs of one part (packed into the snapshot item), two and three parts
    store = make_dynamo(chunk_bytes=1000)
    store.save_snapshot("p", lambda _: SessionSnapshot(snapshot_id="p", session_id="s", status="pending"))
    rng = random.Random(31)
    for size in (300, 1_800, 3_000):
        progress = state_of("s", ["hello", noise(rng, size)])
        saved = store.save_snapshot("p", lambda c, s=progress: attrs.evolve(c, state=s) if c else None)
        assert saved is not None
        assert cold(store, chunk_bytes=1000).get_snapshot(snapshot_id="p") == saved, size


def test_a_fork_of_a_compacted_history_too_big_for_one_transaction_stages_its_blobs_and_lands_in_one_commit(
    make_server_dynamo: StoreFactory,
) -> None:
    from genkit_sessions import KeepLastStrategy, MessageCountTrigger, SessionService

    store = make_server_dynamo()
    service = SessionService(store)
    rng = random.Random(5)
    for n in range(20):  # 20 user messages of 250 KB that barely compress: past what one transaction holds
        user, model = Message.of_text("user", f"u{n} " + noise(rng, 250_000)), Message.of_text("model", f"m{n}")
        service.add_interaction("big", user, [model])
    service.compact("big", MessageCountTrigger(4), KeepLastStrategy(2, lambda covered: "so far"))
    leaf = service.find_by_id("big")
    assert leaf is not None and leaf.leaf_id is not None
    guard = guard_of(store)
    guard.reset()
    fork = service.fork(leaf.leaf_id, new_session_id="copy")
    # The archive's and the first snapshot's blobs are staged (written in batches under an orphan expiry),
    # then the record, both snapshot items and the index entry land in the one transaction, the last call.
    assert guard.calls["BatchWriteItem"] > 0 and guard.calls["TransactWriteItems"] == 1, guard.calls
    assert guard.log[-1] == "TransactWriteItems", guard.log
    assert not [i for i in scan(store) if "stg" in i], "a staged part kept its orphan expiry"
    reader = SessionService(cold(store))
    assert [m.text for m in reader.get_messages("copy")] == [m.text for m in reader.get_messages("big")]
    assert [m.text for m in reader.get_active_messages("copy")] == [m.text for m in reader.get_active_messages("big")]
    assert fork.version == 2 == reader.version("copy")


def test_a_fork_of_a_compacted_session_writes_its_record_archive_and_first_snapshot_in_one_transaction(
    make_dynamo: StoreFactory,
) -> None:
    from genkit_sessions import KeepLastStrategy, MessageCountTrigger, SessionService

    store = make_dynamo()
    service = SessionService(store)
    for n in range(4):
        service.append("src", [Message.of_text("user", f"u{n}"), Message.of_text("model", f"m{n}")])
    service.compact("src", MessageCountTrigger(4), KeepLastStrategy(2, lambda covered: "so far"))
    leaf = service.find_by_id("src")
    assert leaf is not None and leaf.leaf_id is not None
    guard = guard_of(store)
    guard.reset()
    fork = SessionService(cold(store)).fork(leaf.leaf_id, new_session_id="copy", metadata={"principal": "p"})
    writes = {op: n for op, n in guard.calls.items() if op not in ("GetItem", "BatchGetItem", "Query")}
    assert writes == {"TransactWriteItems": 1}, guard.log
    assert fork.version == 2 and fork.leaf_id is not None
    reader = SessionService(cold(store))
    assert [m.text for m in reader.get_messages("copy")] == [m.text for m in reader.get_messages("src")]
    assert [r.id for r in reader.find_by_metadata("principal", "p").records] == ["copy"]


def test_a_session_created_with_more_first_snapshots_than_its_head_lists_pages_the_rest(
    make_dynamo: StoreFactory,
) -> None:
    store = make_dynamo(head_ids=3)
    chain = [
        SessionSnapshot(
            snapshot_id=f"c{n}",
            parent_id=f"c{n - 1}" if n else None,
            state=SessionState(messages=(Message.of_text("user", f"turn {n}"),)),
        )
        for n in range(40)
    ]
    guard = guard_of(store)
    guard.reset()
    record = store.create_session("long", snapshots=chain)
    assert dict(guard.calls) == {"GetItem": 1, "TransactWriteItems": 1}, guard.log
    assert (record.version, record.leaf_id) == (40, "c39")
    reader = cold(store)
    # All stamped with the record's creation: listed by createdAt, then id, the leaf last (as memory lists them).
    listed = [s.snapshot_id for s in reader.list_snapshots("long")]
    assert listed == [*sorted(f"c{n}" for n in range(39)), "c39"]
    assert listed == [s.snapshot_id for s in _memory_twin(chain).list_snapshots("long")]
    assert reader.get_snapshot(session_id="long").snapshot_id == "c39"
    assert reader.delete_session("long") == 40
    assert not [i for i in left_behind(store) if i["pk"]["S"].endswith("long") or "c3" in i["pk"]["S"]]


def _memory_twin(chain: list[SessionSnapshot]) -> Any:
    from genkit_sessions import InMemorySessionStore

    memory = InMemorySessionStore()
    memory.create_session("long", snapshots=chain)
    return memory


def _long_chat(store: DynamoDBSessionStore) -> SessionSnapshot:
    """12 turns of 40 KB that barely compress: a recipe of several blobs, over 256 KB in all."""
    rng = random.Random(12)
    parent: SessionSnapshot | None = None
    texts: list[str] = []
    for turn in range(12):
        texts = [*texts, noise(rng, 40_000)]
        parent = save_new(store, f"t{turn}", state_of("s", texts), parent.snapshot_id if parent else None)
    assert parent is not None
    return parent


def test_a_long_history_reads_the_same_on_the_blocking_and_the_async_face(make_server_dynamo: StoreFactory) -> None:
    store = make_server_dynamo()
    leaf = _long_chat(store)
    blobs = sum(len(i["d"]["B"]) for i in scan(store) if "d" in i) + sum(
        len(i["rec"]["B"]) for i in scan(store) if "rec" in i
    )
    assert blobs > 256 * 1024  # so the blocking face inflates the blobs beside its parsing
    by_id = cold(store).get_snapshot(snapshot_id=leaf.snapshot_id)
    by_session = cold(store).get_snapshot(session_id="s")
    listed = cold(store).list_snapshots("s")

    async def on_the_async_face() -> tuple[Any, Any, Any]:
        reader = cold(store).aio
        return (
            await reader.get_snapshot(snapshot_id=leaf.snapshot_id),
            await reader.get_snapshot(session_id="s"),
            await reader.list_snapshots("s"),
        )

    assert (by_id, by_session, listed) == asyncio.run(on_the_async_face())
    assert by_id == leaf == by_session and listed[-1] == leaf and len(listed) == 12


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_blob_of_a_long_history_that_does_not_inflate_is_data_loss_on_both_faces(
    make_server_dynamo: StoreFactory, damage: str
) -> None:
    store = make_server_dynamo()
    leaf = _long_chat(store)
    # The leaf's own blob, packed into its snapshot item: a zlib stream of garbage, or one cut short.
    item = next(i for i in scan(store) if i["pk"]["S"].endswith(f"\x1f{leaf.snapshot_id}") and "rec" in i)
    record, tag, blob = unpack_record(bytes(item["rec"]["B"]))
    assert tag is not None and blob is not None
    broken = b"\x01garbage" if damage == "garbage" else blob[: len(blob) // 2]
    store.client.put_item(TableName=store.table_name, Item={**item, "rec": {"B": pack_record(record, tag, broken)}})

    async def on_the_async_face() -> None:
        await cold(store).aio.get_snapshot(session_id="s")

    for read in (lambda: cold(store).get_snapshot(session_id="s"), lambda: asyncio.run(on_the_async_face())):
        with pytest.raises(GenkitError) as caught:
            read()
        assert caught.value.status is Status.DATA_LOSS and leaf.snapshot_id in caught.value.message


def _two_large_first_snapshots(session_id: str = "two", prefix: str = "") -> list[SessionSnapshot]:
    """Two first snapshots of 4.5 MB each that barely compress: each past what one transaction holds."""
    rng = random.Random(35)
    root = SessionSnapshot(snapshot_id=f"{prefix}r", state=state_of(session_id, [noise(rng, 4_500_000)]))
    child = SessionSnapshot(
        snapshot_id=f"{prefix}c", parent_id=f"{prefix}r", state=state_of(session_id, [noise(rng, 4_500_000)])
    )
    return [root, child]


def test_a_create_with_two_large_first_snapshots_stages_both_and_lands_in_one_commit(
    make_server_dynamo: StoreFactory,
) -> None:
    store = make_server_dynamo()
    first = _two_large_first_snapshots()
    guard = guard_of(store)
    guard.reset()
    record = store.create_session("two", snapshots=first)
    # A marker per staged blob, then one commit that makes both snapshots and the record visible at once.
    assert guard.calls["TransactWriteItems"] == 1 and guard.log[-1] == "TransactWriteItems", guard.log
    markers = [i for i in scan(store) if i["sk"]["S"].startswith("g")]
    assert markers == [] and not [i for i in scan(store) if "stg" in i], "a marker or a staged name stayed"
    assert (record.version, record.leaf_id) == (2, "c")
    reader = cold(store)
    assert [s.state for s in reader.list_snapshots("two")] == [s.state for s in first]


@pytest.mark.parametrize("at", ["first-marker", "second-marker", "commit"])
def test_a_create_staging_two_blobs_that_fails_leaves_no_session_and_a_rerun_lands(
    make_server_dynamo: StoreFactory, at: str
) -> None:
    store = make_server_dynamo()
    first = _two_large_first_snapshots()
    guard = guard_of(store)
    guard.reset()
    store.create_session("probe", snapshots=_two_large_first_snapshots("probe", "p"))
    calls = list(guard.log)
    # The calls of a staged create: the head read, the reminder and the bare tombstone, the markers ...
    index = {"first-marker": 3, "second-marker": 4, "commit": len(calls) - 1}[at]
    assert calls[3:5] == ["PutItem", "PutItem"] and calls[-1] == "TransactWriteItems", calls
    inject_fault(store, index, "internal-error" if at != "commit" else "throttled")
    with pytest.raises(GenkitError) as caught:
        store.create_session("two", snapshots=first)
    assert caught.value.status in (Status.UNAVAILABLE, Status.RESOURCE_EXHAUSTED), caught.value
    guard.faults.clear()
    guard.after_faults.clear()
    reader = cold(store)
    assert reader.get_session_record("two") is None and reader.list_snapshots("two") == []
    assert reader.get_snapshot(snapshot_id="r") is None and reader.get_snapshot(snapshot_id="c") is None
    assert parts_left_forever(store, {"pr", "pc"}) == [], "the failed create left parts that never expire"
    assert not [i for i in scan(store) if i["sk"]["S"].startswith("g")], "the failed create left a marker"
    record = store.create_session("two", snapshots=first)
    assert record.version == 2 and [s.state for s in cold(store).list_snapshots("two")] == [s.state for s in first]


def _packed_blob(store: DynamoDBSessionStore, snapshot_id: str) -> tuple[dict[str, Any], Any]:
    """A snapshot's item, read through boto3, and the payload of the blob packed in it."""
    item = next(i for i in scan(store) if i["sk"]["S"] == SNAPSHOT_SK and i["pk"]["S"].endswith(SEP + snapshot_id))
    _, tag, blob = unpack_record(bytes(item["rec"]["B"]))
    assert tag is not None and blob is not None, "a small blob is packed with its record"
    return item, layout_decompress(blob)


def _write_packed_blob(store: DynamoDBSessionStore, item: dict[str, Any], payload: Any) -> None:
    """Put ``item`` back through boto3 with ``payload`` as the blob packed in it."""
    record, tag, _ = unpack_record(bytes(item["rec"]["B"]))
    assert tag is not None
    store.client.put_item(
        TableName=store.table_name, Item={**item, "rec": {"B": pack_record(record, tag, layout_compress(payload))}}
    )


def test_a_blob_stores_each_plain_text_message_as_its_role_letter_and_its_text(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    noted = attrs.evolve(Message.of_text("model", "with metadata"), metadata={"k": 1})
    plain = state_of("s", ["hello", "hi there"])
    state = attrs.evolve(plain, messages=(*plain.message_list, noted))
    saved = save_new(store, "one", state)
    _, payload = _packed_blob(store, "one")
    assert payload["m"] == ["uhello", "mhi there", to_wire(noted)]
    assert cold(store).get_snapshot(snapshot_id="one") == saved


def test_a_blob_holding_every_message_as_wire_json_still_reads(make_dynamo: StoreFactory) -> None:
    """Blobs written before plain text messages were stored as strings hold wire JSON only."""
    store = make_dynamo()
    saved = save_new(store, "old", state_of("s", ["hello", "hi there", "and more"]))
    item, payload = _packed_blob(store, "old")
    assert saved.state is not None
    _write_packed_blob(store, item, {**payload, "m": [to_wire(m) for m in saved.state.message_list]})
    assert cold(store).get_snapshot(snapshot_id="old") == saved


def test_a_stored_message_string_without_a_role_letter_is_data_loss(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    save_new(store, "bad", state_of("s", ["hello"]))
    item, payload = _packed_blob(store, "bad")
    _write_packed_blob(store, item, {**payload, "m": ["xhello"]})
    with pytest.raises(GenkitError) as caught:
        cold(store).get_snapshot(snapshot_id="bad")
    assert caught.value.status is Status.DATA_LOSS
