"""What an import or export refuses, and how: a source that is not UTF-8 (or is cut inside a character), a
snapshot id given twice, a path that cannot be read or written, and a line the store refuses. Each is a
status-carrying error naming the line, file or path at fault and what to do; the check pass writes nothing;
the CLI exits 1 with ``STATUS: message`` and no traceback."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions import GenkitError, InMemorySessionStore, SessionSnapshot, SessionState
from genkit_sessions.cli import transfer_cmd
from genkit_sessions.stores.transfer import check_source, import_snapshots
from tests.cli_helpers import run

STAMP = "2026-01-01T00:00:00Z"


def _line(snapshot_id: str, custom: Any = None, *, parent: str | None = None, text: str = "hi") -> str:
    snapshot: dict[str, Any] = {"snapshotId": snapshot_id, "sessionId": "sess", "createdAt": STAMP}
    if parent is not None:
        snapshot["parentId"] = parent
    snapshot["state"] = {"custom": custom, "messages": [{"role": "user", "content": [{"text": text}]}]}
    return json.dumps(snapshot, ensure_ascii=False)


def _write(tmp_path: Path, data: bytes) -> Path:
    source = tmp_path / "e.jsonl"
    source.write_bytes(data)
    return source


def _latin1(tmp_path: Path) -> Path:
    good = (_line("s0") + "\n" + _line("s1", parent="s0", text="héllo") + "\n").encode("utf-8")
    return _write(tmp_path, good.replace("é".encode(), b"\xe9"))


def _cut_inside_a_character(tmp_path: Path) -> Path:
    data = (_line("s0") + "\n" + _line("s1", parent="s0", text="héllo") + "\n").encode("utf-8")
    return _write(tmp_path, data[: data.index("é".encode()) + 1])


def _cli_on(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer_cmd, "open_dynamodb_store", lambda args: store)


def _import_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    return run(capsys, "import", *argv, "--table", "t")


# --- text that is not UTF-8 ------------------------------------------------------------------


def test_an_import_of_text_that_is_not_utf8_is_refused_naming_the_line_and_writes_nothing(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    source = _latin1(tmp_path)
    with pytest.raises(GenkitError) as caught:
        import_snapshots(store, source)
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert f"line 2 of {source}" in caught.value.message and "0xe9" in caught.value.message
    assert "not UTF-8" in caught.value.message and "convert it" in caught.value.message
    assert store.get_snapshot(snapshot_id="s0") is None


def test_an_import_cut_inside_a_multibyte_character_is_refused_as_cut_short(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    with pytest.raises(GenkitError) as caught:
        import_snapshots(store, _cut_inside_a_character(tmp_path))
    assert caught.value.status == "INVALID_ARGUMENT"
    assert "line 2" in caught.value.message and "cut short" in caught.value.message
    assert store.get_snapshot(snapshot_id="s0") is None


def test_a_filesessionstore_file_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "s0.json").write_bytes(_line("s0", text="é").encode("latin-1"))
    with pytest.raises(GenkitError) as caught:
        check_source(tmp_path)
    assert caught.value.status == "INVALID_ARGUMENT" and str(tmp_path / "s0.json") in caught.value.message


def test_the_cli_import_of_text_that_is_not_utf8_exits_1_with_a_status_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = InMemorySessionStore()
    _cli_on(store, monkeypatch)
    code, _, err = _import_cli(capsys, str(_latin1(tmp_path)))
    assert code == 1 and err.startswith("INVALID_ARGUMENT") and "Traceback" not in err
    assert store.get_snapshot(snapshot_id="s0") is None


def test_the_cli_import_from_stdin_judges_the_bytes_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stdin:
        buffer = _latin1(tmp_path).open("rb")

    _cli_on(InMemorySessionStore(), monkeypatch)
    monkeypatch.setattr("sys.stdin", Stdin())
    code, _, err = _import_cli(capsys, "-")
    Stdin.buffer.close()
    assert code == 1 and err.startswith("INVALID_ARGUMENT") and "line 2" in err and "not UTF-8" in err


# --- a snapshot id given twice ---------------------------------------------------------------


def test_an_import_giving_a_snapshot_id_twice_is_refused_naming_both_lines_before_writing(tmp_path: Path) -> None:
    source = _write(tmp_path, f"{_line('a', 1)}\n{_line('b', parent='a')}\n\n{_line('a', 2)}\n".encode())
    store = InMemorySessionStore()
    with pytest.raises(GenkitError) as caught:
        import_snapshots(store, source, batch_size=1)
    assert caught.value.status == "INVALID_ARGUMENT" and caught.value.reason == "INVALID_INPUT"
    assert f"line 4 of {source}" in caught.value.message and f"line 1 of {source}" in caught.value.message
    assert "'a'" in caught.value.message
    assert store.get_snapshot(snapshot_id="a") is None and store.get_snapshot(snapshot_id="b") is None


def test_a_dry_run_refuses_a_snapshot_id_given_twice_too(tmp_path: Path) -> None:
    source = _write(tmp_path, f"{_line('a', 1)}\n{_line('a', 1)}\n".encode())
    with pytest.raises(GenkitError, match="repeats snapshot id 'a'"):
        import_snapshots(InMemorySessionStore(), source, dry_run=True)


# --- paths that cannot be read or written ----------------------------------------------------


def test_an_export_into_a_missing_directory_exits_1_naming_the_directory_and_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = InMemorySessionStore()
    store.save_snapshot("s1", lambda cur: SessionSnapshot("s1", session_id="sess", state=SessionState(custom=1)))
    _cli_on(store, monkeypatch)
    target = tmp_path / "missing" / "x.jsonl"
    code, _, err = run(capsys, "export", "--session", "sess", "--output", str(target), "--table", "t")
    assert code == 1 and err.startswith("FAILED_PRECONDITION") and "Traceback" not in err
    assert str(tmp_path / "missing") in err and "create the directory" in err
    assert not (tmp_path / "missing").exists()


def test_an_export_that_fails_midway_leaves_no_partial_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing(InMemorySessionStore):
        def list_snapshots(self, session_id: str, **kwargs: Any) -> Sequence[SessionSnapshot]:
            raise GenkitError("UNAVAILABLE", "the table is away; try again")

    _cli_on(Failing(), monkeypatch)
    target = tmp_path / "x.jsonl"
    code, _, err = run(capsys, "export", "--session", "sess", "--output", str(target), "--table", "t")
    assert code == 1 and err.startswith("UNAVAILABLE")
    assert list(tmp_path.iterdir()) == []


def test_an_import_source_that_cannot_be_read_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "s0.json").mkdir()  # a directory where a snapshot file should be
    with pytest.raises(GenkitError) as caught:
        import_snapshots(InMemorySessionStore(), tmp_path)
    assert caught.value.status == "FAILED_PRECONDITION"
    assert str(tmp_path / "s0.json") in caught.value.message and "cannot read" in caught.value.message


# --- a line the store refuses ----------------------------------------------------------------


class _RefusesB(InMemorySessionStore):
    def restore_snapshots(self, snapshots: Sequence[SessionSnapshot], **kwargs: Any) -> Any:
        if any(s.snapshot_id == "b" for s in snapshots):
            raise GenkitError("INVALID_ARGUMENT", "snapshot 'b' is too large", details={"snapshotId": "b"})
        return super().restore_snapshots(snapshots, **kwargs)


@pytest.mark.parametrize("batch_size", [1, 10])
def test_a_line_the_store_refuses_is_named_in_the_error(tmp_path: Path, batch_size: int) -> None:
    source = _write(tmp_path, f"{_line('a')}\n{_line('b', parent='a')}\n".encode())
    store = _RefusesB()
    with pytest.raises(GenkitError) as caught:
        import_snapshots(store, source, batch_size=batch_size)
    assert caught.value.status == "INVALID_ARGUMENT"
    assert f"line 2 of {source}" in caught.value.message and "too large" in caught.value.message
    assert store.get_snapshot(snapshot_id="b") is None


class _RefusesBig(InMemorySessionStore):
    """Refuses any snapshot whose custom state is "big", naming it only in its message (as a store's
    record-size refusal does)."""

    def restore_snapshots(self, snapshots: Sequence[SessionSnapshot], **kwargs: Any) -> Any:
        for s in snapshots:
            if s.state is not None and s.state.custom == "big":
                raise GenkitError("INVALID_ARGUMENT", f"snapshot {s.snapshot_id!r} is over the record limit")
        return super().restore_snapshots(snapshots, **kwargs)


def test_a_line_the_store_refuses_by_message_only_is_named_and_a_rerun_names_it_again(tmp_path: Path) -> None:
    lines = [_line("a"), _line("b", parent="a"), _line("c", "big", parent="b"), _line("d", parent="c")]
    source = _write(tmp_path, ("\n".join(lines) + "\n").encode())
    store = _RefusesBig()
    for _ in range(2):  # the second run leaves a and b alone, and stops at c again
        with pytest.raises(GenkitError) as caught:
            import_snapshots(store, source, batch_size=10)
        assert caught.value.message.startswith(f"line 3 of {source}: the store refused it")
    assert store.get_snapshot(snapshot_id="d") is None
