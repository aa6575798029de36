"""``genkit-sessions sessions list``, ``show SNAPSHOT_ID`` and ``tree SESSION_ID``: look at what a table holds.

``sessions list`` finds sessions by principal, or by any indexed metadata key,
through :class:`~genkit_sessions.SessionService`; without a filter it lists the
tenant's sessions with a paginated Scan (see ``genkit_sessions.dynamodb.scan``).
``show`` prints one snapshot as Genkit wire JSON or as a summary; ``tree`` draws
a session's snapshots as text, Mermaid or Graphviz DOT, or as an SVG/PNG image
through Graphviz's ``dot``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from genkit_sessions.cli._command import (
    add_command,
    add_dynamodb_arguments,
    context_of,
    open_dynamodb_store,
    suggest,
    target_options,
    tenant_of,
    write_output,
)
from genkit_sessions.cli.render import FORMATS, IMAGE_SUFFIXES, render, render_dot, render_image
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.model.wire import to_wire
from genkit_sessions.stores.protocol import SessionRecord

__all__ = ["record_json", "register", "summary_lines"]


def register(subparsers: Any) -> None:
    """Add ``sessions list``, ``show`` and ``tree``."""
    group = subparsers.add_parser(
        "sessions",
        help="list sessions: by principal, by indexed metadata, or a whole tenant",
        description="Find sessions in a DynamoDB table.",
    )
    commands = group.add_subparsers(dest="sessions_command", required=True, metavar="SUBCOMMAND")
    listing = add_command(
        commands,
        "list",
        help="list sessions by principal, by an indexed metadata key, or every session of the tenant",
        description="List sessions, oldest first for a metadata lookup (table scan order for a whole tenant). "
        "One page at a time: the next page's token is printed on stderr; --all follows every page. "
        "Without --principal or --key the tenant's sessions are found with a Scan of the table "
        "(it reads every item: an operator's tool, not a request path).",
        example="genkit-sessions sessions list --table chats --principal ana --limit 20\n"
        "genkit-sessions sessions list --table chats --key team --value support --json",
    )
    listing.add_argument("--principal", default=None, help="sessions whose metadata names this principal")
    listing.add_argument("--key", default=None, help="an indexed metadata key to look up (with --value)")
    listing.add_argument("--value", default=None, help="the value of --key")
    listing.add_argument("--limit", type=int, default=50, help="sessions per page (default 50, at most 1000)")
    listing.add_argument("--page-token", default=None, help="the token a previous page printed")
    listing.add_argument("--all", action="store_true", help="follow every page")
    listing.add_argument("--json", action="store_true", help="print JSON: {sessions: [...], nextPageToken}")
    add_dynamodb_arguments(listing)
    listing.set_defaults(func=_list)

    show = add_command(
        subparsers,
        "show",
        help="print one snapshot: a readable summary, or Genkit wire JSON",
        description="Print a snapshot by id: its session, parent, status, error and messages; "
        "--json prints it exactly as Genkit's wire format has it.",
        example="genkit-sessions show SNAPSHOT_ID --table chats --json",
    )
    show.add_argument("snapshot_id", metavar="SNAPSHOT_ID")
    show.add_argument("--json", action="store_true", help="the snapshot as Genkit wire JSON")
    add_dynamodb_arguments(show)
    show.set_defaults(func=_show)

    tree = add_command(
        subparsers,
        "tree",
        help="draw a session's snapshot tree: text, Mermaid, Graphviz DOT, or an SVG/PNG image",
        description="Draw every snapshot of a session under its parent, with statuses and message counts, "
        "the leaf marked. --output FILE.svg or FILE.png renders through Graphviz's `dot` (the graphviz "
        "package); any other --output file gets the --format drawing.",
        example="genkit-sessions tree SESSION_ID --table chats\n"
        "genkit-sessions tree SESSION_ID --table chats --format mermaid > tree.mmd\n"
        "genkit-sessions tree SESSION_ID --table chats --output tree.svg",
    )
    tree.add_argument("session_id", metavar="SESSION_ID")
    tree.add_argument("--format", choices=FORMATS, default="text", help="the drawing (default text)")
    tree.add_argument("--output", type=Path, default=None, help="write to this file (.svg/.png: an image)")
    tree.add_argument("--short-ids", action="store_true", help="shorten ids to 8 characters")
    tree.add_argument("--json", action="store_true", help="print the nodes as JSON instead of a drawing")
    add_dynamodb_arguments(tree)
    tree.set_defaults(func=_tree)


def record_json(record: SessionRecord) -> dict[str, Any]:
    """A session record as camelCase JSON."""
    return {
        "sessionId": record.id,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
        "version": record.version,
        "leafId": record.leaf_id,
        "expiresAt": record.expires_at,
        "metadata": dict(record.metadata),
    }


def _filter(args: argparse.Namespace) -> tuple[str, str] | None:
    if args.principal is not None and args.key is not None:
        raise GenkitError(Status.INVALID_ARGUMENT, "pass --principal or --key, not both")
    if args.principal is not None:
        return "principal", args.principal
    if (args.key is None) != (args.value is None):
        raise GenkitError(Status.INVALID_ARGUMENT, "--key and --value go together; pass both, or neither")
    return (args.key, args.value) if args.key is not None else None


def _pages(args: argparse.Namespace, store: Any) -> Iterator[tuple[list[SessionRecord], str | None]]:
    from genkit_sessions.dynamodb.scan import scan_session_ids
    from genkit_sessions.service import SessionService

    lookup = _filter(args)
    context = context_of(args)
    token = args.page_token
    while True:
        if lookup is not None:
            page = SessionService(store).find_by_metadata(
                lookup[0], lookup[1], limit=args.limit, page_token=token, context=context
            )
            records, token = list(page.records), page.next_page_token
        else:
            ids = scan_session_ids(store.client, store.table_name, tenant_of(args), limit=args.limit, page_token=token)
            found = (store.get_session_record(i, context=context) for i in ids.session_ids)
            records, token = [r for r in found if r is not None], ids.next_page_token
        yield records, token
        if token is None or not args.all:
            return


def _list(args: argparse.Namespace) -> int:
    lookup = _filter(args)
    store = open_dynamodb_store(args, indexed=(lookup[0],) if lookup else ())
    records: list[SessionRecord] = []
    token: str | None = None
    for page, next_token in _pages(args, store):
        token = next_token
        if args.json:
            records += page
            continue
        for record in page:
            metadata = " ".join(f"{k}={v}" for k, v in sorted(record.metadata.items()))
            print(f"{record.id}  v{record.version}  created {record.created_at}  leaf {record.leaf_id}  {metadata}")
    if args.json:
        print(json.dumps({"sessions": [record_json(r) for r in records], "nextPageToken": token}, indent=2))
    if token is not None and not args.json:
        print(f"more sessions: add --page-token {shlex.quote(token)} (or --all)", file=sys.stderr)
    return 0


def _clip(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def summary_lines(snapshot: SessionSnapshot) -> list[str]:
    """A snapshot as the lines ``show`` prints without ``--json``."""
    state = snapshot.state
    finish = f" (finish reason {snapshot.finish_reason.value})" if snapshot.finish_reason else ""
    lines = [
        f"snapshot   {snapshot.snapshot_id}",
        f"session    {snapshot.session_id or (state.session_id if state else None)}",
        f"parent     {snapshot.parent_id or '(root)'}",
        f"status     {snapshot.effective_status.value}{finish}",
        f"created    {snapshot.created_at or '-'}",
        f"updated    {snapshot.updated_at or '-'}",
    ]
    if snapshot.heartbeat_at:
        lines.append(f"heartbeat  {snapshot.heartbeat_at}")
    if snapshot.error is not None:
        lines.append(f"error      {snapshot.error.status or 'UNKNOWN'}: {snapshot.error.message}")
    messages = state.message_list if state else ()
    lines.append(f"messages   {len(messages)}")
    for index, message in enumerate(messages, 1):
        role = message.role.value if hasattr(message.role, "value") else str(message.role)
        text = message.text or "(no text: " + ", ".join(sorted({type(p).__name__ for p in message.content})) + ")"
        lines.append(f"  {index:>3} {role}: {_clip(text)}")
    if state is not None and state.artifacts:
        lines.append(f"artifacts  {len(state.artifacts)}")
    if state is not None and state.custom is not None:
        lines.append(f"custom     {_clip(json.dumps(to_wire(state)['custom'], ensure_ascii=False))}")
    return lines


def _show(args: argparse.Namespace) -> int:
    store = open_dynamodb_store(args)
    snapshot = store.get_snapshot(snapshot_id=args.snapshot_id, context=context_of(args))
    if snapshot is None:
        raise GenkitError(
            Status.NOT_FOUND,
            f"no snapshot {args.snapshot_id!r} in table {args.table!r} (tenant {tenant_of(args)!r}); "
            f"see a session's snapshot ids with `{suggest('tree', 'SESSION_ID', *target_options(args))}`",
        )
    if args.json:
        print(json.dumps(to_wire(snapshot), indent=2, ensure_ascii=False))
    else:
        print("\n".join(summary_lines(snapshot)))
    return 0


def _tree(args: argparse.Namespace) -> int:
    store = open_dynamodb_store(args)
    context = context_of(args)
    snapshots = list(store.list_snapshots(args.session_id, context=context))
    if not snapshots:
        raise GenkitError(
            Status.NOT_FOUND,
            f"session {args.session_id!r} has no snapshots in table {args.table!r} (tenant {tenant_of(args)!r}); "
            f"list sessions with `{suggest('sessions', 'list', *target_options(args))}`",
        )
    leaf = store.get_snapshot(session_id=args.session_id, context=context)
    leaf_id = leaf.snapshot_id if leaf is not None else None
    id_length = 8 if args.short_ids else None
    if args.json:
        nodes = [
            {
                "snapshotId": s.snapshot_id,
                "parentId": s.parent_id,
                "status": s.effective_status.value,
                "messages": len(s.state.message_list) if s.state else 0,
                "leaf": s.snapshot_id == leaf_id,
            }
            for s in snapshots
        ]
        print(json.dumps({"sessionId": args.session_id, "leafId": leaf_id, "snapshots": nodes}, indent=2))
        return 0
    output: Path | None = args.output
    if output is not None and output.suffix.lower() in IMAGE_SUFFIXES:
        render_image(render_dot(snapshots, leaf_id=leaf_id, id_length=id_length), output)
        print(f"drew {len(snapshots)} snapshots to {output}", file=sys.stderr)
        return 0
    drawing = render(snapshots, args.format, leaf_id=leaf_id, id_length=id_length)
    if output is not None:
        write_output(output, drawing, f"the {args.format} drawing")
        print(f"wrote the {args.format} drawing of {len(snapshots)} snapshots to {output}", file=sys.stderr)
    else:
        sys.stdout.write(drawing)
    return 0
