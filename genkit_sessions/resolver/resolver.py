"""The two drivers of the rules: :meth:`SessionResolver.resolve` and :meth:`SessionResolver.aresolve`.

Both run the same generator from ``genkit_sessions.resolver.rules``; they only
perform the store reads it asks for, so the rules exist once.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import AgentInit, ErrorInfo, SessionSnapshot, slot_setter
from genkit_sessions.resolver.options import SessionStoreOptions
from genkit_sessions.resolver.rules import (
    Decision,
    ReadLeaf,
    ReadResult,
    ReadSnapshot,
    ResolutionSource,
    resolution_steps,
)
from genkit_sessions.resolver.session import Session
from genkit_sessions.stores.protocol import AsyncSessionStore, SessionStore

__all__ = ["Resolution", "ResolutionFailure", "ResolvedSession", "SessionResolver"]


@attrs.frozen
class Resolution:
    """What a turn starts from: a ready session, or a graceful failure.

    :meth:`SessionResolver.resolve` returns one of the two subclasses, :class:`ResolvedSession` or
    :class:`ResolutionFailure`, typed so that checking ``ok`` tells a type checker which::

        resolution = SessionResolver.resolve(store, True, init)
        if not resolution.ok:
            report(resolution.error)  # ErrorInfo, never None here
        else:
            resolution.session.save()  # Session, never None here

    On success ``ok`` is True and ``session``, ``source`` and (when resumed)
    ``snapshot`` are set. On failure ``ok`` is False and ``error`` carries the
    status, message and details for an output with ``finishReason=failed``.
    ``rule`` names the rule of the contract (``docs/contract.md``) that decided (``"R12"``).
    """

    rule: str
    session: Session | None = None
    snapshot: SessionSnapshot | None = None
    source: ResolutionSource | None = None
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """True when there is a session to run the turn on."""
        return self.error is None


@attrs.frozen
class ResolvedSession(Resolution):
    """A successful resolution: the session the turn runs on, how it was obtained, and the snapshot it
    was built from (None for a fresh or hydrated session)."""

    session: Session = attrs.field(kw_only=True)
    source: ResolutionSource = attrs.field(kw_only=True)
    snapshot: SessionSnapshot | None = None
    error: None = None

    @property
    def ok(self) -> Literal[True]:
        """Always True: there is a session."""
        return True


@attrs.frozen
class ResolutionFailure(Resolution):
    """A graceful failure (R15-R17): ``error`` holds the status, message and details for a turn output with
    ``finishReason=failed``."""

    error: ErrorInfo = attrs.field(kw_only=True)
    session: None = None
    snapshot: None = None
    source: None = None

    @property
    def ok(self) -> Literal[False]:
        """Always False: there is no session, only the error."""
        return False


def _arguments(store: Any, server_managed: Any, opts: Any, method: str, sync: bool) -> SessionStoreOptions:
    """The resolver's own arguments, checked before any rule runs; the options to use."""
    if not isinstance(server_managed, bool):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{method}() takes server_managed as True or False, got {server_managed!r}; pass True when the "
            "store keeps the session, False when the client does",
            details={"rule": "R1"},
            reason=Reason.INVALID_INPUT,
        )
    if opts is not None and not isinstance(opts, SessionStoreOptions):
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{method}() takes opts as a SessionStoreOptions or None, got {type(opts).__name__}; pass "
            "SessionStoreOptions(context=..., resume_policy=...)",
            reason=Reason.INVALID_INPUT,
        )
    if store is not None and (
        _STORE_KINDS.get(type(store)) is not sync or ("get_snapshot" in getattr(store, "__dict__", ()))
    ):
        get = getattr(store, "get_snapshot", None)
        if not callable(get) or not callable(getattr(store, "save_snapshot", None)):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"{method}() takes a session store (get_snapshot and save_snapshot) or None, got "
                f"{type(store).__name__}; pass InMemorySessionStore() or a DynamoDBSessionStore",
                reason=Reason.INVALID_INPUT,
            )
        if sync and inspect.iscoroutinefunction(get):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                "resolve() was given an async store; use `await SessionResolver.aresolve(...)`",
            )
        if not sync and not inspect.iscoroutinefunction(get):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                "aresolve() was given a blocking store; pass its async face (`store.aio`) or call resolve()",
            )
        if "get_snapshot" not in getattr(store, "__dict__", ()):
            _STORE_KINDS[type(store)] = sync
    return opts if opts is not None else _DEFAULT_OPTIONS


