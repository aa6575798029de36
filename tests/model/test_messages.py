"""``Messages``: the shared, immutable message sequence a snapshot's state holds.

A child's history shares its parent's backing list, so these tests hold every view against a plain
tuple built the ordinary way, through any mix of linear growth and forks, and check that a long chat
costs O(n) memory.
"""

from __future__ import annotations

import copy
import gc
import pickle
import threading
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genkit_sessions import (
    AgentInit,
    GenkitError,
    InMemorySessionStore,
    Message,
    Messages,
    SessionResolver,
    SessionState,
    from_wire,
    to_wire,
)


def _m(i: int) -> Message:
    return Message.of_text("user" if i % 2 == 0 else "model", f"message {i}")


def test_messages_reads_like_the_tuple_it_holds() -> None:
    items = tuple(_m(i) for i in range(5))
    held = Messages(items)
    assert held == items and items == held and held == Messages(items)
    assert held != items[:4] and held != list(items)
    assert hash(held) == hash(items)
    assert len(held) == 5 and held[0] == items[0] and held[-1] == items[-1]
    assert held[1:3] == items[1:3] and isinstance(held[1:3], tuple) and held[::-2] == items[::-2]
    assert list(reversed(held)) == list(reversed(items))
    assert items[2] in held and _m(99) not in held
    assert held.index(items[3]) == 3 and held.count(items[1]) == 1
    with pytest.raises(IndexError):
        held[5]
    with pytest.raises(TypeError):
        held["0"]  # type: ignore[call-overload]


def test_messages_cannot_be_changed() -> None:
    held = Messages([_m(0)])
    with pytest.raises(TypeError):
        held[0] = _m(1)  # type: ignore[index]
    with pytest.raises(AttributeError):
        held.append(_m(1))  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        held.extra = 1  # type: ignore[attr-defined]


def test_messages_refuses_anything_but_messages() -> None:
    with pytest.raises(GenkitError) as caught:
        Messages([_m(0), "hello"])  # type: ignore[list-item]
    assert caught.value.status.value == "INVALID_ARGUMENT" and "Messages[1]" in caught.value.message
    with pytest.raises(GenkitError):
        Messages(_m(0))  # type: ignore[arg-type]
    with pytest.raises(GenkitError) as caught:
        Messages([_m(0)]) + ("not a message",)  # type: ignore[operator]  # noqa: RUF005
    assert "Messages[1]" in caught.value.message
    with pytest.raises(TypeError):
        Messages([_m(0)]) + [_m(1)]  # type: ignore[operator]  # noqa: RUF005
    with pytest.raises(GenkitError) as caught:
        SessionState(messages=[_m(0), 3])  # type: ignore[list-item]
    assert "SessionState.messages[1]" in caught.value.message


def test_a_state_always_holds_messages_and_round_trips_through_the_wire() -> None:
    state = SessionState(session_id="s", messages=[_m(0), _m(1)])
    assert isinstance(state.messages, Messages)
    assert SessionState().message_list == () and isinstance(SessionState().message_list, Messages)
    assert to_wire(state)["messages"] == [to_wire(_m(0)), to_wire(_m(1))]
    back = from_wire(SessionState, to_wire(state))
    assert back == state and isinstance(back.messages, Messages)


def test_copies_and_pickles_are_equal() -> None:
    held = Messages([_m(0)]) + (_m(1),)  # noqa: RUF005 (the sum is what is tested)
    assert copy.copy(held) is held and copy.deepcopy(held) is held
    assert pickle.loads(pickle.dumps(held)) == held


def test_a_sum_with_a_tuple_on_the_left_is_messages() -> None:
    joined = (_m(0),) + Messages([_m(1)])  # noqa: RUF005
    assert isinstance(joined, Messages) and joined == (_m(0), _m(1))


def test_iterating_a_view_never_yields_messages_a_child_added_meanwhile() -> None:
    parent = Messages([_m(0), _m(1)])
    seen = []
    for message in parent:
        seen.append(message)
        parent + (_m(len(seen) + 1),)  # a child extends the shared backing list mid-iteration  # noqa: RUF005
    assert seen == [_m(0), _m(1)]
    assert list(reversed(parent)) == [_m(1), _m(0)] and len(parent) == 2


