"""The resolution rules R1-R17: everything that decides how an init payload becomes a session.

Everything that affects a resolution's outcome lives in this file, in the
order of the contract's table, each rule marked with its number. The rules do
no I/O: :func:`resolution_steps` is a generator that *yields* the store reads
it needs (:class:`ReadSnapshot`, :class:`ReadLeaf`), is *sent* what the store
answered (:class:`ReadResult`), and *returns* a :class:`Decision`. The sync and
async drivers in ``genkit_sessions.resolver.resolver`` only perform the reads.

Theory of operation:

* API misuse (R1, R2, R5, R6, R7, R8, R9, R13) raises :class:`GenkitError`.
* Everything else that goes wrong (R15 store failures, R16 bad stored data,
  R17 rejected state) returns a failure :class:`Decision` so the agent can end
  the turn as failed instead of crashing.
* The first rule that matches decides; R15-R17 apply to whatever a read or a
  success produced along the way.

==== =========================================================== =============================
rule situation                                                   outcome
==== =========================================================== =============================
R1   ``server_managed`` disagrees with whether there is a store  raise INVALID_ARGUMENT
R2   client-managed, init has ``snapshotId`` or ``sessionId``    raise FAILED_PRECONDITION
R3   client-managed, init has ``state``                          hydrated from that state
R4   client-managed, nothing                                     fresh session, new UUID
R5   server-managed, init has ``state``                          raise FAILED_PRECONDITION
R6   an invalid id                                               raise INVALID_ARGUMENT
R7   ``snapshotId`` not in the store                             raise INVALID_ARGUMENT
R8   ``snapshotId`` belongs to another session than ``sessionId`` raise INVALID_ARGUMENT
R9   ``snapshotId`` not completed                                raise FAILED_PRECONDITION
R10  ``snapshotId`` completed                                    resumed from it
R11  ``sessionId`` only, no snapshots                            fresh session under that id
R12  ``sessionId`` only, leaf completed                          resumed from the leaf
R13  ``sessionId`` only, leaf not completed                      raise (or walk back, opt-in)
R14  server-managed, nothing                                     fresh session, new UUID
R15  the store fails while reading                               failure, mapped status
R16  stored data undecodable, parent chain broken or cyclic      failure, DATA_LOSS
R17  the state validator rejects the custom state                failure, INVALID_ARGUMENT
==== =========================================================== =============================
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Generator, Iterable, Mapping
from typing import Any, NamedTuple, NoReturn

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.ids import id_problem, mint_id, shown
from genkit_sessions.model.types import AgentInit, ErrorInfo, SessionSnapshot, SessionState, SnapshotStatus
from genkit_sessions.resolver.options import ResumePolicy, SessionStoreOptions

__all__ = [
    "Decision",
    "ReadLeaf",
    "ReadResult",
    "ReadSnapshot",
    "ResolutionSource",
    "Steps",
    "resolution_steps",
]


class ResolutionSource(str, enum.Enum):
    """How the session a turn starts from was obtained."""

    FRESH = "fresh"
    HYDRATED = "hydrated"
    RESUMED_BY_SNAPSHOT_ID = "resumed_by_snapshot_id"
    RESUMED_BY_SESSION_ID = "resumed_by_session_id"

    def __str__(self) -> str:
        return self.value


# The values the rules exchange with a driver are named tuples: immutable, and made at a fraction of
# a frozen class's cost (a resolution makes four of them). Compare them by type as well as by value.


class ReadSnapshot(NamedTuple):
    """Ask the store for the snapshot with this id."""

    snapshot_id: str


class ReadLeaf(NamedTuple):
    """Ask the store for the leaf of this session."""

    session_id: str


class ReadResult(NamedTuple):
    """What the store answered: a snapshot (or None), or the exception it raised."""

    snapshot: Any = None
    error: BaseException | None = None


class Decision(NamedTuple):
    """The outcome of the rules: a session to start from, or a graceful failure.

    ``rule`` names the row of the table that decided (``"R12"``).
    """

    rule: str
    source: ResolutionSource | None = None
    session_id: str | None = None
    state: SessionState | None = None
    snapshot: SessionSnapshot | None = None
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """True when the decision is a session, False when it is a failure."""
        return self.error is None


Steps = Generator["ReadSnapshot | ReadLeaf", ReadResult, Decision]


class _Failed(Exception):
    """Internal: unwinds the rules with a failure decision (R15, R16, R17)."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision


