"""One face for sync and async stores, capability detection, and fault injection for R15/R16.

The runner talks to every store through :class:`StoreHandle`, which awaits
what needs awaiting, so one runner serves blocking and async stores alike.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.model.wire import from_wire
from genkit_sessions.stores.protocol import Context
from genkit_sessions_conformance.cases import CAPABILITY_METHODS

__all__ = [
    "METHOD_CAPABILITIES",
    "StoreHandle",
    "context_for",
    "context_of",
    "detect_capabilities",
    "fault_error",
    "is_store",
    "open_store",
    "with_fault",
]

METHOD_CAPABILITIES: dict[str, str] = {name: method for name, method in CAPABILITY_METHODS.items() if method}
"""Capability name -> the optional store method that provides it. ``tenancy`` is probed instead."""


def context_for(tenant: str | None) -> Context:
    """The request context a case's tenant stands for (None for the default tenant)."""
    return None if tenant is None else {"tenant": tenant}


def context_of(spec: Mapping[str, Any]) -> Context:
    """The request context of a case's step or resolve spec: its raw ``context`` when it has one (to
    hand a store a context it must refuse), else the one its ``tenant`` stands for."""
    if "context" in spec:
        return cast(Context, spec["context"])
    return context_for(spec.get("tenant"))


class StoreHandle:
    """A store seen through coroutines, whether its methods are blocking or async."""

    def __init__(self, store: Any, *, factory: Any = None, capabilities: Mapping[str, bool] | None = None) -> None:
        self.store = store
        self.is_async = inspect.iscoroutinefunction(getattr(store, "get_snapshot", None))
        self.factory = factory
        """The factory the store came from (its ``linearizable`` and ``share`` attributes, if any)."""
        self.capabilities: Mapping[str, bool] = capabilities or {}

    def has(self, method: str) -> bool:
        """True when the store offers ``method``."""
        return callable(getattr(self.store, method, None))

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method``, awaiting its result when it is awaitable."""
        result = getattr(self.store, method)(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def is_store(value: object) -> bool:
    """True when ``value`` has the two methods every store has: ``get_snapshot`` and ``save_snapshot``."""
    return callable(getattr(value, "get_snapshot", None)) and callable(getattr(value, "save_snapshot", None))


def _factory_name(factory: Callable[[], Any]) -> str:
    module = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None) or repr(factory)
    return f"{module}:{name}" if module else str(name)


def _not_a_store(factory: Callable[[], Any], got: object, how: str) -> GenkitError:
    return GenkitError(
        Status.INVALID_ARGUMENT,
        f"the store factory {_factory_name(factory)} {how} {type(got).__name__}, which is not a store: a store "
        "has get_snapshot and save_snapshot (genkit_sessions.stores.protocol.SessionStore, or AsyncSessionStore). "
        "Pass a callable that returns a fresh, empty store each time, or a context manager that yields one "
        "(and cleans it up on exit); a class such as InMemorySessionStore is such a callable",
    )


@contextlib.asynccontextmanager
async def open_store(factory: Callable[[], Any]) -> AsyncIterator[Any]:
    """A fresh store from ``factory`` for one case, cleaned up afterwards.

    The factory returns a store (closed afterwards with its ``aclose`` or ``close``, when it has one), or
    a context manager, sync or async, that yields a store: entered before the case, exited after it, so
    a factory can hand out a namespace of one real table and delete what the case wrote. Anything else is
    INVALID_ARGUMENT, raised before any case runs.
    """
    try:
        made = factory()
    except Exception as error:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"calling the store factory {_factory_name(factory)} raised {type(error).__name__}: {error}; "
            "it must return a fresh, empty store when called with no arguments",
        ) from error
    if is_store(made):
        try:
            yield made
        finally:
            await close_store(made)
    elif hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        async with made as store:
            if not is_store(store):
                raise _not_a_store(factory, store, "returned an async context manager that yields")
            yield store
    elif hasattr(made, "__enter__") and hasattr(made, "__exit__"):
        with made as store:
            if not is_store(store):
                raise _not_a_store(factory, store, "returned a context manager that yields")
            yield store
    else:
        raise _not_a_store(factory, made, "returned")


async def detect_capabilities(factory: Callable[[], Any]) -> dict[str, bool]:
    """Which optional capabilities the factory's stores offer.

    Methods are detected by name; tenancy by saving under one tenant and reading
    under another on a store of its own (isolated means supported). A factory that does not
    make stores is INVALID_ARGUMENT (see :func:`open_store`).
    """
    async with open_store(factory) as store:
        handle = StoreHandle(store)
        found = {name: handle.has(method) for name, method in METHOD_CAPABILITIES.items()}
        found["processes"] = callable(getattr(factory, "share", None))
        probe = SessionSnapshot(snapshot_id="conformance-probe", session_id="conformance-probe", created_at="")
        try:
            await handle.call("save_snapshot", "conformance-probe", lambda _: probe, context=context_for("probe-a"))
            leaked = await handle.call("get_snapshot", snapshot_id="conformance-probe", context=context_for("probe-b"))
            own = await handle.call("get_snapshot", snapshot_id="conformance-probe", context=context_for("probe-a"))
            found["tenancy"] = leaked is None and own is not None
        except Exception:
            found["tenancy"] = False
    return found


async def close_store(store: Any) -> None:
    """Close a store that has ``aclose`` or ``close`` (thread pools, clients); an async face without
    either is closed through the blocking store it fronts (``store.sync``). Otherwise do nothing."""
    for target in (store, getattr(store, "sync", None)):
        for name in ("aclose", "close"):
            closer = getattr(target, name, None)
            if callable(closer):
                result = closer()
                if inspect.isawaitable(result):
                    await result
                return


def fault_error(fault: Mapping[str, Any]) -> BaseException:
    """The exception a fault spec stands for: a status-carrying error or a raw backend failure."""
    kind = fault.get("kind", "status")
    message = str(fault.get("message", "injected store failure"))
    if kind == "status":
        return GenkitError(Status(fault["status"]), message)
    if kind == "timeout":
        return TimeoutError(message)
    if kind == "connection":
        return ConnectionError(message)
    if kind == "permission":
        return PermissionError(message)
    if kind == "unexpected":
        return RuntimeError(message)
    raise ValueError(f"unknown fault kind {kind!r}")


class _FaultySync:
    """Wraps a blocking store; every read after the first ``afterReads`` goes wrong as the fault says."""

    def __init__(self, inner: Any, fault: Mapping[str, Any]) -> None:
        self._inner = inner
        self._fault = fault
        self._reads = 0

    def _injected(self) -> tuple[bool, Any]:
        """(True, what to return) when this read is faulty, (False, None) when it reaches the store."""
        self._reads += 1
        if self._reads <= int(self._fault.get("afterReads", 0)):
            return False, None
        if self._fault.get("kind") == "returnSnapshot":
            return True, from_wire(SessionSnapshot, self._fault["snapshot"])
        raise fault_error(self._fault)

    def get_snapshot(self, **kwargs: Any) -> Any:
        faulty, answer = self._injected()
        return answer if faulty else self._inner.get_snapshot(**kwargs)

    def save_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.save_snapshot(*args, **kwargs)


class _FaultyAsync(_FaultySync):
    """The async twin of :class:`_FaultySync`."""

    async def get_snapshot(self, **kwargs: Any) -> Any:
        faulty, answer = self._injected()
        return answer if faulty else await self._inner.get_snapshot(**kwargs)

    async def save_snapshot(self, *args: Any, **kwargs: Any) -> Any:
        return await self._inner.save_snapshot(*args, **kwargs)


def with_fault(handle: StoreHandle, fault: Mapping[str, Any]) -> Any:
    """The handle's store, wrapped so that its reads fail (or return wrong data) as ``fault`` says."""
    return _FaultyAsync(handle.store, fault) if handle.is_async else _FaultySync(handle.store, fault)