_BOUND = st.none() | st.integers(min_value=-12, max_value=12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(min_value=0, max_value=1_000), st.integers(min_value=0, max_value=3))),
    st.builds(slice, _BOUND, _BOUND, st.none() | st.integers(min_value=-3, max_value=3).filter(bool)),
)
def test_any_mix_of_growth_and_forks_keeps_every_view_as_it_was(steps: list[tuple[int, int]], cut: slice) -> None:
    """Each step extends one earlier view (its parent: the newest, or any older one, which is a fork) by
    0-3 messages; afterwards every view still equals the tuple it was made equal to."""
    views: list[Messages] = [Messages()]
    expected: list[tuple[Message, ...]] = [()]
    counter = 0
    for pick, added in steps:
        parent = pick % len(views)
        more = tuple(_m(counter + i) for i in range(added))
        counter += added
        views.append(views[parent] + more)
        expected.append(expected[parent] + more)
    for view, tup in zip(views, expected, strict=True):
        assert view == tup and tuple(view) == tup and len(view) == len(tup) and view[cut] == tup[cut]
        if tup:
            assert view[-1] == tup[-1] and view[: len(tup) // 2] == tup[: len(tup) // 2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=1_000), st.integers(min_value=0, max_value=3))))
def test_a_view_said_to_extend_another_begins_with_its_very_messages(steps: list[tuple[int, int]]) -> None:
    """Through any mix of growth and forks: ``b.extends(a)`` only when ``b`` begins with ``a``'s messages
    (the same objects), and a turn always extends the non-empty parent it grew from while that parent
    is the newest view of its list (a chat's common case)."""
    views: list[Messages] = [Messages()]
    grown_from_the_end: list[tuple[int, int]] = []
    counter = 0
    for pick, added in steps:
        parent = pick % len(views)
        ended_its_list = len(views[parent]) > 0 and all(
            len(views[parent]) >= len(v) for v in views if v.extends(views[parent])
        )
        more = tuple(_m(counter + i) for i in range(added))
        counter += added
        views.append(views[parent] + more)
        if ended_its_list:
            grown_from_the_end.append((parent, len(views) - 1))
    for a in views:
        for b in views:
            if b.extends(a):
                assert len(b) >= len(a) and all(x is y for x, y in zip(a, b[: len(a)], strict=True))
    for parent, child in grown_from_the_end:
        assert views[child].extends(views[parent])


def test_forks_racing_from_threads_never_mix_histories() -> None:
    base = Messages([_m(0)])
    results: dict[int, Messages] = {}

    def grow(worker: int) -> None:
        view = base
        for turn in range(200):
            view = view + (Message.of_text("user", f"{worker}-{turn}"),)  # noqa: RUF005 (shares the backing)
        results[worker] = view

    threads = [threading.Thread(target=grow, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert base == (_m(0),)
    for worker, view in results.items():
        assert [m.text for m in view[1:]] == [f"{worker}-{turn}" for turn in range(200)]


def test_a_long_chat_holds_each_message_once() -> None:
    """2,000 turns through the resolver: what the store holds beyond the messages stays far below what a new
    pointer tuple per snapshot would take (about 32 MB here)."""
    turns = 2_000
    pairs = [(Message.of_text("user", f"question {i}"), Message.of_text("model", f"answer {i}")) for i in range(turns)]
    store = InMemorySessionStore()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for user, model in pairs:
            session = SessionResolver.resolve(store, True, AgentInit(session_id="chat")).session
            assert session is not None
            session.add_messages(user, model)
            session.save()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    leaf = store.get_snapshot(session_id="chat")
    assert leaf is not None and leaf.state is not None
    assert leaf.state.message_list == tuple(m for pair in pairs for m in pair)
    snapshots = store.list_snapshots("chat")
    assert [len(s.state.message_list) for s in snapshots] == [2 * (i + 1) for i in range(turns)]  # type: ignore[union-attr]
    assert held < 2_000_000, f"{held:,} bytes for {turns:,} turns"
