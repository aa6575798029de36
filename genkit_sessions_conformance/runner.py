"""The runner: every case against a fresh store, its outcome judged by the case's ``expect``.

Resolve cases go through :class:`genkit_sessions.SessionResolver` (sync or
async, as the store is); step cases call the store directly; codec cases use
the wire converter alone. A failure message starts with the rule the case pins
(``[S5] ...``), so a broken store is named by the rule it breaks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import enum
import inspect
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, MutableMapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import attrs

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.clock import parse_timestamp
from genkit_sessions.model.frozen_json import thaw
from genkit_sessions.model.types import AgentInit, Message, Part, SessionSnapshot, SessionState, SnapshotStatus
from genkit_sessions.model.wire import converter, from_wire, to_wire
from genkit_sessions.resolver import SessionResolver, SessionStoreOptions
from genkit_sessions.resolver.options import StateValidator
from genkit_sessions.service import (
    AsyncChatMemoryStore,
    AsyncSessionService,
    ChatMemoryStore,
    KeepLastStrategy,
    MessageCountTrigger,
    SessionService,
)
from genkit_sessions.stores.protocol import CallOptions, SessionRecord
from genkit_sessions_conformance.cases import Case, load_cases, select_cases
from genkit_sessions_conformance.match import Mismatch, match
from genkit_sessions_conformance.store_handle import (
    StoreHandle,
    context_for,
    context_of,
    detect_capabilities,
    open_store,
    with_fault,
)

__all__ = ["DEFAULT_CASE_TIMEOUT", "CaseResult", "StoreFactory", "SuiteReport", "run_cases", "run_suite"]

StoreFactory = Callable[[], Any]
"""Returns a fresh, empty store (blocking or async) each time it is called, or a context manager (sync
or async) that yields one and cleans it up on exit (see
:func:`~genkit_sessions_conformance.store_handle.open_store`)."""

_WATCH_TIMEOUT = 10.0
"""How long a watch may take to yield its next status: a polling store's first one opens a client and
reads twice, which on a loaded machine can take seconds."""
_CODEC_TYPES: dict[str, Any] = {
    "SessionSnapshot": SessionSnapshot,
    "SessionState": SessionState,
    "AgentInit": AgentInit,
    "Message": Message,
    "Part": Part,
}


_T = TypeVar("_T")


class CaseFailed(Exception):
    """Internal: a case's outcome differs from its expectation; the message says how."""


@attrs.frozen
class CaseResult:
    """One case's outcome: ``passed``, ``failed`` or ``skipped``, with why."""

    case: Case
    outcome: str
    message: str = ""
    seconds: float = 0.0


@attrs.frozen
class SuiteReport:
    """Every case's result, the capabilities detected, and the profile the suite ran under."""

    store: str
    profile: str
    capabilities: Mapping[str, bool]
    results: tuple[CaseResult, ...]
    seconds: float
    claimed_not_detected: tuple[str, ...] = ()
    linearizable: str = "unknown"
    """Whether the backend under the store is known to be linearizable (``yes``, ``no``, ``unknown``): what
    a failed concurrency case can be blamed on (the factory's ``linearizable`` attribute)."""

    def count(self, outcome: str) -> int:
        """How many cases ended with ``outcome``."""
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        """The failed results, required or not."""
        return tuple(r for r in self.results if r.outcome == "failed")

    @property
    def ok(self) -> bool:
        """True when no required (``must``) case failed."""
        return not any(r.case.level == "must" for r in self.failures)

    def assert_passed(self) -> None:
        """Raise AssertionError listing every failed required case (for a store author's own test)."""
        failed = [r for r in self.failures if r.case.level == "must"]
        if failed:
            lines = "\n".join(f"  {r.case.id}: {r.message}\n      ({r.case.description})" for r in failed)
            raise AssertionError(f"{len(failed)} required conformance case(s) failed against {self.store}:\n{lines}")


# --- expectations -----------------------------------------------------------------------------


def _fail(case: Case, message: str) -> CaseFailed:
    return CaseFailed(f"[{case.rule}] {message}")


def _check(case: Case, what: str, actual: Any, expected: Any, captures: MutableMapping[str, Any]) -> None:
    try:
        match(actual, expected, captures)
    except Mismatch as mismatch:
        raise _fail(case, f"{what}: {mismatch}") from None


def _check_raised(case: Case, what: str, error: BaseException, expected: Mapping[str, Any]) -> None:
    if not isinstance(error, GenkitError):
        raise _fail(case, f"{what} raised a raw {type(error).__name__} ({error}) instead of a status-carrying error")
    if error.status.value != expected["status"]:
        raise _fail(case, f"{what} raised {error.status.value} ({error.message}), expected {expected['status']}")
    if "reason" in expected and error.reason != expected["reason"]:
        raise _fail(case, f"{what} raised reason {error.reason}, expected {expected['reason']} ({error.message})")
    for text in expected.get("messageContains", ()):
        if text not in error.message:
            raise _fail(case, f"{what} raised a message without {text!r}: {error.message!r}")
    if "details" in expected:
        _check(case, f"{what} error details", thaw(error.details), expected["details"], {})


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}...({len(str(value))} chars)"


