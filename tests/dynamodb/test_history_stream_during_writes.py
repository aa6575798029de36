"""A history stream on DynamoDB that a write interrupts (contract rule H3) still hands out one version's
complete history, or says why it cannot: a change in place of the snapshot being streamed, a delete of
its session, and data really missing from a live session each get their own answer."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from genkit_sessions import GenkitError, InMemorySessionStore, Message, SessionService, SessionSnapshot, SessionState
from genkit_sessions.errors import Reason, Status
from tests.dynamodb.helpers import cold, noise, scan

StoreFactory = Any
PART = 1_000


def _long_session(store: Any) -> None:
    rng = random.Random(1)
    service = SessionService(store)
    for _ in range(12):
        service.add_interaction(
            "s", Message.of_text("user", noise(rng, 3000)), [Message.of_text("model", noise(rng, 3000))]
        )


def _change(store: Any, change: Callable[[tuple[Message, ...]], tuple[Message, ...]], status: str = "pending") -> None:
    store.save_snapshot(
        "turn",
        lambda cur: attrs.evolve(
            cur, status=status, state=attrs.evolve(cur.state, messages=change(cur.state.messages))
        ),
    )


def _running_turn(store: Any, updates: int = 1) -> list[str | None]:
    """A running turn (pending snapshot ``turn``) updated in place ``updates`` times, each appending a
    message, as Genkit does: its update blob holds those messages, in parts."""
    rng = random.Random(2)
    _long_session(store)
    leaf = store.get_snapshot(session_id="s")
    store.save_snapshot(
        "turn",
        lambda _: SessionSnapshot(
            snapshot_id="turn",
            session_id="s",
            parent_id=leaf.snapshot_id,
            status="pending",
            state=SessionState(session_id="s", messages=(*leaf.state.messages, Message.of_text("user", "go on"))),
        ),
    )
    for n in range(updates):
        _change(store, lambda messages, n=n: (*messages, Message.of_text("model", f"{n}:{noise(rng, 5000)}")))
    return [m.text for m in store.get_snapshot(snapshot_id="turn").state.messages]


def _stream(reader: Any, write: Callable[[], None], at: int, **selector: Any) -> list[str | None]:
    """The texts a stream hands out, one message a chunk, with ``write`` done once ``at`` were handed out."""
    out: list[str | None] = []
    for chunk in SessionService(reader).iter_history(chunk_messages=1, **selector):
        out.extend(m.text for m in chunk)
        if len(out) == at:
            write()
    return out


def _finish(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    return (*messages, Message.of_text("model", "done"))


def test_a_stream_of_a_turn_completed_in_place_mid_stream_hands_out_the_version_it_began_on(
    make_dynamo: StoreFactory,
) -> None:
    memory = InMemorySessionStore()
    began = _running_turn(memory)
    assert _stream(memory, lambda: _change(memory, _finish, "completed"), 1, snapshot_id="turn") == began
    dynamo = make_dynamo(chunk_bytes=PART)
    assert _running_turn(dynamo) == began
    reader = cold(dynamo, chunk_bytes=PART)
    assert _stream(reader, lambda: _change(dynamo, _finish, "completed"), 1, snapshot_id="turn") == began
    assert _stream(reader, lambda: None, 0, snapshot_id="turn") == [*began, "done"]  # a new stream: the new version


@pytest.mark.parametrize("selector", [{"snapshot_id": "turn"}, {"session_id": "s"}])
def test_a_stream_in_the_middle_of_an_update_blob_goes_on_with_a_change_that_only_appended(
    make_dynamo: StoreFactory, selector: dict[str, str]
) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    began = _running_turn(dynamo, updates=3)
    in_update = len(began) - 2  # one message of the update blob handed out, two to come
    streamed = _stream(cold(dynamo, chunk_bytes=PART), lambda: _change(dynamo, _finish), in_update, **selector)
    assert streamed == began


def test_a_stream_whose_snapshot_was_rewritten_in_place_to_the_same_length_hands_out_the_new_version(
    make_dynamo: StoreFactory,
) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    began = _running_turn(dynamo, updates=2)

    def rewrite_last(messages: tuple[Message, ...]) -> tuple[Message, ...]:
        return (*messages[:-1], Message.of_text("model", "rewritten"))

    streamed = _stream(cold(dynamo, chunk_bytes=PART), lambda: _change(dynamo, rewrite_last), 1, snapshot_id="turn")
    assert streamed == [*began[:-1], "rewritten"]
    assert streamed == [m.text for m in dynamo.get_snapshot(snapshot_id="turn").state.messages]


@pytest.mark.parametrize("grow", [False, True])
def test_a_stream_whose_snapshot_rewrote_a_message_it_already_handed_out_is_aborted_not_mixed(
    make_dynamo: StoreFactory, grow: bool
) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    began = _running_turn(dynamo, updates=3)
    in_update = len(began) - 2  # the update blob's first message is out

    def rewrite(messages: tuple[Message, ...]) -> tuple[Message, ...]:
        changed = (*messages[:-3], Message.of_text("model", "rewritten"), *messages[-2:])
        return _finish(changed) if grow else changed

    streamed: list[str | None] = []
    with pytest.raises(GenkitError) as raised:
        for chunk in SessionService(cold(dynamo, chunk_bytes=PART)).iter_history(snapshot_id="turn", chunk_messages=1):
            streamed.extend(m.text for m in chunk)
            if len(streamed) == in_update:
                _change(dynamo, rewrite)
    assert raised.value.status is Status.ABORTED and "stream it again" in raised.value.message
    assert streamed == began[: len(streamed)]  # nothing of the new version was handed out


def test_a_stream_cut_short_by_a_session_delete_says_the_session_was_deleted(make_dynamo: StoreFactory) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    _long_session(dynamo)
    writer = SessionService(dynamo)
    for selector in ({"session_id": "s"},):
        with pytest.raises(GenkitError) as raised:
            _stream(cold(dynamo, chunk_bytes=PART), lambda: writer.delete("s"), 1, **selector)
        assert raised.value.status is Status.NOT_FOUND
        assert raised.value.reason == Reason.SESSION_NOT_FOUND
        assert "was deleted while its history was being streamed" in raised.value.message
        assert "backup" not in raised.value.message


def test_a_stream_cut_short_by_a_delete_of_a_running_turn_says_the_session_was_deleted(
    make_dynamo: StoreFactory,
) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    began = _running_turn(dynamo, updates=3)
    with pytest.raises(GenkitError) as raised:
        _stream(
            cold(dynamo, chunk_bytes=PART), lambda: SessionService(dynamo).delete("s"), len(began) - 2, session_id="s"
        )
    assert raised.value.status is Status.NOT_FOUND and "was deleted" in raised.value.message


def test_a_part_missing_from_a_live_session_is_still_data_loss(make_dynamo: StoreFactory) -> None:
    dynamo = make_dynamo(chunk_bytes=PART)
    _long_session(dynamo)
    for part in [i for i in scan(dynamo) if i["sk"]["S"].startswith("b")]:  # every blob stored in parts
        dynamo.client.delete_item(TableName=dynamo.table_name, Key={"pk": part["pk"], "sk": part["sk"]})
    with pytest.raises(GenkitError) as raised:
        _stream(cold(dynamo, chunk_bytes=PART), lambda: None, 0, session_id="s")
    assert raised.value.status is Status.DATA_LOSS and "is missing" in raised.value.message
