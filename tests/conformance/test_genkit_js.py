"""The Genkit JS conformance runner (``conformance/js``) runs and reports; it does not have to pass.

The test installs what the runner needs itself: ``npm ci`` in ``conformance/js`` when ``node_modules``
is missing or older than the lock file (so a fresh clone works and later runs skip the install). It
skips when ``node`` or ``npm`` is not installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parents[2] / "conformance" / "js"
RUNNER = JS_DIR / "runner.mjs"
LOCK_FILE = JS_DIR / "package-lock.json"
INSTALLED = JS_DIR / "node_modules" / ".package-lock.json"  # npm writes it on every install
BUILT_IN_STORES = ("memory", "file", "file-tenants")
COVERAGE_AREAS = ("resolver", "store", "ids", "wire")
_ROW = re.compile(r"^\| (\S+)\s+\|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|$")

NODE = shutil.which("node")
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None,
    reason="node and npm are not installed: the Genkit JS conformance runner needs Node 20 or newer",
)


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """One ``npm ci`` at a time, even across pytest-xdist workers."""
    path = Path(tempfile.gettempdir()) / "genkit-sessions-conformance-js.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _needs_install() -> bool:
    return not INSTALLED.exists() or LOCK_FILE.stat().st_mtime > INSTALLED.stat().st_mtime


@pytest.fixture(scope="module")
def installed() -> None:
    """``npm ci`` in conformance/js when node_modules is missing or the lock file is newer."""
    assert NPM is not None
    with _install_lock():
        if not _needs_install():
            return
        done = subprocess.run(
            [NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci failed in {JS_DIR}:\n{done.stdout}\n{done.stderr}")
        INSTALLED.touch()


def _run(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    assert NODE is not None
    started = time.perf_counter()
    done = subprocess.run(
        [NODE, str(RUNNER), *args],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return done, time.perf_counter() - started


def _summary_tables(stdout: str) -> dict[str, dict[str, tuple[int, int, int, int]]]:
    """Each store's per-area table from the printed report: store -> area -> (passed, failed, skipped, total)."""
    tables: dict[str, dict[str, tuple[int, int, int, int]]] = {}
    store = None
    for line in stdout.splitlines():
        header = re.match(r"^conformance: store (\S+), profile (\S+), (\d+) cases in [\d.]+ s$", line)
        if header:
            store = header[1]
            tables[store] = {}
            continue
        row = _ROW.match(line)
        if row and store is not None:
            passed, failed, skipped, total = (int(row[i]) for i in range(2, 6))
            tables[store][row[1]] = (passed, failed, skipped, total)
    return tables


def _check_report(report: dict[str, Any]) -> None:
    outcomes = {case["outcome"] for case in report["cases"]}
    assert outcomes <= {"passed", "failed", "skipped"}
    for case in report["cases"]:
        if case["outcome"] == "failed":
            assert case["message"].startswith(f"[{case['rules'][0]}] "), case
        if case["outcome"] == "skipped":
            assert case["message"], case
    counted = [c for c in report["cases"] if c["area"] in COVERAGE_AREAS]
    ran = sum(c["outcome"] != "skipped" for c in counted)
    assert report["coverage"]["total"] == len(counted)
    assert report["coverage"]["ran"] == ran
    assert report["coverage"]["covered"] >= 0.8 * len(counted), report["coverage"]


@pytest.mark.usefixtures("installed")
def test_runner_reports_every_built_in_store(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    markdown = tmp_path / "report.md"
    done, seconds = _run("--json", str(out), "--markdown", str(markdown))
    assert done.returncode in (0, 1), f"the runner crashed:\n{done.stdout}\n{done.stderr}"
    assert seconds < 60, f"the JS run took {seconds:.1f} s"
    sys.stdout.write(done.stdout)

    tables = _summary_tables(done.stdout)
    assert set(tables) == set(BUILT_IN_STORES)
    data = json.loads(out.read_text(encoding="utf-8"))
    reports = {r["store"]: r for r in data["reports"]}
    assert set(reports) == set(BUILT_IN_STORES)
    for store, table in tables.items():
        report = reports[store]
        _check_report(report)
        assert table["all"] == (
            report["summary"]["passed"],
            report["summary"]["failed"],
            report["summary"]["skipped"],
            len(report["cases"]),
        )
        assert sum(row[3] for area, row in table.items() if area != "all") == len(report["cases"])
        assert set(table) - {"all"} >= set(COVERAGE_AREAS)
    assert done.stdout.count("coverage (resolver, store, ids, wire): ") == len(BUILT_IN_STORES)
    assert (done.returncode == 0) == all(r["ok"] for r in reports.values())

    text = markdown.read_text(encoding="utf-8")
    assert "generated by node conformance/js/runner.mjs --markdown" in text
    for store in BUILT_IN_STORES:
        assert f"## Store `{store}`" in text


@pytest.mark.usefixtures("installed")
def test_runner_takes_a_store_module(tmp_path: Path) -> None:
    stores = (JS_DIR / "node_modules" / "@genkit-ai" / "ai" / "lib" / "session-stores.mjs").as_uri()
    module = tmp_path / "my_store.mjs"
    module.write_text(
        f"import {{ InMemorySessionStore }} from {json.dumps(stores)};\n"
        "export function makeStore() { return new InMemorySessionStore(); }\n",
        encoding="utf-8",
    )
    out = tmp_path / "report.json"
    done, _ = _run("--store", str(module), "--area", "resolver", "--json", str(out))
    assert done.returncode in (0, 1), f"the runner crashed:\n{done.stdout}\n{done.stderr}"
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["store"] == str(module)
    assert report["capabilities"]["restore"] is False  # the module exports no restore
    _check_report(report)
    assert {c["area"] for c in report["cases"]} == {"resolver"}
    assert any(c["outcome"] == "passed" for c in report["cases"])


@pytest.mark.usefixtures("installed")
def test_runner_refuses_an_unknown_store() -> None:
    done, _ = _run("--store", "no-such-store")
    assert done.returncode == 2
    assert "not a built-in store" in done.stderr
