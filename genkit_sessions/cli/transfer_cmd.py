"""``genkit-sessions export`` and ``import``: session trees as JSON Lines of Genkit wire snapshots.

``export`` writes a session, a principal's sessions, or a whole tenant (found
with the paginated head Scan of ``genkit_sessions.dynamodb.scan``, sorted by
session id so that the same data always exports to the same bytes). ``import``
reads such a file, stdin, or a directory Genkit's ``FileSessionStore`` wrote,
checks every snapshot, then restores them (see ``genkit_sessions.stores.transfer``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from genkit_sessions.cli._command import (
    add_command,
    add_dynamodb_arguments,
    context_of,
    open_dynamodb_store,
    refuse_directory,
    suggest,
    target_options,
    tenant_of,
    unwritable,
)
from genkit_sessions.cli._progress import ProgressBar
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.stores.transfer import check_source, export_sessions, import_snapshots

__all__ = ["register", "tenant_session_ids"]


def register(subparsers: Any) -> None:
    """Add ``export`` and ``import``."""
    export = add_command(
        subparsers,
        "export",
        help="write sessions as JSON Lines of Genkit wire snapshots (a session, a principal's, or a whole tenant)",
        description="Write every snapshot of the chosen sessions, one Genkit wire JSON object per line, "
        "session by session, each in creation order. Memory stays bounded by the largest session "
        "(--all also keeps the tenant's session ids, to sort them). --all finds the tenant's sessions with a "
        "paginated Scan of the table. A progress bar goes to stderr when it is a terminal.",
        example="genkit-sessions export --table chats --all --output chats.jsonl\n"
        "genkit-sessions export --table chats --principal ana | gzip > ana.jsonl.gz",
    )
    chosen = export.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--session", action="append", metavar="SESSION_ID", help="a session (repeatable)")
    chosen.add_argument("--principal", help="every session whose metadata names this principal")
    chosen.add_argument("--all", action="store_true", help="every session of the tenant (a Scan of the table)")
    export.add_argument("--output", type=Path, default=None, help="write here instead of stdout")
    add_dynamodb_arguments(export)
    export.set_defaults(func=_export)

    imported = add_command(
        subparsers,
        "import",
        help="restore a JSON Lines export, or a Genkit FileSessionStore directory, into a table",
        description="Check every snapshot of SOURCE (a JSON Lines export, '-' for stdin, or a directory of "
        "<snapshotId>.json files as Genkit's FileSessionStore writes them) and write nothing if one is bad; "
        "then restore them in batches. Snapshots the table already holds exactly as given are left alone, "
        "so running the same import twice writes nothing the second time.",
        example="genkit-sessions import chats.jsonl --table chats-copy\n"
        "genkit-sessions import ./genkit-sessions-dir --table chats --dry-run",
    )
    imported.add_argument("source", metavar="SOURCE", help="a .jsonl file, '-' for stdin, or a directory")
    imported.add_argument("--batch-size", type=int, default=100, help="snapshots per restore (default 100)")
    imported.add_argument("--dry-run", action="store_true", help="check every snapshot and write nothing")
    imported.add_argument("--json", action="store_true", help="print the counts as JSON")
    add_dynamodb_arguments(imported)
    imported.set_defaults(func=_import)


def tenant_session_ids(store: Any, tenant: str) -> list[str]:
    """Every session id of ``tenant`` in ``store``'s table (paginated Scan of heads), sorted."""
    from genkit_sessions.dynamodb.scan import scan_session_ids

    ids: list[str] = []
    token: str | None = None
    while True:
        page = scan_session_ids(store.client, store.table_name, tenant, limit=1000, page_token=token)
        ids += page.session_ids
        token = page.next_page_token
        if token is None:
            return sorted(set(ids))


def _principal_ids(store: Any, principal: str, context: Any) -> Iterator[str]:
    from genkit_sessions.service import SessionService

    for record in SessionService(store).iter_by_metadata("principal", principal, context=context):
        yield record.id


@contextlib.contextmanager
def _output(path: Path | None) -> Iterator[TextIO]:
    """stdout, or ``path`` written through ``<path>.partial`` so only a finished export takes the name;
    FAILED_PRECONDITION naming the path when it cannot be written."""
    if path is None:
        yield sys.stdout
        return
    refuse_directory(path, "the export")
    partial = path.with_name(path.name + ".partial")
    try:
        out = partial.open("w", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise unwritable(path, exc, "the export") from None
    try:
        with out:
            yield out
        partial.replace(path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise unwritable(path, exc, "the export") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _export(args: argparse.Namespace) -> int:
    store = open_dynamodb_store(args)
    context = context_of(args)
    total: int | None = None
    if args.session:
        ids: Any = list(dict.fromkeys(args.session))
        total = len(ids)
    elif args.principal is not None:
        ids = _principal_ids(store, args.principal, context)
    else:
        ids = tenant_session_ids(store, tenant_of(args))
        total = len(ids)
    bar = ProgressBar("sessions", total)
    with _output(args.output) as out:
        counts = export_sessions(store, ids, out, context=context, progress=lambda _: bar(1))
    bar.close()
    if args.session and counts.sessions < len(ids):
        missing = len(ids) - counts.sessions
        raise GenkitError(
            Status.NOT_FOUND,
            f"{missing} of the {len(ids)} sessions named have no snapshots in table {args.table!r} "
            f"(tenant {tenant_of(args)!r}); the others were exported; "
            f"check the ids with `{suggest('sessions', 'list', *target_options(args))}`",
        )
    where = f" to {args.output}" if args.output else ""
    print(f"exported {counts.snapshots} snapshots of {counts.sessions} sessions{where}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _source(name: str) -> Iterator[Path]:
    if name != "-":
        yield Path(name)
        return
    with tempfile.TemporaryDirectory() as folder:  # stdin is read twice (check, then write): keep a copy
        spooled = Path(folder) / "stdin.jsonl"
        with spooled.open("wb") as copy:
            raw = getattr(sys.stdin, "buffer", None)  # bytes as sent: the import judges their encoding
            if raw is not None:
                shutil.copyfileobj(raw, copy)
            else:
                copy.write(sys.stdin.read().encode("utf-8", "surrogateescape"))
        yield spooled


def _import(args: argparse.Namespace) -> int:
    store = open_dynamodb_store(args)
    with _source(args.source) as source:
        checking = ProgressBar("snapshots checked")
        checked = check_source(source, progress=checking)
        checking.close()
        bar = ProgressBar("snapshots imported", checked[0])
        counts = import_snapshots(
            store,
            source,
            context=context_of(args),
            batch_size=args.batch_size,
            progress=bar,
            dry_run=args.dry_run,
            checked=checked,
        )
        bar.close()
    if args.json:
        print(
            json.dumps(
                {
                    "snapshots": counts.snapshots,
                    "sessions": counts.sessions,
                    "written": counts.written,
                    "unchanged": counts.unchanged,
                    "dryRun": args.dry_run,
                }
            )
        )
    elif args.dry_run:
        print(f"checked {counts.snapshots} snapshots of {counts.sessions} sessions: all valid; wrote nothing (dry run)")
    else:
        print(
            f"imported {counts.snapshots} snapshots of {counts.sessions} sessions: "
            f"{counts.written} written, {counts.unchanged} already present"
        )
    return 0