def _describe(value: Any) -> str:
    if isinstance(value, SessionSnapshot):
        return f"snapshot {_short(value.snapshot_id)} ({value.effective_status.value})"
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


# --- resolve cases ----------------------------------------------------------------------------


def _validator(spec: Mapping[str, Any] | None) -> StateValidator | None:
    """The named validators a case can configure (see IMPLEMENTING.md)."""
    if spec is None:
        return None
    name = spec["validator"]
    if name == "requireKeys":
        keys = list(spec["keys"])

        def require_keys(custom: Any) -> list[str]:
            if not isinstance(custom, Mapping):
                return [f"custom state must be an object with keys {keys}"]
            return [f"missing key {key!r}" for key in keys if key not in custom]

        return require_keys
    if name == "rejectAll":
        finding = str(spec.get("finding", "rejected"))
        return lambda custom: [finding]
    if name == "acceptAll":
        return lambda custom: []
    if name == "raises":
        message = str(spec.get("message", "invalid state"))

        def raises(custom: Any) -> list[str]:
            raise ValueError(message)

        return raises
    raise ValueError(f"unknown validator {name!r}")


async def _seed(case: Case, handle: StoreHandle, capabilities: Mapping[str, bool]) -> list[tuple[str | None, str]]:
    """Put the case's ``given`` snapshots in the store; returns (tenant, snapshot id) of each."""
    given = case.data.get("given") or {}
    groups: list[tuple[str | None, Sequence[Any]]] = [(None, given.get("snapshots", []))]
    groups += [(tenant, snaps) for tenant, snaps in (given.get("tenants") or {}).items()]
    seeded: list[tuple[str | None, str]] = []
    for tenant, snaps in groups:
        if not snaps:
            continue
        snapshots = [from_wire(SessionSnapshot, s) for s in snaps]
        context = context_for(tenant)
        try:
            if capabilities.get("restore"):
                await handle.call("restore_snapshots", snapshots, context=context)
            else:
                for snapshot in snapshots:
                    await handle.call("save_snapshot", snapshot.snapshot_id, _constant(snapshot), context=context)
        except Exception as error:
            raise _fail(case, f"the store refused the case's data ({type(error).__name__}: {error})") from None
        seeded += [(tenant, s.snapshot_id) for s in snapshots]
    return seeded


def _constant(snapshot: SessionSnapshot) -> Callable[[Any], SessionSnapshot]:
    return lambda _existing: snapshot


async def _read_back(handle: StoreHandle, seeded: Iterable[tuple[str | None, str]]) -> list[Any]:
    found = []
    for tenant, snapshot_id in seeded:
        snapshot = await handle.call("get_snapshot", snapshot_id=snapshot_id, context=context_for(tenant))
        found.append(None if snapshot is None else to_wire(snapshot))
    return found


async def _run_resolve(case: Case, handle: StoreHandle, profile: str, capabilities: Mapping[str, bool]) -> None:
    spec = case.data["resolve"]
    expect = case.data["expect"]
    seeded = await _seed(case, handle, capabilities)
    before = await _read_back(handle, seeded)
    server_managed = bool(spec["serverManaged"])
    with_store = bool(spec.get("withStore", server_managed))
    store: Any = handle.store if with_store else None
    if store is not None and "fault" in spec:
        store = with_fault(handle, spec["fault"])
    now = parse_timestamp(spec.get("now", "2026-01-01T00:00:00Z"))
    opts = SessionStoreOptions(
        context=context_of(spec),
        state_validator=_validator(spec.get("validator")),
        resume_policy=profile,
        heartbeat_timeout=timedelta(seconds=float(spec.get("heartbeatTimeoutSeconds", 60))),
        clock=lambda: now,
    )
    init_json = spec.get("init")
    init = None if init_json is None else from_wire(AgentInit, init_json)
    try:
        if store is not None and handle.is_async:
            resolution = await SessionResolver.aresolve(store, server_managed, init, opts)
        else:
            resolution = SessionResolver.resolve(store, server_managed, init, opts)
    except Exception as error:
        if "raise" not in expect:
            raise _fail(case, f"resolve raised {error!r}, expected {_expected_outcome(expect)}") from None
        _check_raised(case, "resolve", error, expect["raise"])
    else:
        if "raise" in expect:
            got = f"failure {resolution.error.status}" if resolution.error else f"a {resolution.source} session"
            raise _fail(case, f"resolve returned {got}, expected it to raise {expect['raise']['status']}")
        captures: dict[str, Any] = {}
        if "failure" in expect:
            if resolution.error is None:
                raise _fail(case, f"resolve returned a {resolution.source} session, expected a failure")
            _check(case, "failure", to_wire(resolution.error), expect["failure"], captures)
        else:
            if resolution.error is not None:
                info = resolution.error
                raise _fail(case, f"resolve failed with {info.status}: {info.message}; expected a session")
            assert resolution.session is not None
            session = resolution.session
            actual = {
                "source": str(resolution.source),
                "sessionId": session.id,
                "parentSnapshotId": session.origin.snapshot_id if session.origin is not None else None,
                "state": to_wire(session.state),
                "messageCount": len(session.messages),
            }
            _check(case, "session", actual, expect["session"], captures)
    after = await _read_back(handle, seeded)
    if after != before:
        changed = [sid for (_, sid), a, b in zip(seeded, after, before, strict=False) if a != b]
        raise _fail(case, f"resolving changed what the store holds (snapshots {changed})")


