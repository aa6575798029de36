"""``tree --output`` and ``export --output`` to a path they cannot write: FAILED_PRECONDITION naming the path
and what to do, exit status 1, no traceback, and no file left behind."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import boto3
import pytest

from genkit_sessions.cli.demo import run_demo
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from tests.cli_helpers import no_credentials, run, run_command, table_name
from tests.dynamodb_backends import CREDENTIALS, server_endpoint


@pytest.fixture(scope="module")
def session() -> tuple[list[str], str]:
    """The table arguments and the id of a session in it."""
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=server_endpoint(), **CREDENTIALS)
    name = table_name()
    create_table(client, name)
    tree = run_demo(DynamoDBSessionStore(name, client), io.StringIO())
    return ["--table", name, "--endpoint-url", server_endpoint()], tree[0].session_id or ""


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def fake_dot(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``dot`` on the PATH that writes its stdin (the DOT drawing) to stdout, as Graphviz does with -Tpng."""
    fake = folder / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tpng" ] && [ "$#" = 1 ] || exit 3\ncat\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_tree_output_into_a_missing_directory_is_failed_precondition_naming_it(
    session: Any, capsys: Any, tmp_path: Path
) -> None:
    table, session_id = session
    target = tmp_path / "missing" / "tree.txt"
    code, out, err = run(capsys, "tree", session_id, *table, "--output", str(target))
    assert code == 1 and out == ""
    assert err.splitlines()[-1].startswith(f"FAILED_PRECONDITION: cannot write the text drawing to {str(target)!r}")
    assert f"mkdir -p {tmp_path / 'missing'}" in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("where", ["the directory", "dot", "empty"])
def test_tree_output_to_a_directory_is_failed_precondition_saying_to_name_a_file(
    session: Any, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    table, session_id = session
    monkeypatch.chdir(tmp_path)
    target = {"the directory": str(tmp_path), "dot": ".", "empty": ""}[where]
    code, _, err = run(capsys, "tree", session_id, *table, "--output", target)
    assert code == 1 and err.splitlines()[-1].startswith("FAILED_PRECONDITION: cannot write the text drawing to ")
    assert "Is a directory; name a file in it" in err
    assert list(tmp_path.iterdir()) == []


def test_tree_output_under_a_regular_file_is_failed_precondition_naming_the_path(
    session: Any, capsys: Any, tmp_path: Path
) -> None:
    table, session_id = session
    (tmp_path / "file").write_text("x")
    target = tmp_path / "file" / "tree.txt"
    code, _, err = run(capsys, "tree", session_id, *table, "--format", "mermaid", "--output", str(target))
    assert code == 1 and err.splitlines()[-1].startswith(
        f"FAILED_PRECONDITION: cannot write the mermaid drawing to {str(target)!r}"
    )
    assert "not a directory" in err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a file no write to succeeds on")
def test_tree_output_to_a_file_that_refuses_writes_is_failed_precondition_naming_it(session: Any, capsys: Any) -> None:
    table, session_id = session
    code, _, err = run(capsys, "tree", session_id, *table, "--output", "/dev/full")
    assert code == 1 and err.splitlines()[-1].startswith(
        "FAILED_PRECONDITION: cannot write the text drawing to '/dev/full'"
    )
    assert "permissions and the free space" in err


def test_tree_image_into_a_missing_directory_is_failed_precondition_naming_it(
    session: Any, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, session_id = session
    fake_dot(tmp_path, monkeypatch)
    target = tmp_path / "missing" / "tree.png"
    code, _, err = run(capsys, "tree", session_id, *table, "--output", str(target))
    assert code == 1 and err.splitlines()[-1].startswith(
        f"FAILED_PRECONDITION: cannot write the image to {str(target)!r}"
    )
    assert "create the directory" in err


def test_tree_to_an_unwritable_path_as_a_real_command_prints_one_error_line_and_no_traceback(
    session: Any, tmp_path: Path
) -> None:
    table, session_id = session
    result = run_command("tree", session_id, *table, "--output", str(tmp_path / "no" / "tree.txt"))
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("FAILED_PRECONDITION: cannot write the text drawing to ")


@pytest.mark.parametrize("target", [".", "/", ""])
def test_export_output_naming_a_directory_is_failed_precondition_not_a_crash(
    session: Any, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    table, _ = session
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "export", "--all", *table, "--output", target)
    assert code == 1 and err.splitlines()[-1].startswith("FAILED_PRECONDITION: cannot write the export to ")
    assert "Is a directory; name a file in it" in err
    assert list(tmp_path.iterdir()) == []