def resolution_steps(server_managed: bool, has_store: bool, init: AgentInit | None, opts: SessionStoreOptions) -> Steps:
    """Apply R1-R17 to an init payload, yielding the store reads they need."""
    try:
        return (yield from _decide(server_managed, has_store, init or AgentInit(), opts))
    except _Failed as failed:
        return failed.decision


def _decide(server_managed: bool, has_store: bool, init: AgentInit, opts: SessionStoreOptions) -> Steps:
    # R1: the mode and the store must agree.
    if server_managed != has_store:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            "server_managed=True needs a session store; pass one, or set server_managed=False"
            if server_managed
            else "server_managed=False means the client keeps the state, so no store may be given; "
            "drop the store, or set server_managed=True",
            details={"rule": "R1"},
        )

    if not server_managed:
        # R2: a client-managed agent has no store to look ids up in.
        for field, value in (("snapshotId", init.snapshot_id), ("sessionId", init.session_id)):
            if value is not None:
                raise GenkitError(
                    Status.FAILED_PRECONDITION,
                    f"init carries {field} but this agent keeps no session store (client-managed state); "
                    f"send the session's state instead of {field}, or configure a store on the agent",
                    details={"rule": "R2", "field": field},
                    reason=Reason.SESSION_STORE_NOT_CONFIGURED,
                )
        # R3: hydrate from the client's state.
        if init.state is not None:
            session_id = init.state.session_id
            if session_id is not None:
                _check_id(session_id, "state.sessionId", Reason.INVALID_SESSION_ID)
            return _success("R3", ResolutionSource.HYDRATED, session_id or mint_id(), init.state, None, opts)
        # R4: nothing to start from.
        return _success("R4", ResolutionSource.FRESH, mint_id(), None, None, opts)

    # R5: a server-managed agent owns the state; a client may not send it.
    if init.state is not None:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            "init carries state but this agent keeps sessions in its store (server-managed state); "
            "send sessionId or snapshotId to continue a session, or nothing to start one",
            details={"rule": "R5", "field": "state"},
        )

    # R6: ids must be valid before they reach the store.
    if init.snapshot_id is not None:
        _check_id(init.snapshot_id, "snapshotId", Reason.INVALID_SNAPSHOT_ID)
    if init.session_id is not None:
        _check_id(init.session_id, "sessionId", Reason.INVALID_SESSION_ID)

    if init.snapshot_id is not None:
        request = tuple.__new__(ReadSnapshot, (init.snapshot_id,))  # see _success
        snapshot = _answer(request, (yield request))
        # R7: the snapshot must exist (in this tenant).
        if snapshot is None:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"snapshot {init.snapshot_id!r} does not exist; pass a snapshotId this agent returned, "
                "or a sessionId to continue the session's latest turn",
                details={"rule": "R7", "snapshotId": init.snapshot_id},
                reason=Reason.SNAPSHOT_NOT_FOUND,
            )
        # R8: when both ids are given they must agree.
        if init.session_id is not None and snapshot.session_id != init.session_id:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"snapshot {init.snapshot_id!r} does not belong to session {init.session_id!r}; "
                "send the sessionId the snapshot was saved under, or only the snapshotId",
                details={"rule": "R8", "snapshotId": init.snapshot_id, "sessionId": init.session_id},
                reason=Reason.INVALID_SESSION_ID,
            )
        # R9: only a completed snapshot can be resumed.
        status = _status(snapshot, opts)
        if status is not SnapshotStatus.COMPLETED:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"snapshot {init.snapshot_id!r} is {status.value}, and only a completed snapshot can be "
                "resumed; resume its parent or another completed snapshot",
                details={"rule": "R9", "snapshotId": init.snapshot_id, "status": status.value},
                reason=Reason.SNAPSHOT_NOT_RESUMABLE,
            )
        # R10: resume from it.
        return _success(
            "R10", ResolutionSource.RESUMED_BY_SNAPSHOT_ID, snapshot.session_id, snapshot.state, snapshot, opts
        )

    if init.session_id is not None:
        leaf_request = tuple.__new__(ReadLeaf, (init.session_id,))  # see _success
        leaf = _answer(leaf_request, (yield leaf_request))
        # R11: an unknown session starts fresh under the caller's id.
        if leaf is None:
            return _success("R11", ResolutionSource.FRESH, init.session_id, None, None, opts)
        # R12: the leaf is completed: resume from it.
        status = _status(leaf, opts)
        if status is SnapshotStatus.COMPLETED:
            return _success("R12", ResolutionSource.RESUMED_BY_SESSION_ID, init.session_id, leaf.state, leaf, opts)
        # R13: the leaf is still running or ended badly.
        if opts.resume_policy is ResumePolicy.REJECT:
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"session {init.session_id!r} ends in snapshot {leaf.snapshot_id!r}, which is {status.value}; "
                "wait for the turn to complete (or abort it), or resume a completed snapshot by snapshotId",
                details={"rule": "R13", "snapshotId": leaf.snapshot_id, "status": status.value},
                reason=Reason.SNAPSHOT_NOT_RESUMABLE,
            )
        ancestor = yield from _walk_back(leaf, opts)
        if ancestor is None:
            return _success("R13", ResolutionSource.FRESH, init.session_id, None, None, opts)
        return _success("R13", ResolutionSource.RESUMED_BY_SESSION_ID, init.session_id, ancestor.state, ancestor, opts)

    # R14: nothing given: a new session.
    return _success("R14", ResolutionSource.FRESH, mint_id(), None, None, opts)