def _expected_outcome(expect: Mapping[str, Any]) -> str:
    if "failure" in expect:
        return f"a failure with {expect['failure'].get('status')}"
    return "a session"


# --- codec cases ------------------------------------------------------------------------------


def _run_codec(case: Case) -> None:
    spec = case.data["codec"]
    expect = case.data["expect"]
    cls = _CODEC_TYPES[spec["type"]]
    try:
        decoded = from_wire(cls, spec["json"])
    except Exception as error:
        if "raise" not in expect:
            raise _fail(case, f"decoding raised {error!r}") from None
        _check_raised(case, "decoding", error, expect["raise"])
        return
    if "raise" in expect:
        raise _fail(case, f"decoding succeeded, expected {expect['raise']['status']}")
    encoded = converter.unstructure(decoded, cls)
    if expect.get("roundTrip"):
        _check(case, "round trip", encoded, {"$exact": spec["json"]}, {})
    if "wire" in expect:
        _check(case, "encoded", encoded, expect["wire"], {})


# --- step cases -------------------------------------------------------------------------------


class CaseDataInvalid(CaseFailed):
    """The case's own data (a snapshot or message it hands over) does not decode: the case, not the store, is
    wrong, so no expectation of the step may be met by it (an expected INVALID_ARGUMENT included)."""


def _decoded(cls: type[_T], data: Any) -> _T:
    try:
        return from_wire(cls, data)
    except GenkitError as error:
        raise CaseDataInvalid(
            f"the case's own {cls.__name__} data does not decode ({error.message}); fix the case"
        ) from None


def _snapshot_json(spec: Mapping[str, Any], snapshot_id: str | None = None) -> SessionSnapshot:
    """A case's snapshot JSON decoded, ``snapshot_id`` filling a missing id; no ``createdAt`` stays none given."""
    data = dict(spec) if snapshot_id is None else {"snapshotId": snapshot_id, **spec}
    stamped = "createdAt" in data
    if not stamped:
        data["createdAt"] = "1970-01-01T00:00:00Z"
    snapshot = _decoded(SessionSnapshot, data)
    return snapshot if stamped else attrs.evolve(snapshot, created_at="")


def _mutator(spec: Mapping[str, Any], snapshot_id: str, seen: list[Any]) -> Callable[[Any], Any]:
    """A declarative mutator: write, update, skip, fail, incrementCustom, returns or async (see IMPLEMENTING.md)."""
    if "async" in spec:  # a coroutine function, which S3 refuses: its call gives an awaitable, not a snapshot

        async def mutate_async(existing: SessionSnapshot | None) -> SessionSnapshot | None:
            seen.append(None if existing is None else to_wire(existing))
            return _snapshot_json(spec["async"], snapshot_id)

        return mutate_async

    def mutate(existing: SessionSnapshot | None) -> Any:  # Any: a "returns" mutator gives what it was told to
        seen.append(None if existing is None else to_wire(existing))
        if "write" in spec:
            return _snapshot_json(spec["write"], snapshot_id)
        if "update" in spec:
            if existing is None:
                return None
            merged = {**to_wire(existing), **spec["update"]}
            return _decoded(SessionSnapshot, {k: v for k, v in merged.items() if v is not None})
        if spec.get("skip"):
            return None
        if "returns" in spec:  # a value that is not a snapshot, as it is: S3 refuses it
            return spec["returns"]
        if "fail" in spec:
            raise GenkitError(Status(spec["fail"]["status"]), str(spec["fail"].get("message", "mutator failed")))
        if "incrementCustom" in spec:
            key = spec["incrementCustom"]
            if existing is None:
                return _snapshot_json(
                    {"sessionId": spec["sessionId"], "status": "pending", "state": {"custom": {key: 1}}}, snapshot_id
                )
            custom = thaw(existing.state.custom) if existing.state is not None else {}
            custom = dict(custom or {})
            custom[key] = int(custom.get(key, 0)) + 1
            state = attrs.evolve(existing.state or SessionState(), custom=custom)
            return attrs.evolve(existing, state=state)
        raise ValueError(f"unknown mutator {dict(spec)!r}")

    return mutate


