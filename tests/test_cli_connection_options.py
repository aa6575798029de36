"""``--endpoint-url`` and ``--region`` that cannot name an endpoint: every command taking them answers
INVALID_ARGUMENT naming the option and the value, exit status 1, before it tries to reach DynamoDB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import no_credentials, run, run_command

COMMANDS = [
    ["sessions", "list", "--table", "t"],
    ["sessions", "list", "--table", "t", "--principal", "ana"],
    ["show", "snap-1", "--table", "t"],
    ["tree", "sess-1", "--table", "t"],
    ["export", "--all", "--table", "t"],
    ["import", "SOURCE", "--table", "t"],
    ["resolve", "--init", "{}", "--table", "t"],
    ["dynamodb", "create-table", "--table", "t"],
    ["dynamodb", "doctor", "--table", "t"],
    ["demo", "--store", "dynamodb"],
    ["demo"],
]


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_credentials(monkeypatch)


def with_source(argv: list[str], tmp_path: Path) -> list[str]:
    source = tmp_path / "empty.jsonl"
    source.write_text("")
    return [str(source) if a == "SOURCE" else a for a in argv]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_an_endpoint_url_that_is_not_a_url_is_invalid_argument_for_every_command(
    capsys: Any, tmp_path: Path, argv: list[str]
) -> None:
    code, out, err = run(capsys, *with_source(argv, tmp_path), "--endpoint-url", "notaurl")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "INVALID_ARGUMENT: --endpoint-url 'notaurl' is not an endpoint URL: it does not start with http:// or "
        "https://; pass one such as http://127.0.0.1:8000 (DynamoDB Local, moto), or leave --endpoint-url out "
        "to reach AWS"
    ]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "it does not start with http:// or https://"),
        ("localhost:8000", "it does not start with http:// or https://"),
        ("ftp://127.0.0.1:8000", "it does not start with http:// or https://"),
        ("http://", "it names no host"),
        ("http://a b:8000", "its host is not a valid host name"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:port", "Port could not be cast to integer value"),
    ],
)
def test_a_malformed_endpoint_url_is_invalid_argument_saying_what_is_wrong(capsys: Any, url: str, problem: str) -> None:
    code, _, err = run(capsys, "dynamodb", "doctor", "--table", "t", "--endpoint-url", url)
    assert code == 1
    assert err.startswith(f"INVALID_ARGUMENT: --endpoint-url {url!r} is not an endpoint URL: {problem}")


@pytest.mark.parametrize("argv", [COMMANDS[2], COMMANDS[8]], ids=" ".join)
def test_a_region_that_is_not_a_region_name_is_invalid_argument_naming_it(capsys: Any, argv: list[str]) -> None:
    code, _, err = run(capsys, *argv, "--region", "us east 1")
    assert code == 1
    assert err.splitlines() == [
        "INVALID_ARGUMENT: --region 'us east 1' is not a region name; pass one such as us-east-1, or leave "
        "--region out to use the environment's (AWS_REGION, the profile), else us-east-1"
    ]


def test_a_bad_endpoint_url_as_a_real_command_prints_one_error_line_and_no_traceback() -> None:
    result = run_command("tree", "sess-1", "--table", "t", "--endpoint-url", "notaurl")
    assert result.returncode == 1 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        line for line in result.stderr.splitlines() if line.startswith("INVALID_ARGUMENT: --endpoint-url 'notaurl'")
    ]