def _answer(request: ReadSnapshot | ReadLeaf, result: ReadResult) -> SessionSnapshot | None:
    """What one store read answered, with R15 (store failures) and R16 (bad data) applied to it. (The
    rules yield each request themselves and judge the answer here: one generator frame fewer a read.)"""
    if result.error is not None:
        error = result.error
        # R16: the store could not decode what it holds.
        if isinstance(error, GenkitError) and error.status is Status.DATA_LOSS:
            _fail("R16", Status.DATA_LOSS, error.message, error.payload_details())
        # The ids were checked (R6), so a store refusing the call's input refuses the caller's context (a
        # malformed tenant, none where the store requires one): misuse, raised like a bad argument.
        if isinstance(error, GenkitError) and error.status is Status.INVALID_ARGUMENT:
            raise error
        # R15: the store failed; keep its status and message.
        status, message, details = _store_failure(error)
        _fail("R15", status, message, details)
    snapshot = result.snapshot
    if snapshot is None:
        return None
    # R16: what came back must be a snapshot, and the one that was asked for.
    if not isinstance(snapshot, SessionSnapshot):
        _fail("R16", Status.DATA_LOSS, f"the store returned {type(snapshot).__name__} instead of a SessionSnapshot")
    if snapshot.session_id is None:
        _fail("R16", Status.DATA_LOSS, f"the store returned snapshot {snapshot.snapshot_id!r} without a sessionId")
    if isinstance(request, ReadSnapshot) and snapshot.snapshot_id != request.snapshot_id:
        _fail(
            "R16",
            Status.DATA_LOSS,
            f"asked the store for snapshot {request.snapshot_id!r} and got {snapshot.snapshot_id!r}",
        )
    if isinstance(request, ReadLeaf) and snapshot.session_id != request.session_id:
        _fail(
            "R16",
            Status.DATA_LOSS,
            f"asked the store for the leaf of session {request.session_id!r} and got snapshot "
            f"{snapshot.snapshot_id!r} of session {snapshot.session_id!r}",
        )
    return snapshot