def _tamper(value: Any, depth: int = 0) -> None:
    """Try every ordinary way a caller could change what a read returned; ignore refusals."""
    if depth > 6:
        return
    if isinstance(value, MutableMapping):
        for key in list(value):
            _tamper(value[key], depth + 1)
        with contextlib.suppress(Exception):
            value["conformance-tampered"] = True
    elif isinstance(value, list):
        for item in value:
            _tamper(item, depth + 1)
        with contextlib.suppress(Exception):
            value.append("conformance-tampered")
    elif isinstance(value, (tuple, frozenset)):
        for item in value:
            _tamper(item, depth + 1)
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            _tamper(getattr(value, field.name), depth + 1)
        for field in attrs.fields(type(value)):
            try:
                if field.name in ("status",):
                    setattr(value, field.name, SnapshotStatus.FAILED)
                elif field.name in ("snapshot_id", "session_id", "text", "created_at"):
                    setattr(value, field.name, "conformance-tampered")
            except Exception:
                pass
    elif hasattr(value, "__dict__") and not isinstance(value, (enum.Enum, type)) and not callable(value):
        # Plain data objects only: an enum member leads to its class, and tampering with a
        # class (its member map, say) would corrupt the process, not the store under test.
        for sub in list(vars(value).values()):
            _tamper(sub, depth + 1)


async def _watch(
    case: Case, handle: StoreHandle, step: Mapping[str, Any], captures: MutableMapping[str, Any]
) -> list[str]:
    context = context_of(step)
    stream: Any = handle.store.watch_status(step["snapshotId"], context=context)
    if not hasattr(stream, "__anext__"):
        stream = await stream
    iterator: AsyncIterator[Any] = stream
    statuses: list[str] = []
    try:
        try:
            first = await asyncio.wait_for(iterator.__anext__(), _WATCH_TIMEOUT)
        except (StopAsyncIteration, asyncio.TimeoutError):
            raise _fail(
                case, f"watch {_short(step['snapshotId'])} yielded no status within {_WATCH_TIMEOUT} s"
            ) from None
        statuses.append(str(SnapshotStatus(first)))
        for inner in step.get("during", ()):
            await _run_step(case, handle, inner, captures)
        while statuses[-1] not in ("completed", "failed", "aborted"):
            try:
                status = await asyncio.wait_for(iterator.__anext__(), _WATCH_TIMEOUT)
            except (StopAsyncIteration, asyncio.TimeoutError):
                break
            statuses.append(str(SnapshotStatus(status)))
    finally:
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()
    return statuses


async def _concurrent_saves(handle: StoreHandle, step: Mapping[str, Any]) -> Any:
    count = int(step["count"])
    context = context_of(step)
    snapshot_id = step["snapshotId"]

    def mutator() -> Callable[[Any], Any]:
        return _mutator(step["mutator"], snapshot_id, [])

    if handle.is_async:
        await asyncio.gather(
            *(handle.call("save_snapshot", snapshot_id, mutator(), context=context) for _ in range(count))
        )
    else:
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(count, 8)) as pool:
            await asyncio.gather(
                *(
                    loop.run_in_executor(
                        pool, lambda: handle.store.save_snapshot(snapshot_id, mutator(), context=context)
                    )
                    for _ in range(count)
                )
            )
    return await handle.call("get_snapshot", snapshot_id=snapshot_id, context=context)


