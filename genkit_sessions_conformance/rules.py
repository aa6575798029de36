"""The rules the cases pin, one line each, as the terminal report quotes them.

``docs/contract.md`` in the repository states each rule in full; this table restates it in one line
so that a failing case can be explained where it is reported, without the repository at hand. A
test keeps the ids here, the ids of the contract's tables and the ids the case format accepts in
step.
"""

from __future__ import annotations

__all__ = ["CONTRACT", "RULES", "rule_text"]

CONTRACT = "docs/contract.md"
"""Where the full contract lives: ``docs/contract.md`` of the genkit_sessions repository."""

RULES: dict[str, str] = {
    "MODEL": "a session is a tree of snapshots; the leaf is the newest childless one; "
    "expired is computed on read, never stored; only completed snapshots resume",
    "WIRE": "Genkit's camelCase JSON, lossless: unknown keys survive a round trip; decoding is strict "
    "(INVALID_ARGUMENT, INVALID_INPUT, naming the JSON path)",
    "ID": "an id is a non-empty string of at most 512 UTF-8 bytes without control characters, in every store",
    "R1": "server_managed disagrees with whether a store was given: raise INVALID_ARGUMENT",
    "R2": "client-managed init with snapshotId or sessionId: raise FAILED_PRECONDITION, "
    "SESSION_STORE_NOT_CONFIGURED, naming the field",
    "R3": "client-managed init with state: a session hydrated from it (its sessionId, or a new UUID)",
    "R4": "client-managed, empty init: a fresh session under a new UUID",
    "R5": "server-managed init with state: raise FAILED_PRECONDITION",
    "R6": "an empty, blank or otherwise invalid id: raise INVALID_ARGUMENT, INVALID_SNAPSHOT_ID or INVALID_SESSION_ID",
    "R7": "snapshotId not in the store (or only in another tenant): raise INVALID_ARGUMENT, SNAPSHOT_NOT_FOUND",
    "R8": "snapshotId of another session than the sessionId given: raise INVALID_ARGUMENT, INVALID_SESSION_ID",
    "R9": "snapshotId of a snapshot that is not completed: raise FAILED_PRECONDITION, SNAPSHOT_NOT_RESUMABLE",
    "R10": "snapshotId of a completed snapshot: a session resumed from it",
    "R11": "sessionId only, the session has no snapshots: a fresh session under that id",
    "R12": "sessionId only, the leaf is completed: a session resumed from the leaf",
    "R13": "sessionId only, the leaf is not completed: raise FAILED_PRECONDITION, SNAPSHOT_NOT_RESUMABLE "
    "(walk-back profile: the nearest completed ancestor)",
    "R14": "server-managed, empty init: a fresh session under a new UUID",
    "R15": "a store read fails: a graceful failure with the mapped status and the store's message",
    "R16": "undecodable data, or a broken or cyclic parent chain: a graceful failure, DATA_LOSS",
    "R17": "the state validator rejects the state: a graceful failure, INVALID_ARGUMENT, findings in details",
    "S1": "get_snapshot takes exactly one of snapshot_id and session_id, each valid: else INVALID_ARGUMENT",
    "S2": "absent data, or another tenant's, reads as none, never as an error",
    "S3": "save_snapshot is an atomic read-modify-write; a mutator returning none writes nothing; "
    "what lands is the mutator's last answer",
    "S4": "the store stamps the id, createdAt once, updatedAt on every write, status completed by default, "
    "and sessionId from the state",
    "S5": "completed, failed and aborted are final: a status change is FAILED_PRECONDITION and writes nothing",
    "S6": "a snapshot never changes session or parent: FAILED_PRECONDITION",
    "S7": "a new snapshot's parent exists in the same session and tenant: else INVALID_ARGUMENT",
    "S8": "a lookup by session id returns the session's leaf",
    "S9": "nothing a read returns can change what the store holds",
    "S10": "tenants, from the call's context, are isolated",
    "S11": "list, delete, abort (answering the previous status), heartbeat and watch behave as the contract says",
    "S12": "backend failures surface as status-carrying errors keeping the backend's message",
    "V1": "create writes a record without snapshots; ALREADY_EXISTS for a live id; INVALID_ARGUMENT for bad ids "
    "or metadata",
    "V2": "find_or_create: N concurrent first uses create exactly one record and all get it",
    "V3": "find_by_id: the record, or none when absent, deleted or expired; resolver-made sessions have one",
    "V4": "find_by_metadata: live sessions by an indexed key, oldest first, in pages, consistent with the last write",
    "V5": "set_metadata changes one key and every index atomically; NOT_FOUND for no live session",
    "V6": "delete removes the record, snapshots and index entries; nothing of the session is read afterwards",
    "V7": "ttl sets expires_at (sliding moves it); delete_expired removes expired sessions; expired reads as absent",
    "V8": "version moves by exactly one per snapshot created or changed in state or status, and never goes back",
    "V9": "append writes one completed child of the leaf; with expected_version it writes nothing when the "
    "version moved",
    "V10": "appended messages carry metadata.eventId; an id already on the branch is skipped (retries are no-ops)",
    "V11": "get_messages is the full history; get_active_messages what the model sees after compaction",
    "V12": "compact replaces covered messages by a summary in one version-checked write, retried past appends",
    "V13": "fork makes a new session from a snapshot; the source is unchanged and the two stay independent",
    "H1": "add_interaction stores a user message and the replies as one completed snapshot "
    "(user_message None: partial)",
    "H2": "read_window: the newest active messages within the bounds, oldest first, and whether some were left out",
    "H3": "iter_history streams the complete history in chunks from one snapshot, in bounded memory",
    "H4": "get_history always returns the complete active history",
    "M1": "ChatMemoryStore.get_messages: the active messages, an empty list for an unknown id",
    "M2": "update_messages: the new leaf holds exactly these messages, in one atomic write; a stored prefix is kept",
    "M3": "delete_messages deletes the session",
    "M4": "the async facade never blocks the event loop: UNIMPLEMENTED, ASYNC_NOT_SUPPORTED on a blocking store "
    "without an executor",
    "G1": "our async stores, wrapped, run a real Genkit Python agent unchanged",
    "G2": 'parentId "" means no parent in every rule and round-trips unchanged',
    "G3": "keys Genkit's models refuse are kept through the adapter",
    "G4": "errors reach Genkit as its own error type with the same status, message and reason",
}
"""Rule id -> the rule in one line (``docs/contract.md`` has the full text)."""


def rule_text(rule: str) -> str:
    """The one-line text of ``rule``, or a pointer to the contract for an id this table lacks."""
    return RULES.get(rule, f"see {CONTRACT}")
