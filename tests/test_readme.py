"""The README's framework example runs as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import GenkitError

README = Path(__file__).resolve().parents[1] / "README.md"


def _first_python_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\n") + len("```python\n")
    return text[start : text.index("```", start)]


def test_readme_turn_example_resumes_a_session_and_refuses_a_typo() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_first_python_block(), str(README), "exec"), namespace)
    run_turn = namespace["run_turn"]
    first = run_turn({"sessionId": "chat-1"}, "hello")
    second = run_turn({"sessionId": "chat-1"}, "again")
    assert first["sessionId"] == second["sessionId"] == "chat-1"
    assert first["snapshotId"] != second["snapshotId"]
    parent = namespace["store"].get_snapshot(snapshot_id=second["snapshotId"], context={"tenant": "acme"})
    assert parent.parent_id == first["snapshotId"]
    with pytest.raises(GenkitError, match="sessionID"):
        run_turn({"sessionID": "chat-1"}, "typo")


def test_readme_session_service_example_runs_and_keeps_the_full_history() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\nfrom datetime import timedelta") + len("```python\n")
    namespace: dict[str, Any] = {}
    exec(compile(text[start : text.index("```", start)], str(README), "exec"), namespace)
    assert len(namespace["active"]) == 11 and namespace["active"][0].text == "(summary of 50 messages)"
    assert len(namespace["everything"]) == 61
    assert [r.id for r in namespace["page"].records] == [namespace["record"].id]
    service = namespace["service"]
    assert [m.text for m in service.get_messages(namespace["fork"].id)] == [m.text for m in namespace["everything"]]


def test_readme_chat_memory_loop_runs_and_writes_only_what_is_new() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("```python\nfrom genkit_sessions import AsyncChatMemoryStore") + len("```python\n")
    namespace: dict[str, Any] = {}
    exec(compile(text[start : text.index("```", start)], str(README), "exec"), namespace)
    seen: list[int] = []

    def model(messages: list[Any]) -> str:
        seen.append(len(messages))
        return f"reply {len(messages)}"

    assert namespace["chat_turn"]("m-1", "hi", model) == "reply 1"
    assert namespace["chat_turn"]("m-1", "again", model) == "reply 3"
    assert [m.text for m in namespace["memory"].get_messages("m-1")] == ["hi", "reply 1", "again", "reply 3"]
