"""Every script in examples/ runs as written from outside the repository, its pytest file passes, and
the whole folder type-checks under ``mypy --strict``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("test_") and p.name != "dict_store.py")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the package as installed; the scripts as copied
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_examples_folder_has_what_a_framework_author_copies() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} >= {
        "async_server_turn.py",
        "client_managed.py",
        "dynamodb_local.py",
        "dict_store.py",
        "test_dict_store.py",
    }


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_script_runs_as_written(script: Path, tmp_path: Path) -> None:
    done = _run([sys.executable, str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), "an example says what it did"
    assert "Traceback" not in done.stderr


def test_the_store_authors_pytest_file_runs_the_suite_and_passes(tmp_path: Path) -> None:
    done = _run(
        [sys.executable, "-m", "pytest", str(EXAMPLES / "test_dict_store.py"), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout


def test_examples_pass_mypy_strict() -> None:
    checked = _run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(EXAMPLES)], cwd=ROOT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
