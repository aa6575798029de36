"""Helpers for the command-line tests: run ``main(argv)`` capturing its output, or the real command."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from genkit_sessions.cli.main import main

NO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": None,
    "AWS_SECRET_ACCESS_KEY": None,
    "AWS_SESSION_TOKEN": None,
    "AWS_PROFILE": None,
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
    "AWS_CONFIG_FILE": "/nonexistent/config",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def env_without_credentials() -> dict[str, str]:
    """This process's environment with every AWS credential source removed."""
    env = dict(os.environ)
    for name, value in NO_CREDENTIALS.items():
        env.pop(name, None)
        if value is not None:
            env[name] = value
    return env


def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every AWS credential source from this process's environment for one test."""
    for name, value in NO_CREDENTIALS.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


def run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``main(argv)``: its exit status, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_command(*argv: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``genkit-sessions`` command, as a subprocess with no AWS credentials configured."""
    return subprocess.run(
        [sys.executable, "-m", "genkit_sessions.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
        env=env_without_credentials(),
        cwd=cwd,
    )


def table_name() -> str:
    """A fresh table name."""
    return f"cli-{uuid.uuid4().hex[:10]}"
