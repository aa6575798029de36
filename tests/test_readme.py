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
