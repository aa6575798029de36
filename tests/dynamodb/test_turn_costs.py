"""What a turn costs however long the chat and however many sessions are in flight; changes that leave no
items behind; and items written in the layout before those changes, still read (through boto3)."""

from __future__ import annotations

import random
from typing import Any

import attrs

from genkit_sessions import Message, SessionSnapshot, SessionState, SnapshotStatus, to_wire
from genkit_sessions.dynamodb import DynamoDBSessionStore
from tests.dynamodb.helpers import cold, noise, prose, save_new, scan, state_of
from tests.dynamodb.layout import (
    BLOB_PREFIX,
    SEP,
    Recipe,
    compress,
    head_key,
    open_value,
    pack_record,
    unpack_record,
)
from tests.dynamodb_backends import guard_of

StoreFactory = Any


def _seed_sessions(store: DynamoDBSessionStore, count: int) -> list[str]:
    ids = [f"s{i}" for i in range(count)]
    for session_id in ids:
        save_new(store, f"{session_id}-0", state_of(session_id, [f"hello from {session_id}", "hi"]))
    return ids


def test_many_sessions_in_flight_resume_in_two_calls_and_save_in_one_with_no_cache(
    make_dynamo: StoreFactory,
) -> None:
    seeding = make_dynamo()
    ids = _seed_sessions(seeding, 12)
    store = cold(seeding, cache_size=0)  # no LRU at all: what the held snapshots carry is all there is
    guard = guard_of(store)
    leaves: list[SessionSnapshot] = []
    for session_id in ids:
        guard.reset()
        leaf = store.get_snapshot(session_id=session_id)
        assert leaf is not None
        assert dict(guard.calls) == {"GetItem": 1, "BatchGetItem": 1}
        leaves.append(leaf)
    for leaf in leaves:  # every session in flight at once
        assert leaf.state is not None
        state = attrs.evolve(leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", "next")))
        guard.reset()
        save_new(store, f"{leaf.session_id}-1", state, leaf.snapshot_id)
        assert dict(guard.calls) == {"TransactWriteItems": 1}, guard.log
    reader = cold(seeding)
    for session_id in ids:
        leaf = reader.get_snapshot(session_id=session_id)
        assert leaf is not None and leaf.snapshot_id == f"{session_id}-1"
        assert leaf.state is not None and leaf.state.message_list[-1].text == "next"


def test_a_save_whose_parent_the_caller_dropped_reads_the_parent_again(make_dynamo: StoreFactory) -> None:
    seeding = make_dynamo()
    _seed_sessions(seeding, 1)
    store = cold(seeding, cache_size=0)
    leaf = store.get_snapshot(session_id="s0")
    assert leaf is not None and leaf.state is not None
    state = attrs.evolve(leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", "next")))
    parent_id = leaf.snapshot_id
    del leaf  # nothing holds the parent any more: the store no longer knows it, and reads it
    guard = guard_of(store)
    guard.reset()
    save_new(store, "s0-1", state, parent_id)
    assert guard.calls["TransactWriteItems"] == 1
    assert guard.calls["GetItem"] >= 1
    assert cold(seeding).get_snapshot(session_id="s0") == store.get_snapshot(snapshot_id="s0-1")


def _session_items(store: DynamoDBSessionStore) -> list[dict[str, Any]]:
    return [i for i in scan(store) if i["pk"]["S"].split(SEP)[1] in ("n", "s")]


def test_a_snapshot_changed_200_times_keeps_the_same_number_of_items(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    rng = random.Random(4)
    save_new(store, "a", state_of("s", ["hello"]))
    pending = save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)
    texts = ["hello", "working"]
    counts = []
    for step in range(200):  # a detached turn streaming its progress
        texts.append(prose(rng, 200) + f" step {step}")
        progress = state_of("s", list(texts))
        saved = store.save_snapshot(
            "p", lambda current, s=progress: attrs.evolve(current, state=s) if current else None
        )
        assert saved is not None
        counts.append(len(_session_items(store)))
    final = state_of("s", [*texts, "done"])
    store.save_snapshot(
        "p", lambda current: attrs.evolve(current, state=final, status=SnapshotStatus.COMPLETED) if current else None
    )
    assert set(counts) == {counts[0]}  # an update overwrites the update blob packed in the item
    assert len(_session_items(store)) == counts[0]
    back = cold(store).get_snapshot(snapshot_id="p")
    assert back is not None and back.state == final and back.effective_status is SnapshotStatus.COMPLETED
    assert pending.state is not None and cold(store).get_snapshot(snapshot_id="a") is not None


def test_a_large_change_replaces_the_parts_of_the_one_before_in_the_same_write(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(chunk_bytes=1000)
    rng = random.Random(5)
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)
    guard = guard_of(store)
    texts = ["hello", "working"]
    parts_seen = []
    for step in range(20):
        texts.append(noise(rng, 1_500) + f" {step}")
        progress = state_of("s", list(texts))
        guard.reset()
        store.save_snapshot("p", lambda current, s=progress: attrs.evolve(current, state=s) if current else None)
        assert guard.calls["TransactWriteItems"] == 1 and "BatchWriteItem" not in guard.calls, guard.log
        parts = [i for i in scan(store) if i["sk"]["S"].startswith(BLOB_PREFIX)]
        names = {i["sk"]["S"].rpartition(SEP)[0] for i in parts}
        assert len(names) == 1  # only the current update blob's parts remain
        item = store.client.get_item(TableName=store.table_name, Key=_snapshot_key("p"), ConsistentRead=True)["Item"]
        (current,) = [ref for ref in Recipe.of(item).refs if ref[1] > 0]
        assert len(parts) == current[1]
        parts_seen.append(len(parts))
        back = cold(store, chunk_bytes=1000).get_snapshot(snapshot_id="p")
        assert back is not None and back.state == progress
    assert max(parts_seen) <= max(parts_seen[-1], 30)


def test_a_child_of_a_changed_snapshot_never_depends_on_its_update_blob(make_dynamo: StoreFactory) -> None:
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["hello"]))
    changed = state_of("s", ["hello", "edited"], custom={"v": 1})
    store.save_snapshot("a", lambda current: attrs.evolve(current, state=changed) if current else None)
    child_state = state_of("s", ["hello", "edited", "child"], custom={"v": 1})
    child = save_new(store, "b", child_state, "a")
    again = state_of("s", ["hello", "edited again"], custom={"v": 2})
    store.save_snapshot("a", lambda current: attrs.evolve(current, state=again) if current else None)
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="b") == child
    back = reader.get_snapshot(snapshot_id="a")
    assert back is not None and back.state == again
    item = store.client.get_item(TableName=store.table_name, Key=_snapshot_key("b"), ConsistentRead=True)["Item"]
    assert not any(name.rpartition(SEP)[2].startswith("u") for name, _ in Recipe.of(item).refs)


