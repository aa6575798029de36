"""``history_rules.window_of``, the bounded read every store's ``read_window`` answers with (H2): the newest
messages that fit both bounds, oldest first, and whether older ones were left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from genkit_sessions import Message
from genkit_sessions.stores.history_rules import message_bytes, window_of

messages = st.lists(
    st.builds(Message.of_text, st.sampled_from(["user", "model"]), st.text(max_size=40)), max_size=12
).map(tuple)
bounds = st.none() | st.integers(min_value=1, max_value=15)
byte_bounds = st.none() | st.integers(min_value=1, max_value=600)


def _reference(history: tuple[Message, ...], max_messages: int | None, max_bytes: int | None) -> int:
    """How many of the newest messages fit, by the rule as written: the longest suffix within both bounds."""
    best = 0
    for count in range(len(history) + 1):
        tail = history[len(history) - count :]
        if max_messages is not None and count > max_messages:
            break
        if max_bytes is not None and sum(message_bytes(m) for m in tail) > max_bytes:
            break
        best = count
    return best


@given(messages, bounds, byte_bounds, st.booleans())
def test_a_window_is_the_longest_newest_run_within_both_bounds(
    history: tuple[Message, ...], max_messages: int | None, max_bytes: int | None, older_left_out: bool
) -> None:
    window = window_of(history, max_messages, max_bytes, older_left_out)
    count = _reference(history, max_messages, max_bytes)
    assert window.messages == history[len(history) - count :]
    assert window.truncated == (older_left_out or count < len(history))


def test_a_newest_message_over_the_byte_bound_leaves_an_empty_window() -> None:
    history = (Message.of_text("user", "short"), Message.of_text("model", "x" * 200))
    window = window_of(history, None, message_bytes(history[-1]) - 1)
    assert window.messages == () and window.truncated


def test_a_window_exactly_at_the_byte_bound_keeps_every_message_that_fits() -> None:
    history = (Message.of_text("user", "a" * 30), Message.of_text("model", "b"), Message.of_text("user", "cc"))
    exact = message_bytes(history[1]) + message_bytes(history[2])
    assert window_of(history, None, exact).messages == history[1:]
    assert window_of(history, None, exact - 1).messages == history[2:]
