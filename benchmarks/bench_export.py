"""Export and import of many snapshots on a local DynamoDB, through the CLI's own code, with a table.

For each size it writes a JSON Lines file of Genkit wire snapshots (sessions of ``--per-session``
snapshots, each a chat one turn longer than its parent), then runs, each in a fresh process so its
peak resident memory is its own:

- ``genkit-sessions import FILE --table T --endpoint-url URL`` (check every snapshot, then restore
  them in batches), and
- ``genkit-sessions export --all --table T --endpoint-url URL --output OUT`` (the tenant's heads by
  a paginated Scan, then each session's snapshots),

calling ``genkit_sessions.cli.main.main`` with those arguments. A botocore event hook on the default
session counts the DynamoDB calls by operation and records the largest BatchWriteItem (items) and
TransactWriteItems (actions, bytes) sent, which must stay within AWS's limits (25 items; 100 actions
and 4 MB). The export must come back byte-identical to the file imported.

The local DynamoDB is ``LocalDynamoDB(process=True, rollback="keyed")``: moto in its own process
behind the serialising proxy, with transactions that roll back by the items they name (stock moto
copies every table a transaction touches, which makes a big table's transactions slow).

    PYTHONPATH=. python benchmarks/bench_export.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import resource
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from genkit_sessions.model.types import Message, SessionSnapshot, SessionState
from genkit_sessions.stores.transfer import snapshot_line

AWS_BATCH_WRITE_ITEMS = 25
AWS_TRANSACTION_ACTIONS = 100
AWS_TRANSACTION_BYTES = 4 * 1024 * 1024


def write_source(path: Path, sessions: int, per_session: int) -> int:
    """Sessions sorted by id, each a chain of ``per_session`` snapshots in commit order: what an export
    of the same data writes, line for line. Returns the file's size in bytes."""
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for s in range(sessions):
            session_id = f"session-{s:07d}"
            messages: tuple[Message, ...] = ()
            parent: str | None = None
            for turn in range(per_session):
                messages += (
                    Message.of_text("user", f"question {turn} of {session_id}: what next?"),
                    Message.of_text("model", f"answer {turn}: the next step is step {turn + 1}."),
                )
                snapshot_id = f"{session_id}-{turn:03d}"
                second = s * per_session + turn
                snapshot = SessionSnapshot(
                    snapshot_id=snapshot_id,
                    session_id=session_id,
                    parent_id=parent,
                    status="completed",
                    created_at=f"2026-01-{1 + second // 86400:02d}T{second % 86400 // 3600:02d}:"
                    f"{second % 3600 // 60:02d}:{second % 60:02d}.000000Z",
                    state=SessionState(session_id=session_id, messages=messages),
                )
                out.write(snapshot_line(snapshot))
                out.write("\n")
                parent = snapshot_id
    return path.stat().st_size


