"""What a new user finds at the top of the repository: the license pyproject names, a changelog of the
version that is installed, and a package list that leaves no package out of the wheel."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import genkit_sessions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_the_full_apache_2_text_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert len(text.splitlines()) > 190


def test_changelog_starts_with_the_version_the_package_reports() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## (\S+)", changelog, flags=re.MULTILINE)
    assert first is not None
    assert first.group(1) == genkit_sessions.__version__ == PYPROJECT["project"]["version"]


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("genkit_sessions", "genkit_sessions_conformance")
        for init in (ROOT / top).rglob("__init__.py")
    }
    data = {"genkit_sessions_conformance.data", "genkit_sessions_conformance.data.cases"}
    assert listed == found | data
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"genkit_sessions_conformance.data": "conformance"}
    assert set(PYPROJECT["tool"]["mypy"]["packages"]) == {"genkit_sessions", "genkit_sessions_conformance"}
    assert (ROOT / "genkit_sessions_conformance" / "py.typed").exists()
