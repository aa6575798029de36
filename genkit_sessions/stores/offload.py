"""One async face for any blocking store, on an executor the caller hands over.

Blocking I/O is never moved to a thread behind the caller's back (contract rule M4):
a store whose own async face needs a library that is not installed says so
with UNIMPLEMENTED (reason ASYNC_NOT_SUPPORTED), and the caller who accepts a
thread pool wraps the store explicitly::

    pool = ThreadPoolExecutor(max_workers=8)
    face = OffloadedAsyncStore(store, pool)   # every call runs on ``pool``
    await SessionResolver.aresolve(face, True, init)

The caller owns the executor and shuts it down.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.types import Message, SessionSnapshot, SnapshotStatus
from genkit_sessions.stores.protocol import (
    CallOptions,
    Context,
    HistoryPlan,
    HistoryWindow,
    Mutator,
    SessionPage,
    SessionRecord,
)

__all__ = ["OffloadedAsyncStore", "watch_by_polling"]

T = TypeVar("T")


def _require_blocking_store(store: Any) -> None:
    """INVALID_ARGUMENT unless ``store`` is a blocking store: its reads and writes are plain methods."""
    methods = [getattr(store, name, None) for name in ("get_snapshot", "save_snapshot")]
    if all(callable(method) and not inspect.iscoroutinefunction(method) for method in methods):
        return
    kind = "an async face" if any(inspect.iscoroutinefunction(method) for method in methods) else "not a store"
    raise GenkitError(
        Status.INVALID_ARGUMENT,
        f"OffloadedAsyncStore wraps a blocking store (plain get_snapshot and save_snapshot), "
        f"got {type(store).__name__}, which is {kind}; pass the blocking store itself "
        "(an async face is awaited directly, with no executor)",
    )


class OffloadedAsyncStore:
    """The async face of a blocking store: each call runs on ``executor`` and is awaited.

    Offers every method the wrapped store has (``list_snapshots``, ``delete_session``, ...).
    A mutator passed to :meth:`save_snapshot` runs on an executor thread.
    """

    def __init__(self, store: Any, executor: concurrent.futures.Executor) -> None:
        if not isinstance(executor, concurrent.futures.Executor):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}; "
                "pass ThreadPoolExecutor(max_workers=N)",
            )
        if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                "executor is a ProcessPoolExecutor, which cannot share the store or run its mutators; "
                "pass ThreadPoolExecutor(max_workers=N)",
            )
        _require_blocking_store(store)
        self.sync = store
        self.executor = executor

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))
        except RuntimeError as error:  # submit() after shutdown(), or a pool broken by a dead worker
            name = type(self.executor).__name__
            raise GenkitError(
                Status.FAILED_PRECONDITION,
                f"the {name} this store's calls run on is shut down or broken ({error}); "
                f"keep the {name} open while the store is in use, or wrap the store again with a live one",
            ) from error
        return await future

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """The wrapped store's ``get_snapshot``, on the executor."""
        found: SessionSnapshot | None = await self._run(
            self.sync.get_snapshot, snapshot_id=snapshot_id, session_id=session_id, context=context
        )
        return found

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """The wrapped store's ``save_snapshot``, on the executor."""
        extra = {} if options is None else {"options": options}
        saved: SessionSnapshot | None = await self._run(
            self.sync.save_snapshot, snapshot_id, mutator, context=context, **extra
        )
        return saved

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """The wrapped store's ``indexed_metadata``."""
        found: frozenset[str] = self.sync.indexed_metadata
        return found

    async def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """The wrapped store's ``read_window``, on the executor."""
        found: HistoryWindow = await self._run(
            self.sync.read_window, session_id, max_messages=max_messages, max_bytes=max_bytes, context=context
        )
        return found

    async def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """The wrapped store's ``history_plan``, on the executor."""
        found: HistoryPlan | None = await self._run(
            self.sync.history_plan, snapshot_id=snapshot_id, session_id=session_id, context=context
        )
        return found

    async def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """The wrapped store's ``history_next``, on the executor."""
        found: tuple[tuple[Message, ...], Any] = await self._run(
            self.sync.history_next, plan, cursor, limit, context=context
        )
        return found

    async def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """The wrapped store's ``get_session_leaf``, on the executor."""
        found: tuple[SessionRecord | None, SessionSnapshot | None] = await self._run(
            self.sync.get_session_leaf, session_id, context=context
        )
        return found

    async def create_session(
        self,
        session_id: str,
        *,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        sliding: bool = False,
        snapshots: Iterable[SessionSnapshot] = (),
        context: Context = None,
    ) -> SessionRecord:
        """The wrapped store's ``create_session``, on the executor."""
        keywords: dict[str, Any] = {"snapshots": list(snapshots)} if snapshots else {}
        found: SessionRecord = await self._run(
            self.sync.create_session,
            session_id,
            metadata=metadata,
            ttl=ttl,
            sliding=sliding,
            context=context,
            **keywords,
        )
        return found

    async def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """The wrapped store's ``set_session_metadata``, on the executor."""
        found: SessionRecord = await self._run(self.sync.set_session_metadata, session_id, name, value, context=context)
        return found

    async def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """The wrapped store's ``find_sessions``, on the executor."""
        page: SessionPage = await self._run(
            self.sync.find_sessions, name, value, limit=limit, page_token=page_token, context=context
        )
        return page

    async def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """The wrapped store's ``delete_expired_sessions``, on the executor."""
        count: int = await self._run(self.sync.delete_expired_sessions, before, context=context)
        return count

    async def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """The wrapped store's ``list_snapshots``, on the executor."""
        found: Sequence[SessionSnapshot] = await self._run(self.sync.list_snapshots, session_id, context=context)
        return found

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """The wrapped store's ``delete_session``, on the executor."""
        count: int = await self._run(self.sync.delete_session, session_id, context=context)
        return count

    async def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """The wrapped store's ``abort_snapshot``, on the executor."""
        before: SnapshotStatus | None = await self._run(self.sync.abort_snapshot, snapshot_id, context=context)
        return before

    async def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """The wrapped store's ``heartbeat``, on the executor."""
        saved: SessionSnapshot = await self._run(self.sync.heartbeat, snapshot_id, context=context)
        return saved

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """The wrapped store's ``restore_snapshots``, on the executor."""
        count: int = await self._run(self.sync.restore_snapshots, list(snapshots), context=context)
        return count

    async def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """The wrapped store's ``get_session_record``, on the executor."""
        found: SessionRecord | None = await self._run(self.sync.get_session_record, session_id, context=context)
        return found

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Polls the wrapped store's ``status_poll`` on the executor when it has one (the DynamoDB store
        does), else delegates to its own ``watch_status``."""
        poller = getattr(self.sync, "status_poll", None)
        if poller is None:
            stream: AsyncIterator[SnapshotStatus] = self.sync.watch_status(snapshot_id, context=context)
            return stream
        poll = poller(snapshot_id, context=context)
        settings = getattr(getattr(self.sync, "_engine", None), "settings", None)
        return watch_by_polling(
            snapshot_id,
            functools.partial(self._run, poll),
            getattr(settings, "watch_interval", 0.05),
            getattr(settings, "watch_max_interval", 2.0),
        )


async def watch_by_polling(
    snapshot_id: str,
    poll: Callable[[], Awaitable[list[SnapshotStatus] | None]],
    interval: float,
    max_interval: float,
) -> AsyncIterator[SnapshotStatus]:
    """Yield the current status, then every change ``poll`` reports (the whole history each time), in
    order, ending after a terminal status; back off from ``interval`` to ``max_interval`` while nothing
    changes. NOT_FOUND when the snapshot is absent at the start; the iterator raises NOT_FOUND when it is
    deleted while watched. A history that no longer extends the one seen (a restore wrote the snapshot
    anew) yields its last status when that differs from the last one yielded."""
    history = await poll()
    if history is None:
        raise GenkitError(
            Status.NOT_FOUND,
            f"snapshot {snapshot_id!r} does not exist; watch a snapshot after it is saved",
            reason=Reason.SNAPSHOT_NOT_FOUND,
        )
    status = history[-1]
    yield status
    seen = history
    delay = interval
    while not status.is_terminal:
        await asyncio.sleep(delay)
        history = await poll()
        if history is None:
            raise GenkitError(
                Status.NOT_FOUND,
                f"snapshot {snapshot_id!r} was deleted (with its session) while being watched",
                reason=Reason.SNAPSHOT_NOT_FOUND,
            )
        if history[: len(seen)] == seen:
            fresh = history[len(seen) :]
        else:  # rewritten by a restore: only where it stands now is known
            fresh = [history[-1]] if history[-1] is not status else []
        seen = history
        if not fresh:
            delay = min(delay * 2, max_interval)
            continue
        for status in fresh:
            yield status
            if status.is_terminal:
                return
        delay = interval