_DEFAULT_OPTIONS = SessionStoreOptions()
_STORE_KINDS: dict[type, bool] = {}
"""Store classes already checked, and whether their methods block (True) or are coroutines (False).
A store whose instance carries its own ``get_snapshot`` is checked every time."""


def _init(init: AgentInit | None) -> AgentInit | None:
    if init is None or isinstance(init, AgentInit):
        return init
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"init must be an AgentInit or None, got {type(init).__name__}; decode JSON with from_wire(AgentInit, data)",
    )


class SessionResolver:
    """Turns an agent's init payload into the session a turn starts from (rules R1-R17)."""

    @staticmethod
    def resolve(
        store: SessionStore | None,
        server_managed: bool,
        init: AgentInit | None,
        opts: SessionStoreOptions | None = None,
    ) -> ResolvedSession | ResolutionFailure:
        """Resolve against a blocking store (or none, for client-managed state).

        Raises :class:`GenkitError` (FAILED_PRECONDITION, INVALID_ARGUMENT) for
        API misuse; returns a failed :class:`Resolution` for everything else.
        """
        opts = _arguments(store, server_managed, opts, "resolve", sync=True)
        steps = resolution_steps(server_managed, store is not None, _init(init), opts)
        answer: ReadResult | None = None
        while True:
            try:
                request = steps.send(answer) if answer is not None else next(steps)
            except StopIteration as done:
                return _resolution(done.value, store, None, opts)
            assert store is not None
            try:
                if isinstance(request, ReadLeaf):
                    snapshot = store.get_snapshot(session_id=request.session_id, context=opts.context)
                else:
                    snapshot = store.get_snapshot(snapshot_id=request.snapshot_id, context=opts.context)
                answer = tuple.__new__(ReadResult, (snapshot, None))  # ReadResult(snapshot), made faster
            except Exception as exc:  # R15/R16 judge it
                answer = ReadResult(error=exc)

    @staticmethod
    async def aresolve(
        store: AsyncSessionStore | None,
        server_managed: bool,
        init: AgentInit | None,
        opts: SessionStoreOptions | None = None,
    ) -> ResolvedSession | ResolutionFailure:
        """Resolve against an async store (``InMemorySessionStore().aio``, say); same rules as :meth:`resolve`."""
        opts = _arguments(store, server_managed, opts, "aresolve", sync=False)
        steps = resolution_steps(server_managed, store is not None, _init(init), opts)
        answer: ReadResult | None = None
        while True:
            try:
                request = steps.send(answer) if answer is not None else next(steps)
            except StopIteration as done:
                return _resolution(done.value, None, store, opts)
            assert store is not None
            try:
                snapshot = await _aperform(store, request, opts)
                answer = ReadResult(snapshot=snapshot)
            except Exception as exc:  # R15/R16 judge it
                answer = ReadResult(error=exc)


async def _aperform(store: AsyncSessionStore, request: ReadSnapshot | ReadLeaf, opts: SessionStoreOptions) -> Any:
    if isinstance(request, ReadSnapshot):
        return await store.get_snapshot(snapshot_id=request.snapshot_id, context=opts.context)
    return await store.get_snapshot(session_id=request.session_id, context=opts.context)


def _resolution(
    decision: Decision,
    store: SessionStore | None,
    async_store: AsyncSessionStore | None,
    opts: SessionStoreOptions,
) -> ResolvedSession | ResolutionFailure:
    if decision.error is not None:
        return ResolutionFailure(rule=decision.rule, error=decision.error)
    assert decision.session_id is not None
    session = Session._checked(decision.session_id, decision.state, decision.snapshot, store, async_store, opts.context)
    assert decision.source is not None
    return _resolved(decision.rule, session, decision.snapshot, decision.source)


_SLOTS = tuple(slot_setter(ResolvedSession, name) for name in ("rule", "session", "snapshot", "source", "error"))


def _resolved(
    rule: str, session: Session, snapshot: SessionSnapshot | None, source: ResolutionSource
) -> ResolvedSession:
    """``ResolvedSession(rule=..., session=..., snapshot=..., source=...)``, its slots set through their
    descriptors (half the frozen class's own ``__init__``, on every resolution; it has no validators)."""
    made = object.__new__(ResolvedSession)
    set_rule, set_session, set_snapshot, set_source, set_error = _SLOTS
    set_rule(made, rule)
    set_session(made, session)
    set_snapshot(made, snapshot)
    set_source(made, source)
    set_error(made, None)
    return made