def _record_json(record: SessionRecord | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {
        "id": record.id,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
        "version": record.version,
        "leafId": record.leaf_id,
        "expiresAt": record.expires_at,
        "metadata": dict(record.metadata),
    }


async def _service(handle: StoreHandle, step: Mapping[str, Any]) -> Any:
    """One call of the session service (contract section 6) on the store; the answer as plain JSON."""
    call = step["call"]
    args = dict(step.get("args", {}))
    context = context_of(step)
    service: Any = AsyncSessionService(handle.store) if handle.is_async else SessionService(handle.store)

    async def invoke(method: str, *positional: Any, **keywords: Any) -> Any:
        result = getattr(service, method)(*positional, context=context, **keywords)
        return (await result) if inspect.isawaitable(result) else result

    def creation() -> dict[str, Any]:
        found: dict[str, Any] = {"metadata": args.get("metadata"), "sliding": bool(args.get("sliding", False))}
        if "ttlSeconds" in args:
            found["ttl"] = timedelta(seconds=args["ttlSeconds"])
        return found

    def messages() -> list[Message]:
        return [_decoded(Message, m) for m in args["messages"]]

    if call == "sleep":
        await asyncio.sleep(float(args["seconds"]))
        return None
    if call == "create":
        return _record_json(await invoke("create", args.get("sessionId"), **creation()))
    if call == "findOrCreate":
        return _record_json(await invoke("find_or_create", args["sessionId"], **creation()))
    if call == "concurrentFindOrCreate":
        count = int(args["count"])
        if handle.is_async:
            found = await asyncio.gather(*(invoke("find_or_create", args["sessionId"]) for _ in range(count)))
        else:
            barrier = threading.Barrier(count)

            def first_use() -> Any:
                barrier.wait()
                return service.find_or_create(args["sessionId"], context=context)

            with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
                found = list(pool.map(lambda _: first_use(), range(count)))
        return {"returned": len(found), "distinct": len({(r.id, r.created_at) for r in found})}
    if call == "findById":
        return _record_json(await invoke("find_by_id", args["sessionId"]))
    if call == "findByMetadata":
        pages: list[list[str]] = []
        token: str | None = args.get("pageToken")
        while True:
            page = await invoke(
                "find_by_metadata", args["name"], args["value"], limit=args.get("limit", 100), page_token=token
            )
            pages.append([r.id for r in page.records])
            token = page.next_page_token
            if token is None:
                return {"pages": pages, "ids": [i for p in pages for i in p]}
    if call == "setMetadata":
        return _record_json(await invoke("set_metadata", args["sessionId"], args["name"], args.get("value")))
    if call == "delete":
        return await invoke("delete", args["sessionId"])
    if call == "deleteExpired":
        before = datetime.now(timezone.utc) + timedelta(seconds=float(args.get("afterSeconds", 0)))
        return await invoke("delete_expired", before)
    if call == "version":
        return await invoke("version", args["sessionId"])
    if call == "append":
        appended = await invoke("append", args["sessionId"], messages(), expected_version=args.get("expectedVersion"))
        return {"ok": appended.ok, "version": appended.version}
    if call in ("getMessages", "getActiveMessages"):
        method = "get_messages" if call == "getMessages" else "get_active_messages"
        return [m.text for m in await invoke(method, args["sessionId"])]
    if call == "compact":
        given = args.get("summary", "summary")
        summary: str | list[Any] = [] if given == [] else str(given)  # []: a summarizer that gives no message
        compacted = await invoke(
            "compact",
            args["sessionId"],
            MessageCountTrigger(int(args["maxMessages"])),
            KeepLastStrategy(int(args["keep"]), lambda _: summary),
            max_attempts=int(args.get("maxAttempts", 3)),
        )
        return {
            "changed": compacted.changed,
            "covered": compacted.covered,
            "kept": compacted.kept,
            "summary": [m.text for m in compacted.summary],
        }
    if call == "addInteraction":
        first = args.get("userMessage")
        added = await invoke(
            "add_interaction",
            args["sessionId"],
            None if first is None else _decoded(Message, first),
            messages(),
            expected_version=args.get("expectedVersion"),
        )
        return {"ok": added.ok, "version": added.version}
    if call == "readWindow":
        window = await invoke(
            "read_window", args["sessionId"], max_messages=args.get("maxMessages"), max_bytes=args.get("maxBytes")
        )
        return {"texts": [m.text for m in window.messages], "truncated": window.truncated}
    if call == "iterHistory":
        stream = service.iter_history(
            args.get("sessionId"),
            snapshot_id=args.get("snapshotId"),
            chunk_messages=int(args.get("chunkMessages", 100)),
            full=bool(args.get("full", False)),
            context=context,
        )
        chunks = [c async for c in stream] if handle.is_async else list(stream)
        return {"chunks": [len(c) for c in chunks], "texts": [m.text for c in chunks for m in c]}
    if call == "getHistory":
        return [m.text for m in await invoke("get_history", args["sessionId"], max_messages=args.get("maxMessages"))]
    if call in ("memoryGet", "memoryUpdate", "memoryDelete"):
        memory: Any = AsyncChatMemoryStore(handle.store) if handle.is_async else ChatMemoryStore(handle.store)
        verbs = {"memoryGet": "get_messages", "memoryUpdate": "update_messages", "memoryDelete": "delete_messages"}
        extra = (messages(),) if call == "memoryUpdate" else ()
        result = getattr(memory, verbs[call])(args["memoryId"], *extra, context=context)
        result = (await result) if inspect.isawaitable(result) else result
        return [m.text for m in result] if call == "memoryGet" else None
    if call == "fork":
        snapshot_id = args.get("snapshotId")
        if "leafOf" in args:
            source = await invoke("find_by_id", args["leafOf"])
            snapshot_id = source.leaf_id if source is not None else "absent-leaf"
        forked = await invoke(
            "fork", snapshot_id, new_session_id=args.get("newSessionId"), metadata=args.get("metadata")
        )
        return _record_json(forked)
    raise ValueError(f"unknown service call {call!r}")


async def _perform(
    case: Case, handle: StoreHandle, step: Mapping[str, Any], captures: MutableMapping[str, Any], seen: list[Any]
) -> Any:
    op = step["op"]
    context = context_of(step)
    if op == "get":
        kwargs = {k: step[v] for k, v in (("snapshot_id", "snapshotId"), ("session_id", "sessionId")) if v in step}
        return await handle.call("get_snapshot", context=context, **kwargs)
    if op == "save":
        mutator = _mutator(step["mutator"], step["snapshotId"], seen)
        if "expectedVersion" in step:  # a compare-and-set on the session's version (capability sessions)
            options = CallOptions(expected_version=step["expectedVersion"])
            return await handle.call("save_snapshot", step["snapshotId"], mutator, context=context, options=options)
        return await handle.call("save_snapshot", step["snapshotId"], mutator, context=context)
    if op == "list":
        listed = await handle.call("list_snapshots", step["sessionId"], context=context)
        return [s.snapshot_id for s in listed]
    if op == "delete":
        return await handle.call("delete_session", step["sessionId"], context=context)
    if op == "abort":
        before = await handle.call("abort_snapshot", step["snapshotId"], context=context)
        return None if before is None else str(SnapshotStatus(before))
    if op == "heartbeat":
        return await handle.call("heartbeat", step["snapshotId"], context=context)
    if op == "watch":
        return await _watch(case, handle, step, captures)
    if op == "concurrentSaves":
        return await _concurrent_saves(handle, step)
    if op == "race":
        return await _race(case, handle, step)
    if op == "restore":
        # as a mutator's are: a snapshot without createdAt reaches the store (which must refuse it)
        snapshots = [_snapshot_json(s) for s in step["snapshots"]]
        return await handle.call("restore_snapshots", snapshots, context=context)
    if op == "record":
        return _record_json(await handle.call("get_session_record", step["sessionId"], context=context))
    if op == "create":  # the store's own create_session (V1), with the new session's first snapshots if given
        keywords: dict[str, Any] = {"metadata": step.get("metadata")}
        if "snapshots" in step:
            keywords["snapshots"] = [_snapshot_json(s) for s in step["snapshots"]]
        return _record_json(await handle.call("create_session", step["sessionId"], context=context, **keywords))
    if op == "service":
        return await _service(handle, step)
    if op == "tamper":
        kwargs = {"snapshot_id": step["snapshotId"]} if "snapshotId" in step else {"session_id": step["sessionId"]}
        first = await handle.call("get_snapshot", context=context, **kwargs)
        if first is None:
            raise _fail(case, f"tamper: nothing to read at {kwargs}")
        original = to_wire(first)
        _tamper(first)
        again = await handle.call("get_snapshot", context=context, **kwargs)
        if again is None or to_wire(again) != original:
            raise _fail(case, "a caller changed what the store holds by modifying what a read returned")
        return again
    raise ValueError(f"unknown op {op!r}")


# --- concurrency cases (conformance/concurrency.py) --------------------------------------------------

_RACE_CASE = Case(id="race", area="concurrency", rules=("S3",), description="a racing writer", action="steps")


async def perform_step(handle: StoreHandle, step: Mapping[str, Any]) -> Any:
    """One step's raw result on ``handle``, raising what the store raised (a racing writer's step)."""
    return await _perform(_RACE_CASE, handle, step, {}, [])


async def _race(case: Case, handle: StoreHandle, step: Mapping[str, Any]) -> None:
    from genkit_sessions_conformance.concurrency import linearizable_label, run_race, seed_groups

    opener = None
    if step.get("processes"):
        opener = handle.factory.share(handle.store)
    problem = await run_race(
        perform_step,
        handle,
        step,
        seed_groups(case.data.get("given") or {}, context_for),
        context_of(step),
        bool(handle.capabilities.get("records")),
        opener,
    )
    if problem is not None:
        label = linearizable_label(handle.factory)
        raise _fail(case, f"{problem} (backend known to be linearizable: {label})")


async def _run_step(
    case: Case, handle: StoreHandle, step: Mapping[str, Any], captures: MutableMapping[str, Any]
) -> None:
    op = step["op"]
    if op == "service":
        args = step.get("args", {})
        target = args.get("sessionId", args.get("leafOf", args.get("snapshotId")))
        op = f"service {step['call']}"
    else:
        target = step.get("snapshotId", step.get("sessionId"))
    what = f"step {op}" if target is None else f"step {op} {_short(target)}"
    expect = step.get("expect", {})
    seen: list[Any] = []
    try:
        result = await _perform(case, handle, step, captures, seen)
    except CaseDataInvalid as invalid:
        raise _fail(case, f"{what} could not run: {invalid}") from None
    except CaseFailed:
        raise
    except Exception as error:
        if "raise" not in expect:
            if not isinstance(error, GenkitError):
                raise _fail(case, f"{what} raised a raw {type(error).__name__} ({error}) [S12]") from None
            raise _fail(case, f"{what} raised {error.status.value}: {error.message}") from None
        _check_raised(case, what, error, expect["raise"])
        return
    if "raise" in expect:
        raise _fail(case, f"{what} returned {_describe(result)}, expected it to raise {expect['raise']['status']}")
    mutator_spec = step.get("mutator")
    if isinstance(mutator_spec, Mapping) and "sees" in mutator_spec:
        _check(case, f"{what}: what the mutator saw", seen[-1] if seen else None, mutator_spec["sees"], captures)
    if expect.get("none") and result is not None:
        raise _fail(case, f"{what} returned {_describe(result)}, expected none")
    if "snapshot" in expect:
        if not isinstance(result, SessionSnapshot):
            raise _fail(case, f"{what} returned {_describe(result)}, expected a snapshot")
        _check(case, what, to_wire(result), expect["snapshot"], captures)
    if "value" in expect:
        _check(case, what, result, {"$exact": expect["value"]}, captures)
    if "snapshotIds" in expect:
        _check(case, what, result, expect["snapshotIds"], captures)
    if "statuses" in expect:
        _check(case, what, result, expect["statuses"], captures)
    if "firstStatus" in expect:
        _check(case, f"{what} (first status)", result[0] if result else None, expect["firstStatus"], captures)
    if "record" in expect:
        if not isinstance(result, Mapping):
            raise _fail(case, f"{what} returned {_describe(result)}, expected a session record")
        _check(case, what, result, expect["record"], captures)
    if "lastStatus" in expect:
        _check(case, f"{what} (last status)", result[-1] if result else None, expect["lastStatus"], captures)


async def _run_steps(case: Case, handle: StoreHandle, capabilities: Mapping[str, bool]) -> None:
    await _seed(case, handle, capabilities)
    captures: dict[str, Any] = {}
    for step in case.data["steps"]:
        await _run_step(case, handle, step, captures)


# --- the suite --------------------------------------------------------------------------------


def _skip_reason(case: Case, profile: str, capabilities: Mapping[str, bool]) -> str | None:
    if case.profile is not None and case.profile != profile:
        return f"profile {case.profile} only"
    missing = sorted(c for c in case.requires if not capabilities.get(c))
    if missing:
        return f"store lacks {', '.join(missing)}"
    return None


DEFAULT_CASE_TIMEOUT = 60.0
"""Seconds a case (or the capability probe) may take before it is judged hung (``--case-timeout``)."""


def _timeout_hint(timeout: float) -> str:
    return (
        f"did not finish within the per-case timeout of {timeout:g} s (--case-timeout SECONDS on the command "
        "line, case_timeout= in run_suite, run_cases and conformance_tests); a store call may never return: "
        "make it fail or time out with a status (DEADLINE_EXCEEDED), or give a larger timeout if it is only slow"
    )


async def _in_own_thread(work: Callable[[], Any], timeout: float) -> Any:
    """Run the coroutine ``work()`` makes on an event loop of its own in a daemon thread, waiting at most
    ``timeout`` seconds (TimeoutError after). A store that blocks (a sync call that never returns) or
    awaits forever then costs one abandoned thread, never the run; the caller's loop stays free, so a
    KeyboardInterrupt still stops the run."""
    outcome: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        outcome.set_running_or_notify_cancel()
        try:
            outcome.set_result(asyncio.run(work()))
        except BaseException as error:  # handed to the waiting loop, which re-raises it
            outcome.set_exception(error)

    threading.Thread(target=run, name="conformance case", daemon=True).start()
    return await asyncio.wait_for(asyncio.wrap_future(outcome), timeout)


async def _judge(case: Case, factory: StoreFactory, profile: str, capabilities: Mapping[str, bool]) -> CaseResult:
    started = time.perf_counter()
    try:
        if case.action == "codec":
            _run_codec(case)
        else:
            async with open_store(factory) as store:
                handle = StoreHandle(store, factory=factory, capabilities=capabilities)
                if case.action == "resolve":
                    await _run_resolve(case, handle, profile, capabilities)
                else:
                    await _run_steps(case, handle, capabilities)
    except CaseFailed as failed:
        return CaseResult(case, "failed", str(failed), time.perf_counter() - started)
    except asyncio.CancelledError as error:  # nothing cancels a case's own loop: the store raised it
        message = (
            f"[{case.rule}] the store raised asyncio.CancelledError ({error or 'no message'}) though nothing "
            "cancelled the call; let a cancellation through only when the caller cancelled, and report a failure "
            "as a status-carrying error (S12)"
        )
        return CaseResult(case, "failed", message, time.perf_counter() - started)
    except Exception as error:
        message = f"[{case.rule}] the case could not run: {type(error).__name__}: {error}"
        return CaseResult(case, "failed", message, time.perf_counter() - started)
    return CaseResult(case, "passed", "", time.perf_counter() - started)


async def _run_case(
    case: Case,
    factory: StoreFactory,
    profile: str,
    capabilities: Mapping[str, bool],
    timeout: float = DEFAULT_CASE_TIMEOUT,
) -> CaseResult:
    reason = _skip_reason(case, profile, capabilities)
    if reason is not None:
        return CaseResult(case, "skipped", reason)
    started = time.perf_counter()
    try:
        result: CaseResult = await _in_own_thread(lambda: _judge(case, factory, profile, capabilities), timeout)
    except (asyncio.TimeoutError, TimeoutError):
        return CaseResult(
            case, "failed", f"[{case.rule}] the case {_timeout_hint(timeout)}", time.perf_counter() - started
        )
    return result


async def detect_within(factory: StoreFactory, timeout: float = DEFAULT_CASE_TIMEOUT) -> dict[str, bool]:
    """:func:`detect_capabilities`, bounded by ``timeout`` seconds (DEADLINE_EXCEEDED after)."""
    try:
        found: dict[str, bool] = await _in_own_thread(lambda: detect_capabilities(factory), timeout)
    except (asyncio.TimeoutError, TimeoutError):
        raise GenkitError(
            Status.DEADLINE_EXCEEDED, f"the capability probe (a save and two reads) {_timeout_hint(timeout)}"
        ) from None
    return found


def _check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise GenkitError(
            Status.INVALID_ARGUMENT, f"case_timeout {timeout!r}: give a number of seconds above 0 (default 60)"
        )
    return float(timeout)


async def run_cases(
    factory: StoreFactory,
    cases: Sequence[Case],
    *,
    profile: str = "reject",
    store_name: str = "store",
    claims: Iterable[str] = (),
    detected: Mapping[str, bool] | None = None,
    on_result: Callable[[int, int, CaseResult], None] | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
) -> SuiteReport:
    """Run ``cases`` against fresh stores from ``factory``; ``on_result`` sees each result as it comes.

    Each case runs on an event loop of its own in a thread of its own, so a case that takes longer than
    ``case_timeout`` seconds fails with a message naming the timeout, and the run goes on; an
    ``asyncio.CancelledError`` a store raises fails its case. A KeyboardInterrupt still stops the run.

    ``claims`` names capabilities the store is meant to have: their cases run even when detection
    does not find them (a store that ignores tenants then fails the tenancy cases instead of skipping them).
    ``detected`` passes capabilities found earlier, to skip detecting them again.
    """
    claims = frozenset(claims)
    case_timeout = _check_timeout(case_timeout)
    if not cases:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            "no conformance case was selected, so nothing would be judged; check the areas and case ids "
            f"asked for (areas: {', '.join(sorted({c.area for c in load_cases()}))})",
        )
    started = time.perf_counter()
    if detected is None:
        detected = await detect_within(factory, case_timeout)
    capabilities = {name: found or name in claims for name, found in detected.items()}
    results: list[CaseResult] = []
    for index, case in enumerate(cases, 1):
        result = await _run_case(case, factory, profile, capabilities, case_timeout)
        results.append(result)
        if on_result is not None:
            on_result(index, len(cases), result)
    missing = tuple(sorted(name for name in claims if not detected.get(name)))
    from genkit_sessions_conformance.concurrency import linearizable_label

    return SuiteReport(
        store_name,
        profile,
        capabilities,
        tuple(results),
        time.perf_counter() - started,
        missing,
        linearizable_label(factory),
    )


def run_suite(
    factory: StoreFactory,
    *,
    profile: str = "reject",
    areas: Iterable[str] | None = None,
    ids: Sequence[str] | None = None,
    store_name: str | None = None,
    claims: Iterable[str] = (),
    on_result: Callable[[int, int, CaseResult], None] | None = None,
    case_timeout: float = DEFAULT_CASE_TIMEOUT,
) -> SuiteReport:
    """Run the shipped cases against ``factory``'s stores and return the report.

    An area or an id in ``areas`` or ``ids`` that names no case is INVALID_ARGUMENT (naming it and
    what exists), never a run that passes on fewer cases.

    The entry point for a store author's own test::

        def test_my_store_conforms():
            conformance.run_suite(MyStore).assert_passed()
    """
    cases = select_cases(areas, ids)
    name = store_name or str(getattr(factory, "__qualname__", repr(factory)))
    return asyncio.run(
        run_cases(
            factory,
            cases,
            profile=profile,
            store_name=name,
            claims=claims,
            on_result=on_result,
            case_timeout=case_timeout,
        )
    )