def _walk_back(
    leaf: SessionSnapshot, opts: SessionStoreOptions
) -> Generator[ReadSnapshot | ReadLeaf, ReadResult, SessionSnapshot | None]:
    """R13 walk-back: the nearest completed ancestor, or None when the chain has none.

    R16 applies to a parent that is missing, in another session, or seen twice.
    """
    chain = [leaf.snapshot_id]
    seen = set(chain)
    current = leaf
    while current.parent_id is not None:
        parent_id = current.parent_id
        if parent_id in seen:
            _fail(
                "R16",
                Status.DATA_LOSS,
                f"the parent chain of session {leaf.session_id!r} loops back to snapshot {parent_id!r}",
                {"chain": [*chain, parent_id]},
            )
        request = ReadSnapshot(parent_id)
        parent = _answer(request, (yield request))
        if parent is None or parent.session_id != leaf.session_id:
            _fail(
                "R16",
                Status.DATA_LOSS,
                f"snapshot {current.snapshot_id!r} names parent {parent_id!r}, which is "
                f"{'missing' if parent is None else 'in another session'}: the parent chain is broken",
            )
        if _status(parent, opts) is SnapshotStatus.COMPLETED:
            return parent
        chain.append(parent_id)
        seen.add(parent_id)
        current = parent
    return None


def _success(
    rule: str,
    source: ResolutionSource,
    session_id: str | None,
    state: SessionState | None,
    snapshot: SessionSnapshot | None,
    opts: SessionStoreOptions,
) -> Decision:
    """A session to start from, after R17 has checked its custom state."""
    if state is not None and opts.state_validator is not None:
        # R17: the configured validator must accept the custom state.
        try:
            answer = opts.state_validator(state.custom)
        except (ValueError, TypeError) as exc:
            answer = str(exc)
        findings = _findings(answer)
        if findings:
            _fail(
                "R17",
                Status.INVALID_ARGUMENT,
                f"the session's custom state failed validation: {'; '.join(findings)}",
                {"findings": findings},
            )
    # tuple.__new__ with every field: what Decision(...) does, without its Python-level __new__ (a third
    # of a lookup's decision cost).
    return tuple.__new__(Decision, (rule, source, session_id, state, snapshot, None))


def _findings(answer: Any) -> list[str]:
    """R17: what a state validator answered, as findings (see ``StateValidator``); INVALID_ARGUMENT for an
    answer that names no findings, since that validator is broken, not the state."""
    if answer is None or answer is True:
        return []
    if answer is False:
        return ["the state validator returned False"]
    if isinstance(answer, str):
        return [answer]
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: close it rather than leave a warning behind
        problem = "an awaitable; pass a plain function (drop 'async' from it)"
    elif isinstance(answer, (Mapping, bytes, bytearray)) or not isinstance(answer, Iterable):
        problem = f"{type(answer).__name__} {answer!r:.80}"
    else:
        return [str(finding) for finding in answer]
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"the state_validator returned {problem}; return a list of findings (strings, empty when the state "
        "is fine), one string, a bool, or None",
        details={"rule": "R17"},
        reason=Reason.INVALID_INPUT,
    )


def _status(snapshot: SessionSnapshot, opts: SessionStoreOptions) -> SnapshotStatus:
    status = snapshot.status
    if status is None or status is SnapshotStatus.COMPLETED:  # absent reads as completed; no clock read
        return SnapshotStatus.COMPLETED
    if status is not SnapshotStatus.PENDING:  # only a pending snapshot can have expired
        return status
    return snapshot.status_at(opts.clock(), opts.heartbeat_timeout)


def _check_id(value: str, field: str, reason: Reason) -> None:
    problem = id_problem(value)
    if problem is not None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{field} {shown(value)} {problem}; send a non-empty id of at most 512 UTF-8 bytes without control "
            "characters",
            details={"rule": "R6", "field": field},
            reason=reason,
        )


def _fail(rule: str, status: Status, message: str, details: Any = None) -> NoReturn:
    extra = details if isinstance(details, Mapping) else ({} if details is None else {"details": details})
    error = ErrorInfo(status=status.value, message=message, details={"rule": rule, **extra})
    raise _Failed(Decision(rule=rule, error=error))


def _store_failure(error: BaseException) -> tuple[Status, str, Any]:
    """R15: map what a store raised to a status, keeping its message."""
    if isinstance(error, GenkitError):
        return error.status, error.message, error.payload_details()
    if isinstance(error, TimeoutError):
        status = Status.DEADLINE_EXCEEDED
    elif isinstance(error, ConnectionError):
        status = Status.UNAVAILABLE
    elif isinstance(error, PermissionError):
        status = Status.PERMISSION_DENIED
    else:
        status = Status.UNKNOWN
    return status, f"the session store failed: {type(error).__name__}: {error}", {"exception": type(error).__name__}
