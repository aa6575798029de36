"""``genkit-sessions resolve --init JSON``: a dry run of the resolver against a table.

It reads what a turn would read and prints which rule decides and what the
turn would start from (or the failure it would return), writing nothing: the
store is wrapped so that any write raises instead of reaching the table.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from genkit_sessions.cli._command import add_command, add_dynamodb_arguments, context_of, open_dynamodb_store
from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import AgentInit, SessionSnapshot
from genkit_sessions.model.wire import from_wire
from genkit_sessions.resolver.options import ResumePolicy, SessionStoreOptions
from genkit_sessions.resolver.resolver import Resolution, SessionResolver
from genkit_sessions.stores.protocol import Context, Mutator

__all__ = ["ReadOnlyStore", "register", "resolution_json"]


class ReadOnlyStore:
    """A store that reads through to another and refuses every write: what makes ``resolve`` a dry run."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """The wrapped store's answer."""
        found: SessionSnapshot | None = self._store.get_snapshot(
            snapshot_id=snapshot_id, session_id=session_id, context=context
        )
        return found

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        """Never writes: FAILED_PRECONDITION."""
        raise GenkitError(Status.FAILED_PRECONDITION, "resolve is a dry run and writes nothing")


def register(subparsers: Any) -> None:
    """Add ``resolve``."""
    parser = add_command(
        subparsers,
        "resolve",
        help="dry-run the resolver: which rule decides a turn's init and what the turn would start from",
        description="Resolve an AgentInit (Genkit wire JSON: sessionId, snapshotId, state) against the table as "
        "a server-managed agent would at the start of a turn, and print the rule that decides, the source, "
        "the snapshot resumed and its message count, or the failure the turn would return. Writes nothing.",
        example='genkit-sessions resolve --table chats --init \'{"sessionId": "chat-42"}\'\n'
        'genkit-sessions resolve --table chats --init \'{"sessionId": "chat-42"}\' --walk-back --json',
    )
    parser.add_argument("--init", required=True, help="the AgentInit as JSON ('{}' for a fresh session)")
    parser.add_argument(
        "--walk-back", action="store_true", help="resume a failed leaf's nearest completed ancestor (R13 opt-in)"
    )
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    add_dynamodb_arguments(parser)
    parser.set_defaults(func=_resolve)


def resolution_json(resolution: Resolution) -> dict[str, Any]:
    """A resolution as camelCase JSON: rule, ok, source, sessionId, snapshotId, messages, error."""
    session = resolution.session
    error = resolution.error
    return {
        "rule": resolution.rule,
        "ok": resolution.ok,
        "source": resolution.source.value if resolution.source else None,
        "sessionId": session.id if session else None,
        "snapshotId": resolution.snapshot.snapshot_id if resolution.snapshot else None,
        "messages": len(session.messages) if session else None,
        "error": {"status": error.status, "message": error.message} if error else None,
    }


def _resolve(args: argparse.Namespace) -> int:
    init = from_wire(AgentInit, args.init)
    store = ReadOnlyStore(open_dynamodb_store(args))
    policy = ResumePolicy.WALK_BACK if args.walk_back else ResumePolicy.REJECT
    options = SessionStoreOptions(context=context_of(args), resume_policy=policy)
    try:
        resolution = SessionResolver.resolve(store, True, init, options)
    except GenkitError as error:  # misuse: the agent would raise, not fail the turn
        rule = error.details.get("rule") if isinstance(error.details, dict) else None
        if args.json:
            print(json.dumps({"rule": rule, "ok": False, "raised": str(error)}, indent=2))
            return 1
        raise GenkitError(
            error.status, f"{rule or 'the resolver'} raises: {error.message}", reason=error.reason
        ) from None
    found = resolution_json(resolution)
    if args.json:
        print(json.dumps(found, indent=2))
    elif resolution.ok:
        origin = f" from snapshot {found['snapshotId']}" if found["snapshotId"] else ""
        print(
            f"{resolution.rule}: {found['source']} session {found['sessionId']}{origin}, {found['messages']} messages"
        )
    else:
        print(f"{resolution.rule}: the turn fails with {found['error']['status']}: {found['error']['message']}")
    return 0