def test_a_long_chat_names_few_blobs_and_its_head_stays_small(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(checkpoint_every=2)
    rng = random.Random(6)
    parent: SessionSnapshot | None = None
    head_sizes = []
    for turn in range(160):
        base = parent.state if parent is not None and parent.state is not None else SessionState(session_id="s")
        added = (Message.of_text("user", prose(rng, 300)), Message.of_text("model", prose(rng, 300)))
        parent = save_new(
            store, f"t{turn}", attrs.evolve(base, messages=base.message_list + added), parent and parent.snapshot_id
        )
        head = store.client.get_item(TableName=store.table_name, Key=head_key("", "s"), ConsistentRead=True)["Item"]
        head_sizes.append(len(head["rc"]["B"]))
    item = store.client.get_item(TableName=store.table_name, Key=_snapshot_key("t159"), ConsistentRead=True)["Item"]
    recipe = Recipe.of(item)
    # With pages of 2 deltas and of 2 pages, pages of 25 turns' worth used to pile up (40 of them at 160
    # turns); top pages of at most 16 pages below bound the recipe to about 20 blobs.
    assert len(recipe.refs) <= 1 + 1 + 15 + 160 // 64 + 1
    assert max(head_sizes[100:]) <= 2 * max(head_sizes[:40]) + 200
    assert cold(store).get_snapshot(session_id="s") == parent


def _snapshot_key(snapshot_id: str, tenant: str = "") -> dict[str, Any]:
    return {"pk": {"S": f"{tenant}{SEP}n{SEP}{snapshot_id}"}, "sk": {"S": "s"}}


def _envelope(snapshot: SessionSnapshot) -> Any:
    return to_wire(attrs.evolve(snapshot, state=None))


def _rest(state: SessionState) -> Any:
    return to_wire(attrs.evolve(state, messages=None))


def test_items_written_in_the_layout_before_update_blobs_and_sizes_still_read(make_dynamo: StoreFactory) -> None:
    """Three-list recipes, a head hint in that form, and a change stored as an immutable delta in parts
    (what the store wrote before update blobs), written through boto3, read and take new turns."""
    store = make_dynamo()
    client, table = store.client, store.table_name
    created = "2024-05-01T10:00:00.000000Z"
    m = [Message.of_text("user" if i % 2 == 0 else "model", f"message {i}") for i in range(5)]
    first = SessionState(session_id="old", messages=(m[0], m[1]))
    root = SessionSnapshot(snapshot_id="o1", session_id="old", created_at=created, state=first)
    root_recipe = [[["o1" + SEP + "d0001", 0]], [0], [2]]
    root_blob = compress({"m": [to_wire(x) for x in first.message_list], "r": _rest(first), "h": True})
    root_rec = pack_record(compress({"e": _envelope(root), "r": root_recipe}), "d0001", root_blob)
    client.put_item(TableName=table, Item={**_snapshot_key("o1"), "rec": {"B": root_rec}})
    second = SessionState(session_id="old", messages=(m[0], m[1], m[2], m[3]))
    child = SessionSnapshot(snapshot_id="o2", session_id="old", parent_id="o1", created_at=created, state=second)
    child_recipe = [[root_recipe[0][0], ["o2" + SEP + "d0002", 0]], [0, 0], [2, 4]]
    child_blob = compress({"a": [to_wire(m[2]), to_wire(m[3])], "p": [], "h": True})
    child_rec = pack_record(compress({"e": _envelope(child), "r": child_recipe}), "d0002", child_blob)
    # o2 was changed once, the old way: its record in `u`, the new delta in a part item of its own.
    third = SessionState(session_id="old", messages=(*second.message_list, m[4]))
    changed = attrs.evolve(child, state=third, updated_at="2024-05-01T10:00:01.000000Z")
    changed_recipe = [[*child_recipe[0], ["o2" + SEP + "d0003", 1]], [0, 0, 0], [2, 4, 5]]
    client.put_item(
        TableName=table,
        Item={
            **_snapshot_key("o2"),
            "rec": {"B": child_rec},
            "u": {"B": compress({"e": _envelope(changed), "r": changed_recipe})},
            "v": {"N": "2"},
        },
    )
    client.put_item(
        TableName=table,
        Item={
            "pk": head_key("", "old")["pk"],
            "sk": {"S": BLOB_PREFIX + "o2" + SEP + "d0003" + SEP + "0000"},
            "d": {"B": compress({"a": [to_wire(m[4])], "p": [], "h": True})},
        },
    )
    client.put_item(
        TableName=table,
        Item={
            **head_key("", "old"),
            "hv": {"S": "v-old"},
            "leaf": {"S": "o2"},
            "lc": {"S": created},
            "rc": {"B": compress(changed_recipe)},
            "ids": {"SS": ["o1", "o2"]},
            "sv": {"N": "3"},
            "ca": {"S": created},
        },
    )
    reader = cold(store)
    assert reader.get_snapshot(snapshot_id="o1") == root
    leaf = reader.get_snapshot(session_id="old")
    assert leaf is not None and leaf.snapshot_id == "o2" and leaf.state == third
    assert reader.get_snapshot(snapshot_id="o2") == leaf
    # A new turn on top, and a change of the old snapshot, the new way.
    turn = attrs.evolve(third, messages=(*third.message_list, Message.of_text("user", "new turn")))
    saved = save_new(reader, "o3", turn, "o2")
    edited = attrs.evolve(third, custom={"edited": True})
    reader.save_snapshot("o2", lambda current: attrs.evolve(current, state=edited) if current else None)
    fresh = cold(store)
    assert fresh.get_snapshot(snapshot_id="o3") == saved
    assert fresh.get_snapshot(session_id="old") == saved
    o2 = fresh.get_snapshot(snapshot_id="o2")
    assert o2 is not None and o2.state == edited
    assert [s.snapshot_id for s in fresh.list_snapshots("old")] == ["o1", "o2", "o3"]
    rewritten = open_value(bytes(client.get_item(TableName=table, Key=_snapshot_key("o2"))["Item"]["u"]["B"]))
    assert rewritten["e"]["snapshotId"] == "o2" and rewritten["r"][0]  # the change, sealed as records are now


def test_a_head_hint_with_or_without_blob_sizes_resumes_in_two_calls(make_dynamo: StoreFactory) -> None:
    """The read hint is written as refs, levels, ends, no sizes and the message sizes (the sizes stay in
    the record); a hint written as refs, levels and ends, or with the sizes, as heads were until then, is
    just as fresh: a cold resume makes the same two calls."""
    store = make_dynamo(checkpoint_every=2)
    rng = random.Random(8)
    parent: SessionSnapshot | None = None
    for turn in range(12):
        base = parent.state if parent is not None and parent.state is not None else SessionState(session_id="s")
        added = (Message.of_text("user", prose(rng, 200)), Message.of_text("model", prose(rng, 200)))
        parent = save_new(
            store, f"t{turn}", attrs.evolve(base, messages=base.message_list + added), parent and parent.snapshot_id
        )
    client, table = store.client, store.table_name
    head = client.get_item(TableName=table, Key=head_key("", "s"), ConsistentRead=True)["Item"]
    written = open_value(bytes(head["rc"]["B"]), head["leaf"]["S"])
    assert len(written) == 5 and written[3] == []  # refs, levels, ends, no sizes, message sizes
    leaf_item = client.get_item(TableName=table, Key=_snapshot_key("t11"), ConsistentRead=True)["Item"]
    full = open_value(unpack_record(bytes(leaf_item["rec"]["B"]))[0])["r"]
    assert len(full) == 5 and len(full[0]) > 2  # the record keeps the sizes, and pages were made
    for hint in (written, written[:3], full[:4], full):
        client.put_item(TableName=table, Item={**head, "rc": {"B": compress(hint)}})
        reader = cold(store)
        guard = guard_of(reader)
        guard.reset()
        assert reader.get_snapshot(session_id="s") == parent
        assert dict(guard.calls) == {"GetItem": 1, "BatchGetItem": 1}, guard.log


def _parts(store: DynamoDBSessionStore) -> list[dict[str, Any]]:
    return [i for i in scan(store) if i["sk"]["S"].startswith(BLOB_PREFIX)]


def test_an_update_blob_of_more_parts_than_a_transaction_holds_is_replaced_too(make_dynamo: StoreFactory) -> None:
    store = make_dynamo(chunk_bytes=1000)
    rng = random.Random(8)
    save_new(store, "a", state_of("s", ["hello"]))
    save_new(store, "p", state_of("s", ["hello", "working"]), "a", status=SnapshotStatus.PENDING)
    big = state_of("s", ["hello", "working", noise(rng, 150_000)])  # about 110 parts: staged, not one transaction
    store.save_snapshot("p", lambda current: attrs.evolve(current, state=big) if current else None)
    first = len(_parts(store))
    assert first > 100
    bigger = state_of("s", ["hello", "working", noise(rng, 150_000), "more"])
    store.save_snapshot("p", lambda current: attrs.evolve(current, state=bigger) if current else None)
    names = {i["sk"]["S"].rpartition(SEP)[0] for i in _parts(store)}
    assert len(names) == 1 and len(_parts(store)) <= first + 2  # the replaced blob's parts went after the commit
    back = cold(store, chunk_bytes=1000).get_snapshot(snapshot_id="p")
    assert back is not None and back.state == bigger


def test_a_turn_that_streams_progress_then_completes_and_the_next_turn_cost_one_write_each(
    make_dynamo: StoreFactory,
) -> None:
    # A pending turn's state and status changes move the session's version: the store that made them
    # builds each next write on the head they left, so no write of the sequence loses a race to itself.
    store = make_dynamo()
    save_new(store, "a", state_of("s", ["hello", "hi"]))
    pending = save_new(store, "p", state_of("s", ["hello", "hi", "next"]), "a", status=SnapshotStatus.PENDING)
    assert pending.state is not None
    guard = guard_of(store)
    steps = {
        "progress": lambda cur: attrs.evolve(cur, state=state_of("s", ["hello", "hi", "next", "partial"])),
        "complete": lambda cur: attrs.evolve(cur, status=SnapshotStatus.COMPLETED),
    }
    for step, mutate in steps.items():
        guard.reset()
        assert store.save_snapshot("p", lambda cur, m=mutate: m(cur) if cur else None) is not None
        assert guard.calls["TransactWriteItems"] == 1, (step, dict(guard.calls))
    guard.reset()  # the next turn: resume by session id, then save a child
    leaf = store.get_snapshot(session_id="s")
    assert leaf is not None and leaf.snapshot_id == "p" and leaf.state is not None
    save_new(
        store, "c", attrs.evolve(leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", "x"))), "p"
    )
    assert guard.calls["TransactWriteItems"] == 1 and guard.calls["GetItem"] + guard.calls["BatchGetItem"] <= 2
    assert cold(store).get_snapshot(session_id="s").snapshot_id == "c"  # type: ignore[union-attr]
