"""Every Python block of the README runs as written, type-checks under ``mypy --strict``, and the
framework examples do what the prose around them says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import GenkitError

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[int, str]]:
    """(line number, code) of each Python block, in order."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def _block_containing(marker: str) -> str:
    found = [code for _, code in _blocks() if marker in code]
    assert len(found) == 1, f"expected one README block containing {marker!r}, found {len(found)}"
    return found[0]


def _run(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_block"}
    exec(compile(code, str(README), "exec"), namespace)
    return namespace


@pytest.mark.parametrize(("line", "code"), _blocks(), ids=[f"line-{line}" for line, _ in _blocks()])
def test_every_readme_python_block_runs_as_written(line: int, code: str) -> None:
    _run(code)


def test_readme_blocks_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for line, code in _blocks():
        path = tmp_path / f"readme_line_{line}.py"
        path.write_text(code, encoding="utf-8")
        files.append(str(path))
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_readme_turn_example_resumes_a_session_and_refuses_a_typo() -> None:
    namespace = _run(_block_containing("def run_turn("))
    run_turn = namespace["run_turn"]
    first = run_turn({"sessionId": "chat-1"}, "hello")
    second = run_turn({"sessionId": "chat-1"}, "again")
    assert first["sessionId"] == second["sessionId"] == "chat-1"
    assert first["snapshotId"] != second["snapshotId"]
    parent = namespace["store"].get_snapshot(snapshot_id=second["snapshotId"], context={"tenant": "acme"})
    assert parent.parent_id == first["snapshotId"]
    with pytest.raises(GenkitError, match="sessionID"):
        run_turn({"sessionID": "chat-1"}, "typo")


def test_readme_client_managed_turn_hydrates_from_the_json_a_client_sends() -> None:
    namespace = _run(_block_containing("def client_turn("))
    reply = namespace["reply"]
    assert reply["sessionId"] == "chat-7"
    assert [m["content"][0]["text"] for m in reply["state"]["messages"]] == ["hi", "and again", "..."]
    again = namespace["client_turn"]({"state": reply["state"]}, "third")
    assert len(again["state"]["messages"]) == 5


def test_readme_session_service_example_runs_and_keeps_the_full_history() -> None:
    namespace = _run(_block_containing("service.compact("))
    assert len(namespace["active"]) == 11 and namespace["active"][0].text == "(summary of 50 messages)"
    assert len(namespace["everything"]) == 61
    assert [r.id for r in namespace["page"].records] == [namespace["record"].id]
    service = namespace["service"]
    assert [m.text for m in service.get_messages(namespace["fork"].id)] == [m.text for m in namespace["everything"]]


def test_readme_history_example_returns_the_complete_interactions() -> None:
    namespace = _run(_block_containing("service.add_interaction("))
    assert [m.role for m in namespace["messages"]] == ["user", "model", "tool", "model"]
    assert namespace["window"].truncated is False


def test_readme_conformance_block_is_a_store_authors_test_that_passes() -> None:
    namespace = _run(_block_containing("conformance.run_suite("))
    namespace["test_my_store_conforms"]()
    assert callable(namespace["test_case"])


def test_readme_chat_memory_loop_runs_and_writes_only_what_is_new() -> None:
    namespace = _run(_block_containing("def chat_turn("))
    seen: list[int] = []

    def model(messages: list[Any]) -> str:
        seen.append(len(messages))
        return f"reply {len(messages)}"

    assert namespace["chat_turn"]("m-1", "hi", model) == "reply 1"
    assert namespace["chat_turn"]("m-1", "again", model) == "reply 3"
    assert [m.text for m in namespace["memory"].get_messages("m-1")] == ["hi", "reply 1", "again", "reply 3"]