def own_peak_rss_kib() -> int:
    """This process's peak resident memory in KiB since it started its program.

    Linux keeps ``getrusage``'s ``ru_maxrss`` across ``execve``, and a spawned child is forked from
    this benchmark first, so ``ru_maxrss`` reports at least the benchmark's own size at that moment
    (which grows as it writes and compares bigger files), not the command's. ``VmHWM`` belongs to the
    address space, which ``execve`` replaces: it is the command's own peak."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # elsewhere: the best there is


def _run_cli(argv: list[str]) -> dict[str, Any]:
    """In a fresh process: run the CLI with ``argv``, counting DynamoDB calls; the figures it measured."""
    import boto3

    from genkit_sessions.cli.main import main

    calls: Counter[str] = Counter()
    largest = {"batch_write_items": 0, "transaction_actions": 0, "transaction_bytes": 0}

    def on_call(params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        calls[name] += 1
        if name == "BatchWriteItem":
            items = sum(len(requests) for requests in params.get("RequestItems", {}).values())
            largest["batch_write_items"] = max(largest["batch_write_items"], items)
        elif name == "TransactWriteItems":
            actions = params.get("TransactItems", [])
            size = len(json.dumps(actions, default=lambda b: "x" * len(b)).encode())
            largest["transaction_actions"] = max(largest["transaction_actions"], len(actions))
            largest["transaction_bytes"] = max(largest["transaction_bytes"], size)

    boto3.setup_default_session()
    boto3.DEFAULT_SESSION.events.register("provide-client-params.dynamodb", on_call)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as printed, contextlib.redirect_stderr(io.StringIO()) as errors:
        status = main(argv)
    seconds = time.perf_counter() - started
    return {
        "status": status,
        "seconds": seconds,
        "peak_rss_mib": own_peak_rss_kib() / 1024,
        "calls": dict(calls),
        "largest": largest,
        "stdout": printed.getvalue()[-500:],
        "stderr": errors.getvalue()[-500:],
    }


def run_in_fresh_process(argv: list[str]) -> dict[str, Any]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result: dict[str, Any] = pool.apply(_run_cli, (argv,))
    return result


def measure(size: int, per_session: int, endpoint: str, folder: Path) -> dict[str, Any]:
    from genkit_sessions.cli.main import main

    sessions = size // per_session
    source = folder / f"source-{size}.jsonl"
    exported = folder / f"export-{size}.jsonl"
    file_bytes = write_source(source, sessions, per_session)
    table = f"bench-export-{uuid.uuid4().hex[:8]}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["dynamodb", "create-table", "--table", table, "--endpoint-url", endpoint]) == 0
    where = ["--table", table, "--endpoint-url", endpoint]
    imported = run_in_fresh_process(["import", str(source), "--json", *where])
    if imported["status"] != 0:
        raise SystemExit(f"import failed: {imported['stderr']}")
    export = run_in_fresh_process(["export", "--all", "--output", str(exported), *where])
    if export["status"] != 0:
        raise SystemExit(f"export failed: {export['stderr']}")
    identical = source.read_bytes() == exported.read_bytes()
    counts = json.loads(imported["stdout"])
    return {
        "size": size,
        "sessions": sessions,
        "file_mib": file_bytes / 2**20,
        "import": imported,
        "export": export,
        "identical": identical,
        "counts": counts,
    }


def table(rows: list[dict[str, Any]]) -> str:
    headers = [
        "snapshots",
        "sessions",
        "file MiB",
        "import s",
        "import snap/s",
        "import peak RSS MiB",
        "export s",
        "export snap/s",
        "export peak RSS MiB",
        "export == import",
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    for r in rows:
        cells = [
            f"{r['size']:,}",
            f"{r['sessions']:,}",
            f"{r['file_mib']:.1f}",
            f"{r['import']['seconds']:.1f}",
            f"{r['size'] / r['import']['seconds']:,.0f}",
            f"{r['import']['peak_rss_mib']:.0f}",
            f"{r['export']['seconds']:.1f}",
            f"{r['size'] / r['export']['seconds']:,.0f}",
            f"{r['export']['peak_rss_mib']:.0f}",
            "byte-identical" if r["identical"] else "DIFFERENT",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def call_table(rows: list[dict[str, Any]]) -> str:
    operations = sorted({op for r in rows for phase in ("import", "export") for op in r[phase]["calls"]})
    headers = ["snapshots", "phase", *operations, "largest BatchWriteItem", "largest transaction"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    for r in rows:
        for phase in ("import", "export"):
            largest = r[phase]["largest"]
            cells = [f"{r['size']:,}", phase, *(f"{r[phase]['calls'].get(op, 0):,}" for op in operations)]
            cells.append(f"{largest['batch_write_items']} items (AWS: {AWS_BATCH_WRITE_ITEMS})")
            cells.append(
                f"{largest['transaction_actions']} actions, {largest['transaction_bytes'] / 1024:,.0f} KiB "
                f"(AWS: {AWS_TRANSACTION_ACTIONS}, {AWS_TRANSACTION_BYTES // 2**20} MiB)"
            )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="snapshots per run")
    parser.add_argument("--per-session", type=int, default=10, help="snapshots per session (default 10)")
    args = parser.parse_args()
    from genkit_sessions.dynamodb.local import LocalDynamoDB

    rows = []
    with LocalDynamoDB(process=True, rollback="keyed") as ddb, tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            print(f"measuring {size:,} snapshots ...", file=sys.stderr, flush=True)
            row = measure(size, args.per_session, ddb.endpoint_url, Path(folder))
            rows.append(row)
            print(f"  import counts: {row['counts']}", file=sys.stderr, flush=True)
            print(table([row]), file=sys.stderr, flush=True)  # each size as soon as it is measured
            print(call_table([row]), file=sys.stderr, flush=True)
    print(table(rows))
    print()
    print(call_table(rows))
    over = [
        r
        for r in rows
        for phase in ("import", "export")
        if r[phase]["largest"]["batch_write_items"] > AWS_BATCH_WRITE_ITEMS
        or r[phase]["largest"]["transaction_actions"] > AWS_TRANSACTION_ACTIONS
        or r[phase]["largest"]["transaction_bytes"] > AWS_TRANSACTION_BYTES
    ]
    print()
    print("every batch and transaction within AWS's limits" if not over else "OVER AWS'S LIMITS")
    return 0 if not over and all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
