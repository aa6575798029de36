"""scripts/_venv.sh (behind scripts/demo and scripts/test): it says what it installs, keeps pip's output
out of the terminal, and makes .venv again when PYTHON names another interpreter.

Each test runs the real script in a scratch copy of the repository's layout, with pip kept off the
network and a pyproject.toml it refuses, so pip fails at once: what is checked is everything the script
does around pip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OTHER_PYTHON = next(
    (
        p
        for p in ("/usr/bin/python3.12", "/usr/bin/python3.11", "/usr/bin/python3.10", "/usr/bin/python3.13")
        if Path(p).exists() and os.path.realpath(p) != os.path.realpath(sys.executable)
    ),
    None,
)


def _scratch(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "_venv.sh", tmp_path / "scripts" / "_venv.sh")
    (tmp_path / "pyproject.toml").write_text("this is not TOML [\n", encoding="utf-8")  # pip fails fast
    return tmp_path


def _source(root: Path, python: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"  # no download: pip fails at its first step, the script's handling is what counts
    if python is not None:
        env["PYTHON"] = python
    return subprocess.run(
        ["bash", "-c", 'source scripts/_venv.sh embedded && echo "ready: $(command -v python)"'],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_first_run_says_it_installs_and_how_long_and_keeps_pip_output_in_a_log(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    done = _source(root, sys.executable)
    assert done.returncode != 0  # the scratch pyproject.toml is refused
    assert "scripts: making .venv with" in done.stderr
    assert "scripts: installing the project and an embedded DynamoDB (moto) into .venv" in done.stderr
    assert "minutes" in done.stderr
    assert "scripts: the install failed; pip said:" in done.stderr and "install.log" in done.stderr
    assert (root / ".venv" / "install.log").read_text(encoding="utf-8").strip()
    assert "[notice]" not in done.stderr  # pip's upgrade banner stays in the log


def test_an_installed_venv_starts_at_once_and_silently(tmp_path: Path) -> None:
    root = _scratch(tmp_path)
    _source(root, sys.executable)
    (root / ".venv" / ".installed-embedded").touch()
    done = _source(root, None)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.strip() == f"ready: {root / '.venv' / 'bin' / 'python'}"


@pytest.mark.skipif(OTHER_PYTHON is None, reason="needs a second Python 3.10+ interpreter on this machine")
def test_python_naming_another_interpreter_makes_the_venv_again(tmp_path: Path) -> None:
    assert OTHER_PYTHON is not None
    root = _scratch(tmp_path)
    _source(root, sys.executable)
    (root / ".venv" / ".installed-embedded").touch()
    first = (root / ".venv" / ".made-with").read_text(encoding="utf-8")
    done = _source(root, OTHER_PYTHON)
    assert "PYTHON names" in done.stderr and "making it again" in done.stderr
    second = (root / ".venv" / ".made-with").read_text(encoding="utf-8")
    assert second != first and second.startswith(os.path.realpath(OTHER_PYTHON))
    assert not (root / ".venv" / ".installed-embedded").exists()  # the new .venv installs afresh
