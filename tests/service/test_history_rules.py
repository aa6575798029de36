"""History that never arrives incomplete (contract section 7, H1-H4) and the message-store facade (section 8,
M1-M4), on every store: memory, DynamoDB in-process and on a moto server over HTTP."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import (
    AsyncChatMemoryStore,
    ChatMemoryStore,
    DataPart,
    GenkitError,
    InMemorySessionStore,
    KeepLastStrategy,
    Media,
    MediaPart,
    Message,
    MessageCountTrigger,
    Role,
    SessionService,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
)
from tests.conftest import StoreFactory


def user(text: str) -> Message:
    return Message(role=Role.USER, content=(TextPart(text),))


def model(text: str) -> Message:
    return Message(role=Role.MODEL, content=(TextPart(text),))


def texts(messages: Any) -> list[str]:
    return [m.text for m in messages]


@pytest.fixture
def service(make_store: StoreFactory) -> SessionService:
    return SessionService(make_store())


def _chat(service: SessionService, session_id: str, turns: int) -> None:
    for n in range(turns):
        service.add_interaction(session_id, user(f"u{n}"), [model(f"m{n}")])


# --- H1 add_interaction ------------------------------------------------------------------------


def test_h1_a_multimodal_user_message_and_its_answers_are_one_completed_snapshot(service: SessionService) -> None:
    photo = Message(
        role=Role.USER,
        content=(TextPart("what is this?"), MediaPart(Media(url="https://x.test/cat.png", content_type="image/png"))),
    )
    data = Message(role=Role.USER, content=(DataPart({"lat": 38.7, "lon": -9.1}),))
    result = service.add_interaction("s", photo, [model("a cat"), data])
    assert result.ok and result.version == 1 and result.snapshot is not None
    assert result.snapshot.effective_status == "completed"
    stored = service.get_active_messages("s")
    assert [m.content for m in stored] == [photo.content, model("a cat").content, data.content]


def test_h1_a_partial_interaction_completes_the_previous_tool_request(service: SessionService) -> None:
    call = Message(role=Role.MODEL, content=(ToolRequestPart(ToolRequest(name="weather", ref="1", input={})),))
    service.add_interaction("s", user("weather?"), [call])
    answer = Message(role=Role.TOOL, content=(ToolResponsePart(ToolResponse(name="weather", ref="1", output=21)),))
    result = service.add_interaction("s", None, [answer, model("21 degrees")])
    assert result.ok and result.version == 2
    assert [m.role for m in service.get_active_messages("s")] == [Role.USER, Role.MODEL, Role.TOOL, Role.MODEL]


def test_h1_a_user_message_whose_role_is_not_user_is_invalid_argument(service: SessionService) -> None:
    with pytest.raises(GenkitError) as raised:
        service.add_interaction("s", model("not a user"), [])
    assert raised.value.status == "INVALID_ARGUMENT"
    assert service.find_by_id("s") is None


# --- H2 read_window ----------------------------------------------------------------------------


def test_h2_a_window_is_the_newest_messages_oldest_first_and_says_it_truncated(service: SessionService) -> None:
    _chat(service, "s", 30)
    window = service.read_window("s", max_messages=5)
    assert texts(window.messages) == ["m27", "u28", "m28", "u29", "m29"] and window.truncated
    whole = service.read_window("s", max_messages=60)
    assert len(whole.messages) == 60 and not whole.truncated
    assert service.read_window("absent", max_messages=5).messages == ()


@pytest.mark.parametrize("turns", [10, 25, 50])
def test_h2_a_window_exactly_at_a_stored_page_boundary(service: SessionService, turns: int) -> None:
    _chat(service, "s", turns)  # on DynamoDB a level-2 page closes at 10 and 50 turns, a level-1 page at 25
    active = service.get_active_messages("s")
    for size in (1, 49, 50, 51):
        window = service.read_window("s", max_messages=size)
        assert window.messages == active[-size:] and window.truncated == (size < len(active))


def test_h2_a_byte_bound_keeps_only_whole_messages_that_fit(service: SessionService) -> None:
    _chat(service, "s", 10)
    window = service.read_window("s", max_bytes=200)
    assert 0 < len(window.messages) < 20 and window.truncated
    assert window.messages == service.get_active_messages("s")[-len(window.messages) :]


def test_h2_bounds_that_are_not_positive_ints_are_invalid_argument(service: SessionService) -> None:
    for bad in ({"max_messages": 0}, {"max_bytes": -1}, {"max_messages": "5"}):
        with pytest.raises(GenkitError) as raised:
            service.read_window("s", **bad)
        assert raised.value.status == "INVALID_ARGUMENT"


# --- H3 iter_history ---------------------------------------------------------------------------


def test_h3_the_stream_is_the_complete_history_in_chunks(service: SessionService) -> None:
    _chat(service, "s", 40)
    chunks = list(service.iter_history("s", chunk_messages=7))
    assert all(len(c) == 7 for c in chunks[:-1]) and 0 < len(chunks[-1]) <= 7
    assert tuple(m for c in chunks for m in c) == service.get_active_messages("s")


def test_h3_a_stream_racing_a_save_finishes_on_the_version_it_started_with(service: SessionService) -> None:
    _chat(service, "s", 40)
    before = service.get_active_messages("s")
    stream = service.iter_history("s", chunk_messages=10)
    first = next(stream)
    service.add_interaction("s", user("landed mid-stream"), [model("ok")])
    rest = [m for c in stream for m in c]
    assert (*first, *rest) == before


def test_h3_a_compacted_session_streams_its_active_and_full_histories(service: SessionService) -> None:
    _chat(service, "s", 12)
    service.compact("s", MessageCountTrigger(10), KeepLastStrategy(4, lambda m: "summary"))
    _chat(service, "s", 2)
    active = [m for c in service.iter_history("s", chunk_messages=3) for m in c]
    full = [m for c in service.iter_history("s", chunk_messages=3, full=True) for m in c]
    assert tuple(active) == service.get_active_messages("s") and texts(active)[0] == "summary"
    assert tuple(full) == service.get_messages("s") and len(full) == 24 + 1 + 4


def test_h3_a_stream_of_one_snapshot_by_id(service: SessionService) -> None:
    _chat(service, "s", 5)
    third = service.store.list_snapshots("s")[2]
    streamed = [m for c in service.iter_history(snapshot_id=third.snapshot_id, chunk_messages=4) for m in c]
    assert tuple(streamed) == third.state.messages  # type: ignore[union-attr]


# --- H4 get_history ----------------------------------------------------------------------------


def test_h4_get_history_is_complete_when_the_window_would_truncate(service: SessionService) -> None:
    _chat(service, "s", 30)
    assert service.get_history("s", max_messages=10) == service.get_active_messages("s")
    assert service.history_fallbacks == 1
    assert service.get_history("s", max_messages=100) == service.get_active_messages("s")
    assert service.history_fallbacks == 1


# --- M1-M4 the message store -----------------------------------------------------------------


def test_m1_unknown_memory_ids_have_an_empty_list(make_store: StoreFactory) -> None:
    memory = ChatMemoryStore(make_store())
    assert memory.get_messages("never-seen") == []


def test_m2_update_replaces_the_messages_and_m3_delete_removes_them(make_store: StoreFactory) -> None:
    store = make_store()
    memory = ChatMemoryStore(store)
    memory.update_messages("chat", [user("hi"), model("hello")])
    memory.update_messages("chat", [user("hi"), model("hello"), user("more"), model("sure")])
    assert texts(memory.get_messages("chat")) == ["hi", "hello", "more", "sure"]
    memory.update_messages("chat", [user("rewritten")])  # not a prefix: the leaf holds exactly these
    assert texts(memory.get_messages("chat")) == ["rewritten"]
    assert len(store.list_snapshots("chat")) == 3
    memory.delete_messages("chat")
    assert memory.get_messages("chat") == [] and store.list_snapshots("chat") == []


def test_m4_the_async_memory_runs_on_the_non_blocking_face(make_store: StoreFactory) -> None:
    store = make_store()

    async def chat_loop() -> list[str]:
        memory = AsyncChatMemoryStore(store.aio)
        messages = await memory.get_messages("loop")
        for question in ("one", "two"):
            messages = [*messages, user(question), model(f"answer {question}")]
            await memory.update_messages("loop", messages)
        return texts(await memory.get_messages("loop"))

    assert asyncio.run(chat_loop()) == ["one", "answer one", "two", "answer two"]


class _BlockingOnly:
    """A blocking store with no async face of its own (as a user's own store might be)."""

    def __init__(self) -> None:
        self._inner = InMemorySessionStore()

    def __getattr__(self, name: str) -> Any:
        if name == "aio":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_m4_a_blocking_store_fails_at_once_unless_an_executor_is_handed_over() -> None:
    with pytest.raises(GenkitError) as raised:
        AsyncChatMemoryStore(_BlockingOnly())
    assert (raised.value.status, raised.value.reason) == ("UNIMPLEMENTED", "ASYNC_NOT_SUPPORTED")
    assert "executor=" in raised.value.message
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        memory = AsyncChatMemoryStore(InMemorySessionStore(), executor=pool)

        async def use() -> list[Message]:
            await memory.update_messages("m", [user("x")])
            return await memory.get_messages("m")

        assert texts(asyncio.run(use())) == ["x"]


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.integers(0, 60), chunk=st.integers(1, 40), window=st.integers(1, 130), compact_at=st.integers(0, 60))
def test_any_stream_concatenates_to_the_history_and_any_window_is_a_suffix(
    make_store: StoreFactory, turns: int, chunk: int, window: int, compact_at: int
) -> None:
    service = SessionService(make_store())
    for n in range(turns):
        service.add_interaction("s", user(f"u{n}"), [model(f"m{n}")])
        if n == compact_at:
            service.compact("s", MessageCountTrigger(3), KeepLastStrategy(2, lambda m, n=n: f"summary {n}"))
    active = service.get_active_messages("s")
    assert tuple(m for c in service.iter_history("s", chunk_messages=chunk) for m in c) == active
    full = tuple(m for c in service.iter_history("s", chunk_messages=chunk, full=True) for m in c)
    assert full == service.get_messages("s")
    cut = service.read_window("s", max_messages=window)
    assert cut.messages == active[len(active) - len(cut.messages) :]
    assert len(cut.messages) == min(window, len(active)) and cut.truncated == (window < len(active))
