"""A bounded history read on DynamoDB (contract rule H2) answers what the in-memory store answers, in at
most two calls that fetch at most the window plus one stored page, whatever bounds it is given; and the
recipe that plans it reads back from every layout a store ever wrote."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import ChatMemoryStore, InMemorySessionStore, Message, Role, SessionService, TextPart
from genkit_sessions.dynamodb import _commit, _head
from genkit_sessions.dynamodb._codec import UNKNOWN, Recipe, compress
from genkit_sessions.stores.history_rules import message_bytes
from tests.dynamodb.helpers import cold, noise
from tests.dynamodb_backends import guard_of

StoreFactory = Any


def _message(role: str, text: str, event_id: str) -> Message:
    return Message(role=role, content=(TextPart(text),), metadata={"eventId": event_id})


def _chat(store: Any, turns: int, size: int = 0) -> None:
    rng = random.Random(turns)
    service = SessionService(store)
    for n in range(turns):
        pad = noise(rng, size) if size else ""
        service.add_interaction(
            "s", _message("user", f"u{n}{pad}", f"u{n}"), [_message("model", f"m{n}é{pad}", f"m{n}")]
        )


def _texts(messages: Any) -> list[str | None]:
    return [m.text for m in messages]


def _window_and_calls(store: Any, **bounds: Any) -> tuple[Any, dict[str, int]]:
    reader = cold(store)  # another process: nothing cached
    guard = guard_of(store)
    guard.reset()
    window = SessionService(reader).read_window("s", **bounds)
    return window, dict(guard.calls)


def test_a_window_with_no_bounds_holds_the_whole_history_and_is_not_truncated(make_dynamo: StoreFactory) -> None:
    dynamo, memory = make_dynamo(), InMemorySessionStore()
    _chat(dynamo, 40)
    _chat(memory, 40)
    expected = SessionService(memory).read_window("s")
    window, calls = _window_and_calls(dynamo)
    assert (len(window.messages), window.truncated) == (80, False) == (len(expected.messages), expected.truncated)
    assert _texts(window.messages) == _texts(expected.messages)
    assert sum(calls.values()) <= 2, calls


@pytest.mark.parametrize("share", [1.0, 0.5, 0.02])
def test_a_byte_bounded_window_takes_two_calls_and_equals_the_in_memory_window(
    make_dynamo: StoreFactory, share: float
) -> None:
    dynamo, memory = make_dynamo(), InMemorySessionStore()
    _chat(dynamo, 200)
    _chat(memory, 200)
    whole = sum(map(message_bytes, SessionService(memory).get_active_messages("s")))
    bound = max(1, int(whole * share))
    expected = SessionService(memory).read_window("s", max_bytes=bound)
    window, calls = _window_and_calls(dynamo, max_bytes=bound)
    assert _texts(window.messages) == _texts(expected.messages)
    assert window.truncated is expected.truncated is (share < 1.0)
    assert calls == {"GetItem": 1, "BatchGetItem": 1}


def test_a_byte_bounded_window_fetches_at_most_the_window_plus_one_stored_page(make_dynamo: StoreFactory) -> None:
    dynamo = make_dynamo()
    _chat(dynamo, 300, size=200)
    history = SessionService(dynamo).get_active_messages("s")
    bound = sum(map(message_bytes, history[-30:]))
    fetched: list[int] = []

    def count(parsed: Any, **_: Any) -> None:
        for items in parsed.get("Responses", {}).values():
            fetched.extend(
                len(item["d"]["B"]) if "d" in item else len(item.get("rec", {}).get("B", b"")) for item in items
            )

    dynamo.client.meta.events.register("after-call.dynamodb.BatchGetItem", count)
    window, calls = _window_and_calls(dynamo, max_bytes=bound)
    assert len(window.messages) == 30 and window.truncated is True
    assert calls == {"GetItem": 1, "BatchGetItem": 1}
    bounded = sum(fetched)
    fetched.clear()
    _window_and_calls(dynamo)  # every block, for scale
    assert 0 < bounded < sum(fetched) / 3  # the newest page and what follows, not the whole history


def test_a_window_with_both_bounds_takes_two_calls_and_equals_the_in_memory_window(
    make_dynamo: StoreFactory,
) -> None:
    dynamo, memory = make_dynamo(), InMemorySessionStore()
    _chat(dynamo, 120)
    _chat(memory, 120)
    for max_messages, share in ((7, 1.0), (200, 0.3), (60, 0.1)):
        bound = int(sum(map(message_bytes, SessionService(memory).get_active_messages("s"))) * share)
        expected = SessionService(memory).read_window("s", max_messages=max_messages, max_bytes=bound)
        window, calls = _window_and_calls(dynamo, max_messages=max_messages, max_bytes=bound)
        assert (_texts(window.messages), window.truncated) == (_texts(expected.messages), expected.truncated)
        assert calls == {"GetItem": 1, "BatchGetItem": 1}


def test_an_exactly_fitting_window_is_not_truncated_when_the_session_began_empty(make_dynamo: StoreFactory) -> None:
    dynamo, memory = make_dynamo(), InMemorySessionStore()
    two = [Message(role=Role.USER, content=(TextPart("hi"),)), Message(role=Role.MODEL, content=(TextPart("yo"),))]
    for store in (dynamo, memory):
        chat = ChatMemoryStore(store)
        chat.update_messages("a", [])  # a root with no messages (as a first, empty turn leaves it)
        chat.update_messages("a", two)
    size = sum(map(message_bytes, two))
    for bounds in ({"max_messages": 2}, {"max_bytes": size}, {"max_messages": 2, "max_bytes": size}):
        expected = SessionService(memory).read_window("a", **bounds)
        window = SessionService(cold(dynamo)).read_window("a", **bounds)
        assert (_texts(window.messages), window.truncated) == (["hi", "yo"], False)
        assert window.truncated is expected.truncated


def test_a_byte_bounded_window_over_blobs_written_before_message_sizes_were_recorded_still_fits(
    make_dynamo: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamo, memory = make_dynamo(), InMemorySessionStore()
    with monkeypatch.context() as old_writer:  # recipes as a store wrote them before message sizes
        old_writer.setattr(
            _commit, "sealed_record", lambda envelope, recipe: compress({"e": envelope, "r": _old_layout(recipe, 4)})
        )
        old_writer.setattr(_head, "sealed_hint", lambda recipe, leaf: compress(_old_layout(recipe, 3)))
        _chat(dynamo, 100)
    _chat(memory, 100)
    whole = sum(map(message_bytes, SessionService(memory).get_active_messages("s")))
    for bound in (whole, whole // 3, 40):
        expected = SessionService(memory).read_window("s", max_bytes=bound)
        window, _ = _window_and_calls(dynamo, max_bytes=bound)
        assert (_texts(window.messages), window.truncated) == (_texts(expected.messages), expected.truncated)
    _chat(dynamo, 1)  # a newer write records the sizes of the blobs it adds
    _chat(memory, 1)
    expected = SessionService(memory).read_window("s", max_bytes=40)
    window, _ = _window_and_calls(dynamo, max_bytes=40)
    assert (_texts(window.messages), window.truncated) == (_texts(expected.messages), expected.truncated)


def _old_layout(recipe: Recipe, length: int) -> list[Any]:
    data = [[list(ref) for ref in recipe.refs], list(recipe.levels), list(recipe.ends), list(recipe.sizes)]
    return data[:length]


_refs = st.lists(
    st.tuples(st.text(alphabet="abc\x1fdu0123456789", min_size=1, max_size=12), st.integers(0, 40)), max_size=12
)


@given(data=st.data(), refs=_refs, grown_from=st.sampled_from(["", "t\x1fu1", "x"]))
def test_a_recipe_reads_back_from_every_layout_a_store_wrote(
    data: st.DataObject, refs: list[tuple[str, int]], grown_from: str
) -> None:
    n = len(refs)
    ints = st.lists(st.integers(0, 10**9), min_size=n, max_size=n)
    recipe = Recipe(
        tuple(refs),
        tuple(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))),
        tuple(data.draw(ints)),
        tuple(data.draw(ints)),
        tuple(data.draw(st.lists(st.integers(UNKNOWN, 10**9), min_size=n, max_size=n))),
        grown_from,
    )
    now = Recipe.from_json(recipe.to_json())
    assert (now, now.sizes, now.message_sizes, now.grown_from) == (
        recipe,
        recipe.sizes,
        recipe.message_sizes,
        grown_from,
    )
    assert len(recipe.to_json()) == (6 if grown_from else 5)
    hint = Recipe.from_json(recipe.hint_json())
    assert (hint, hint.message_sizes) == (recipe, recipe.message_sizes)
    four = Recipe.from_json(recipe.to_json()[:4])  # written before message sizes were recorded
    assert (four, four.sizes, four.message_sizes) == (recipe, recipe.sizes, (UNKNOWN,) * n)
    three = Recipe.from_json(recipe.to_json()[:3])  # a read hint, or written before sizes were recorded
    assert (three, three.sizes, three.message_sizes) == (recipe, (0,) * n, (UNKNOWN,) * n)
    assert recipe.prefix(n // 2).message_sizes == recipe.message_sizes[: n // 2]
    assert recipe.prefix(n // 2).grown_from == ""
