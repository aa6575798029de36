"""The DynamoDB store's two faces: blocking on boto3, non-blocking on aiobotocore, one logic.

Every rule and request is written once, as steps (``_calls``): reads in
``_reads``, how a save commits in ``_commit``, every head write in ``_head``,
deletion and restore in ``_maintenance``. :class:`DynamoDBSessionStore` drives
the steps with boto3; :class:`AsyncDynamoDBSessionStore` drives the same steps
with aiobotocore (the ``aio`` extra), so an event loop never waits on a socket.
Without aiobotocore the async face fails at once with UNIMPLEMENTED (reason
ASYNC_NOT_SUPPORTED), unless the caller handed the store an ``executor`` to
run boto3 on: blocking I/O is never moved to a thread without being told to.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib.util
import os
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from genkit_sessions.dynamodb import _commit, _history, _maintenance, _reads, _records
from genkit_sessions.dynamodb._calls import Steps, run_async, run_sync
from genkit_sessions.dynamodb._engine import Engine, Settings
from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, map_error
from genkit_sessions.dynamodb._items import item_size
from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.clock import Clock, check_clock, guarded_clock, utc_now
from genkit_sessions.model.ids import validate_id
from genkit_sessions.model.types import Message, SessionSnapshot, SnapshotStatus
from genkit_sessions.stores import session_rules as rules
from genkit_sessions.stores.history_rules import check_bounds
from genkit_sessions.stores.offload import OffloadedAsyncStore, watch_by_polling
from genkit_sessions.stores.protocol import (
    CallOptions,
    Context,
    HistoryPlan,
    HistoryWindow,
    Mutator,
    SessionPage,
    SessionRecord,
    TenantFn,
    effective_context,
)
from genkit_sessions.stores.write_rules import (
    abort_mutator,
    abort_through,
    check_mutator,
    default_tenant,
    heartbeat_mutator,
    heartbeat_through,
    require_one_selector,
    required_tenant,
    tenant_key,
)

__all__ = ["AsyncDynamoDBSessionStore", "DynamoDBSessionStore", "build_client", "item_size"]


class DynamoDBSessionStore:
    """A session store on one DynamoDB table, with every rule of the contract (S1-S12).

    ``client`` is a boto3 DynamoDB client; without one, a client is built from
    ``region_name`` / ``endpoint_url`` with botocore's ``standard`` retry mode
    (``retry_mode``, ``max_retries``), which retries throttling and transient
    errors with backoff before the store sees them.

    Options: ``tenant_of`` maps a request context to a tenant key (a key
    prefix; by default ``context["tenant"]``, else the default tenant);
    ``require_tenant=True`` refuses a context naming no tenant; ``clock`` is
    the time source (one that fails makes the call UNAVAILABLE, nothing written);
    ``checkpoint_every`` (5) is how many deltas a page folds (a page of the
    next level folds two pages);
    ``ttl`` gives every item of a session tree one expiry, counted from its root
    snapshot; ``orphan_ttl`` (1 day) is the expiry of blob parts written ahead of
    a commit; ``max_attempts`` (10) bounds retries of a contended save before
    ABORTED; ``watch_interval`` / ``watch_max_interval`` set the polling of
    :meth:`watch_status`; ``head_ids`` (8) is how many member ids a session's
    head holds before they move to a member page; ``cache_size`` (1,024) is
    how many recently read or written states the store keeps. Besides that,
    a snapshot the store returned keeps, for as long as its caller holds it,
    what a save of its child needs, so a turn-end save needs no read however
    many sessions are in flight.

    The async face :attr:`aio` runs on aiobotocore (``pip install
    'genkit-sessions[aio]'``), with up to ``aio_connections`` connections (and as
    many requests in flight per loop), on a client it opens for each event loop; or on ``aio_client``, an aiobotocore
    DynamoDB client the caller opened on its event loop and closes itself (so
    stores can share one client); or, when ``executor`` is given, on that
    executor with boto3.
    """

    def __init__(
        self,
        table_name: str,
        client: Any = None,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        retry_mode: str = "standard",
        max_retries: int = 5,
        tenant_of: TenantFn = default_tenant,
        require_tenant: bool = False,
        clock: Clock = utc_now,
        checkpoint_every: int = 5,
        ttl: timedelta | None = None,
        orphan_ttl: timedelta = timedelta(days=1),
        max_attempts: int = 10,
        chunk_bytes: int = 350_000,
        watch_interval: float = 0.05,
        watch_max_interval: float = 2.0,
        cache_size: int = 1024,
        head_ids: int = 8,
        executor: concurrent.futures.Executor | None = None,
        aio_connections: int = 100,
        aio_client: Any = None,
        indexed_metadata: Iterable[str] = (),
    ) -> None:
        if not isinstance(table_name, str) or not table_name:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"table_name must be a non-empty string naming the table, got {table_name!r}",
                reason=Reason.INVALID_INPUT,
            )
        if client is not None and (isinstance(client, (str, bytes)) or not hasattr(client, "transact_write_items")):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"client must be a boto3 DynamoDB client or None, got {client!r}; a region or endpoint goes by "
                "keyword: DynamoDBSessionStore('table', region_name='eu-west-1')",
                reason=Reason.INVALID_INPUT,
            )
        for name, text in (("region_name", region_name), ("endpoint_url", endpoint_url)):
            rules.check_option(
                name,
                text,
                text is None or (isinstance(text, str) and bool(text)),
                "a non-empty string or None",
                f"{name}='eu-west-1'" if name == "region_name" else f"{name}='http://localhost:8000'",
            )
        rules.check_option(
            "retry_mode",
            retry_mode,
            retry_mode in ("standard", "adaptive", "legacy"),
            "'standard', 'adaptive' or 'legacy'",
            "retry_mode='standard'",
        )
        rules.check_int_option("max_retries", max_retries, 0)
        rules.check_callable("tenant_of", tenant_of, "tenant_of=lambda context: context['org']")
        check_clock(clock)
        rules.check_option("require_tenant", require_tenant, isinstance(require_tenant, bool), "a bool", "True")
        if require_tenant:
            tenant_of = required_tenant(tenant_of)
        rules.check_int_option("checkpoint_every", checkpoint_every, 2)
        rules.check_ttl(ttl)
        rules.check_option(
            "orphan_ttl",
            orphan_ttl,
            isinstance(orphan_ttl, timedelta) and orphan_ttl > timedelta(0),
            "a positive datetime.timedelta",
            "orphan_ttl=timedelta(days=1)",
        )
        rules.check_int_option("max_attempts", max_attempts, 1)
        rules.check_int_option("chunk_bytes", chunk_bytes, 1_000, 390_000)
        rules.check_number_option("watch_interval", watch_interval)
        rules.check_number_option("watch_max_interval", watch_max_interval)
        rules.check_int_option("cache_size", cache_size, 0)
        rules.check_int_option("head_ids", head_ids, 1, 500)
        rules.check_option(
            "executor",
            executor,
            executor is None or isinstance(executor, concurrent.futures.Executor),
            "a concurrent.futures.Executor or None",
            "executor=ThreadPoolExecutor(8)",
        )
        rules.check_int_option("aio_connections", aio_connections, 1)
        rules.check_option(
            "aio_client",
            aio_client,
            aio_client is None or (executor is None and hasattr(aio_client, "transact_write_items")),
            "an aiobotocore DynamoDB client, or None (and not beside an executor)",
            "aio_client=await exit_stack.enter_async_context(session.create_client('dynamodb'))",
        )
        self.table_name = table_name
        self._client = (
            client if client is not None else build_client(region_name, endpoint_url, retry_mode, max_retries)
        )
        self._engine = Engine(
            Settings(
                table=table_name,
                tenant_of=tenant_of,
                clock=guarded_clock(clock),
                checkpoint_every=checkpoint_every,
                ttl=ttl,
                orphan_ttl=orphan_ttl,
                max_attempts=max_attempts,
                chunk_bytes=chunk_bytes,
                watch_interval=watch_interval,
                watch_max_interval=watch_max_interval,
                cache_size=cache_size,
                head_ids=head_ids,
                indexed=rules.indexed_keys(indexed_metadata),
            )
        )
        self._executor = executor
        self._aio_client = aio_client
        self._aio_settings = (region_name, endpoint_url, retry_mode, max_retries, aio_connections)
        # The async face holds this store; this store holds its face only weakly (a new one is made when
        # the last is gone) and keeps the face's per-loop aiobotocore clients itself. So a store and its
        # face make no reference cycle: a store dropped after a turn frees what it cached (a whole history)
        # at once, not at the garbage collector's next full collection.
        self._aio_face: weakref.ref[AsyncDynamoDBSessionStore | OffloadedAsyncStore] | None = None
        self._aio_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[Any, Any] | asyncio.Future[tuple[Any, Any]]
        ] = weakref.WeakKeyDictionary()
        # As many requests in flight per loop as there are connections: the rest wait before building
        # theirs (``_calls.run_async``).
        self._aio_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def client(self) -> Any:
        """The boto3 client the store calls."""
        return self._client

    @property
    def aio(self) -> AsyncDynamoDBSessionStore | OffloadedAsyncStore:
        """The async face: native on aiobotocore, or on the ``executor`` the store was given.

        UNIMPLEMENTED (reason ASYNC_NOT_SUPPORTED) when neither is there.
        """
        face = self._aio_face() if self._aio_face is not None else None
        if face is None:
            if self._executor is not None:
                face = OffloadedAsyncStore(self, self._executor)
            else:
                require_aiobotocore()
                face = AsyncDynamoDBSessionStore(self)
            self._aio_face = weakref.ref(face)
        return face

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """The metadata keys :meth:`find_sessions` looks up (``principal`` always): each has index entries."""
        return self._engine.settings.indexed

    def close(self) -> None:
        """Nothing to release on the blocking face (the boto3 client and any executor are the caller's)."""

    def __enter__(self) -> DynamoDBSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, steps: Steps[Any]) -> Any:
        return run_sync(steps, self._client)

    def _tenant(self, context: Context) -> str:
        return tenant_key(self._engine.settings.tenant_of, context)

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """A snapshot by id, or a session's leaf; strongly consistent, two calls (GetItem, BatchGetItem)."""
        require_one_selector(snapshot_id, session_id)
        tenant = self._tenant(context)
        if snapshot_id is not None:
            loaded = self._run(_reads.read_by_id(self._engine, tenant, snapshot_id))
            return loaded.snapshot if loaded is not None else None
        assert session_id is not None
        found: SessionSnapshot | None = self._run(_reads.read_leaf(self._engine, tenant, session_id))
        return found

    def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """Atomically apply ``mutator`` to the snapshot ``snapshot_id`` and store the result (S3-S7).

        Uncontended, a new snapshot whose parent this store read or wrote recently costs one
        TransactWriteItems and no read. A lost race re-reads and re-runs the mutator, up to
        ``max_attempts`` times with jittered backoff, then raises ABORTED. ``options.expected_version``
        conditions the write on the session's version (ABORTED, reason VERSION_CONFLICT, when it moved).
        """
        saved: SessionSnapshot | None = self._run(_save_steps(self._engine, snapshot_id, mutator, context, options))
        return saved

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """Every snapshot of the session in creation order (a Query of its partition, then BatchGetItems)."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        found: list[SessionSnapshot] = self._run(_reads.list_snapshots(self._engine, self._tenant(context), session_id))
        return found

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """Delete every item of the session; returns how many snapshots went. A tombstone goes first, so
        no write lands meanwhile; a deletion that stops part-way is finished by running it again."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        count: int = self._run(_maintenance.delete_session(self._engine, self._tenant(context), session_id))
        return count

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """Flip pending or aborting to aborted in one atomic write; return the status seen before."""
        return abort_through(functools.partial(self.save_snapshot, context=context), snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """Stamp ``heartbeatAt`` on a running (pending or aborting) snapshot."""
        return heartbeat_through(
            functools.partial(self.save_snapshot, context=context), snapshot_id, self._engine.stamp()
        )

    def status_history(self, snapshot_id: str, *, context: Context = None) -> list[SnapshotStatus] | None:
        """Every status the snapshot has had, oldest first; None when it is absent or its session was deleted
        or expired (two strongly consistent GetItems, of the item's status and of its session's head)."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        found: tuple[str, list[SnapshotStatus]] | None = self._run(
            _reads.statuses(self._engine, self._tenant(context), snapshot_id)
        )
        return found[1] if found is not None else None

    def status_poll(self, snapshot_id: str, *, context: Context = None) -> Callable[[], list[SnapshotStatus] | None]:
        """What a watch polls: :meth:`status_history`, after the first call one BatchGetItem of the item's
        status and its session's head (the session id read the first time)."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        tenant = self._tenant(context)
        session: list[str] = []

        def poll() -> list[SnapshotStatus] | None:
            found: tuple[str, list[SnapshotStatus]] | None = self._run(
                _reads.statuses(self._engine, tenant, snapshot_id, session[0] if session else None)
            )
            if found is None:
                return None
            session[:] = [found[0]]
            return found[1]

        return poll

    def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """The session's record (created, updated, version, leaf, expiry, metadata): one GetItem of its head."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        found: SessionRecord | None = self._run(_reads.session_record(self._engine, self._tenant(context), session_id))
        return found

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Yield the current status, then every status a write sets (a save, an abort, a restore), ending
        after a terminal one; the iterator raises NOT_FOUND when the snapshot's session is deleted or
        expires while watched (on :attr:`aio`)."""
        return self.aio.watch_status(snapshot_id, context=context)

    def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """H2: the leaf's newest active messages within the bounds: GetItem of the head, then one BatchGetItem
        of the leaf and just the blobs that hold them."""
        found: HistoryWindow = self._run(_window_steps(self._engine, session_id, max_messages, max_bytes, context))
        return found

    def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """The stored blocks of a snapshot's (or a session leaf's) active messages, one per blob."""
        found: HistoryPlan | None = self._run(_plan_steps(self._engine, snapshot_id, session_id, context))
        return found

    def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """Up to ``limit`` more messages of ``plan``: one stored part per GetItem, inflated and parsed as it
        arrives, so a stream holds one part whatever the size of the page it reads."""
        found: tuple[tuple[Message, ...], Any] = self._run(_history.next_messages(self._engine, plan, cursor, limit))
        return found

    def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """The session's record and its leaf, in the two calls of a leaf read (GetItem, BatchGetItem)."""
        found: tuple[SessionRecord | None, SessionSnapshot | None] = self._run(
            _leaf_steps(self._engine, session_id, context)
        )
        return found

    def create_session(
        self,
        session_id: str,
        *,
        metadata: Mapping[str, str] | None = None,
        ttl: timedelta | None = None,
        sliding: bool = False,
        snapshots: Iterable[SessionSnapshot] = (),
        context: Context = None,
    ) -> SessionRecord:
        """V1: a record with no snapshots: one write on the head (a transaction with its index entries).

        With ``snapshots``: a GetItem of the head, then one TransactWriteItems of the record, its index
        entries and every snapshot's item and blob parts, so a failure leaves nothing. Past 3 MB, the
        largest blobs are staged first, as a large save's are, and the rest is the same one commit.
        Past 100 actions (more snapshots than a transaction holds) it is a create, then a restore; a
        failed restore deletes the session again, and an outage part-way can leave the record alone,
        or items no session lists."""
        found: SessionRecord = self._run(
            _create_steps(self._engine, session_id, metadata, ttl, sliding, snapshots, context)
        )
        return found

    def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """V5: one metadata key and its index entries, in one transaction on the head's version."""
        found: SessionRecord = self._run(_metadata_steps(self._engine, session_id, name, value, context))
        return found

    def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """V4: one strongly consistent Query of the key's index partition, then one BatchGetItem."""
        page: SessionPage = self._run(_find_steps(self._engine, name, value, limit, page_token, context))
        return page

    def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """V7: a Query of the tenant's expiry index up to ``before``; deletes the sessions it names."""
        count: int = self._run(_expired_steps(self._engine, before, context))
        return count

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Store snapshots verbatim, as an import or a test fixture would (no stamping, no rule checks).

        Every snapshot is checked before anything is written; each touched session's head is then
        recomputed on the exact version read, so a turn landing meanwhile is kept. A backend failure
        part-way leaves some written: the restore is idempotent, so running it again completes it.
        """
        count: int = self._run(_maintenance.restore(self._engine, self._tenant(context), list(snapshots)))
        return count

    def sweep_staged(
        self, session_id: str, *, older_than: timedelta = timedelta(hours=1), context: Context = None
    ) -> int:
        """Remove blob parts of large writes that never committed (their writer died, or lost the answer and
        could not learn the outcome) and were staged more than ``older_than`` ago; returns how many writes."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        before = self._engine.now_epoch() - int(older_than.total_seconds())
        count: int = self._run(_maintenance.sweep_staged(self._engine, self._tenant(context), session_id, before))
        return count


def require_aiobotocore() -> None:
    """UNIMPLEMENTED (ASYNC_NOT_SUPPORTED) when aiobotocore, the non-blocking DynamoDB client, is not installed."""
    if importlib.util.find_spec("aiobotocore") is None:
        raise GenkitError(
            Status.UNIMPLEMENTED,
            "the DynamoDB store's async face needs aiobotocore, a non-blocking DynamoDB client: install "
            "'genkit-sessions[aio]', or hand the store an executor to run boto3 on "
            "(DynamoDBSessionStore(..., executor=ThreadPoolExecutor(8)), or OffloadedAsyncStore(store, executor))",
            reason=Reason.ASYNC_NOT_SUPPORTED,
        )


class AsyncDynamoDBSessionStore:
    """The non-blocking face of a :class:`DynamoDBSessionStore`: the same steps, driven by aiobotocore.

    It shares the blocking store's caches, and talks to the same endpoint with the same region and
    credentials. Each event loop gets its own aiobotocore client, closed when the loop shuts down
    (``asyncio.run`` does that) or by :meth:`aclose`. A mutator runs on the event loop: keep it quick.
    """

    def __init__(self, store: DynamoDBSessionStore) -> None:
        require_aiobotocore()
        # Imported here, not at the first call: importing aiobotocore and aiohttp takes a few hundred
        # milliseconds, which must not fall on a running event loop.
        import aiobotocore.session  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F401

        self.sync = store
        self._engine = store._engine
        self._clients = store._aio_clients  # kept by the store, which outlives every face of it

    def _client_context(self) -> Any:
        from aiobotocore.config import AioConfig  # type: ignore[import-not-found, import-untyped, unused-ignore]
        from aiobotocore.session import get_session  # type: ignore[import-not-found, import-untyped, unused-ignore]

        region_name, endpoint_url, retry_mode, max_retries, connections = self.sync._aio_settings
        options: dict[str, Any] = {}
        sync_client = self.sync.client
        meta = getattr(sync_client, "meta", None)
        if meta is not None:
            region_name = region_name or meta.region_name
            endpoint_url = endpoint_url or meta.endpoint_url
            retries = getattr(meta.config, "retries", None) or {}
            retry_mode = retries.get("mode", retry_mode)
            if "total_max_attempts" in retries:
                max_retries = int(retries["total_max_attempts"]) - 1
            credentials = getattr(getattr(sync_client, "_request_signer", None), "_credentials", None)
            if credentials is not None:
                frozen = credentials.get_frozen_credentials()
                options.update(
                    aws_access_key_id=frozen.access_key,
                    aws_secret_access_key=frozen.secret_key,
                    aws_session_token=frozen.token,
                )
        config = AioConfig(
            retries={"mode": retry_mode, "total_max_attempts": max_retries + 1}, max_pool_connections=connections
        )
        return get_session().create_client(
            "dynamodb",
            region_name=default_region(region_name),
            endpoint_url=endpoint_url,
            config=config,
            **options,
        )

    async def _client(self) -> Any:
        if self.sync._aio_client is not None:  # the caller's own, opened on its loop and closed by it
            return self.sync._aio_client
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:  # the first caller on this loop opens the client; the others wait for it
            opening: asyncio.Future[tuple[Any, Any]] = loop.create_future()
            self._clients[loop] = opening
            try:
                opened = await self._open()
            except BaseException as exc:
                self._clients.pop(loop, None)
                opening.set_exception(exc)
                raise
            self._clients[loop] = opened
            opening.set_result(opened)
            return opened[0]
        if isinstance(entry, asyncio.Future):
            return (await asyncio.shield(entry))[0]
        return entry[0]

    async def _open(self) -> tuple[Any, Any]:
        context = self._client_context()
        try:
            client = await context.__aenter__()
        except BACKEND_ERRORS as exc:
            raise map_error(exc, "CreateClient", self.sync.table_name) from exc

        async def close_at_loop_shutdown() -> AsyncIterator[None]:
            try:
                yield
            finally:
                await context.__aexit__(None, None, None)

        closer = close_at_loop_shutdown()
        await closer.__anext__()  # the loop finalises it in shutdown_asyncgens
        return client, closer

    async def aclose(self) -> None:
        """Close this event loop's aiobotocore client (a later call opens a new one)."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if isinstance(entry, asyncio.Future):
            entry = await entry
        if entry is not None:
            await entry[1].aclose()

    async def __aenter__(self) -> AsyncDynamoDBSessionStore:
        """Open this event loop's client now (an application's start-up), not at the first call."""
        await self._client()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self, steps: Steps[Any]) -> Any:
        client = await self._client()
        loop = asyncio.get_running_loop()
        gate = self.sync._aio_gates.get(loop)
        if gate is None:
            gate = self.sync._aio_gates[loop] = asyncio.Semaphore(self.sync._aio_settings[4])
        return await run_async(steps, client, gate)

    def _tenant(self, context: Context) -> str:
        return tenant_key(self._engine.settings.tenant_of, context)

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """See :meth:`DynamoDBSessionStore.get_snapshot`."""
        require_one_selector(snapshot_id, session_id)
        tenant = self._tenant(context)
        if snapshot_id is not None:
            loaded = await self._run(_reads.read_by_id(self._engine, tenant, snapshot_id))
            return loaded.snapshot if loaded is not None else None
        assert session_id is not None
        found: SessionSnapshot | None = await self._run(_reads.read_leaf(self._engine, tenant, session_id))
        return found

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None, options: CallOptions | None = None
    ) -> SessionSnapshot | None:
        """See :meth:`DynamoDBSessionStore.save_snapshot`."""
        saved: SessionSnapshot | None = await self._run(
            _save_steps(self._engine, snapshot_id, mutator, context, options)
        )
        return saved

    @property
    def indexed_metadata(self) -> frozenset[str]:
        """See :attr:`DynamoDBSessionStore.indexed_metadata`."""
        return self._engine.settings.indexed

    async def read_window(
        self,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        context: Context = None,
    ) -> HistoryWindow:
        """See :meth:`DynamoDBSessionStore.read_window`."""
        found: HistoryWindow = await self._run(
            _window_steps(self._engine, session_id, max_messages, max_bytes, context)
        )
        return found

    async def history_plan(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> HistoryPlan | None:
        """See :meth:`DynamoDBSessionStore.history_plan`."""
        found: HistoryPlan | None = await self._run(_plan_steps(self._engine, snapshot_id, session_id, context))
        return found

    async def history_next(
        self, plan: HistoryPlan, cursor: Any, limit: int, *, context: Context = None
    ) -> tuple[tuple[Message, ...], Any]:
        """See :meth:`DynamoDBSessionStore.history_next`."""
        found: tuple[tuple[Message, ...], Any] = await self._run(
            _history.next_messages(self._engine, plan, cursor, limit)
        )
        return found

    async def get_session_leaf(
        self, session_id: str, *, context: Context = None
    ) -> tuple[SessionRecord | None, SessionSnapshot | None]:
        """See :meth:`DynamoDBSessionStore.get_session_leaf`."""
        found: tuple[SessionRecord | None, SessionSnapshot | None] = await self._run(
            _leaf_steps(self._engine, session_id, context)
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
        """See :meth:`DynamoDBSessionStore.create_session`."""
        found: SessionRecord = await self._run(
            _create_steps(self._engine, session_id, metadata, ttl, sliding, snapshots, context)
        )
        return found

    async def set_session_metadata(
        self, session_id: str, name: str, value: str | None, *, context: Context = None
    ) -> SessionRecord:
        """See :meth:`DynamoDBSessionStore.set_session_metadata`."""
        found: SessionRecord = await self._run(_metadata_steps(self._engine, session_id, name, value, context))
        return found

    async def find_sessions(
        self, name: str, value: str, *, limit: int = 100, page_token: str | None = None, context: Context = None
    ) -> SessionPage:
        """See :meth:`DynamoDBSessionStore.find_sessions`."""
        page: SessionPage = await self._run(_find_steps(self._engine, name, value, limit, page_token, context))
        return page

    async def delete_expired_sessions(self, before: datetime, *, context: Context = None) -> int:
        """See :meth:`DynamoDBSessionStore.delete_expired_sessions`."""
        count: int = await self._run(_expired_steps(self._engine, before, context))
        return count

    async def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        """See :meth:`DynamoDBSessionStore.list_snapshots`."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        found: list[SessionSnapshot] = await self._run(
            _reads.list_snapshots(self._engine, self._tenant(context), session_id)
        )
        return found

    async def delete_session(self, session_id: str, *, context: Context = None) -> int:
        """See :meth:`DynamoDBSessionStore.delete_session`."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        count: int = await self._run(_maintenance.delete_session(self._engine, self._tenant(context), session_id))
        return count

    async def sweep_staged(
        self, session_id: str, *, older_than: timedelta = timedelta(hours=1), context: Context = None
    ) -> int:
        """See :meth:`DynamoDBSessionStore.sweep_staged`."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        before = self._engine.now_epoch() - int(older_than.total_seconds())
        count: int = await self._run(_maintenance.sweep_staged(self._engine, self._tenant(context), session_id, before))
        return count

    async def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        """See :meth:`DynamoDBSessionStore.abort_snapshot`."""
        seen: list[SnapshotStatus | None] = []
        await self.save_snapshot(snapshot_id, abort_mutator(seen), context=context)
        return seen[-1] if seen else None

    async def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        """See :meth:`DynamoDBSessionStore.heartbeat`."""
        saved = await self.save_snapshot(
            snapshot_id, heartbeat_mutator(snapshot_id, self._engine.stamp()), context=context
        )
        assert saved is not None
        return saved

    async def status_history(self, snapshot_id: str, *, context: Context = None) -> list[SnapshotStatus] | None:
        """See :meth:`DynamoDBSessionStore.status_history`."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        found: tuple[str, list[SnapshotStatus]] | None = await self._run(
            _reads.statuses(self._engine, self._tenant(context), snapshot_id)
        )
        return found[1] if found is not None else None

    async def get_session_record(self, session_id: str, *, context: Context = None) -> SessionRecord | None:
        """See :meth:`DynamoDBSessionStore.get_session_record`."""
        validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
        found: SessionRecord | None = await self._run(
            _reads.session_record(self._engine, self._tenant(context), session_id)
        )
        return found

    def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """See :meth:`DynamoDBSessionStore.watch_status`: polls the item's statuses and its session's head
        (one BatchGetItem, projected), backing off while nothing changes."""
        validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
        settings = self._engine.settings
        tenant = self._tenant(context)
        session: list[str] = []

        async def poll() -> list[SnapshotStatus] | None:
            found: tuple[str, list[SnapshotStatus]] | None = await self._run(
                _reads.statuses(self._engine, tenant, snapshot_id, session[0] if session else None)
            )
            if found is None:
                return None
            session[:] = [found[0]]
            return found[1]

        return watch_by_polling(snapshot_id, poll, settings.watch_interval, settings.watch_max_interval)

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """See :meth:`DynamoDBSessionStore.restore_snapshots`."""
        count: int = await self._run(_maintenance.restore(self._engine, self._tenant(context), list(snapshots)))
        return count


# --- the steps both faces run, arguments checked ------------------------------------------------


def _save_steps(
    engine: Engine, snapshot_id: str, mutator: Mutator, context: Context, options: CallOptions | None
) -> Steps[SessionSnapshot | None]:
    validate_id(snapshot_id, "snapshot_id", Reason.INVALID_SNAPSHOT_ID)
    check_mutator(mutator)
    tenant = tenant_key(engine.settings.tenant_of, effective_context(context, options))
    expected = options.expected_version if options is not None else None
    return _commit.save(engine, tenant, snapshot_id, mutator, expected)


def _window_steps(
    engine: Engine, session_id: str, max_messages: int | None, max_bytes: int | None, context: Context
) -> Steps[HistoryWindow]:
    validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
    check_bounds(max_messages, max_bytes)
    tenant = tenant_key(engine.settings.tenant_of, context)
    return _history.window(engine, tenant, session_id, max_messages, max_bytes)


def _plan_steps(
    engine: Engine, snapshot_id: str | None, session_id: str | None, context: Context
) -> Steps[HistoryPlan | None]:
    require_one_selector(snapshot_id, session_id)
    return _history.plan(engine, tenant_key(engine.settings.tenant_of, context), snapshot_id, session_id)


def _leaf_steps(
    engine: Engine, session_id: str, context: Context
) -> Steps[tuple[SessionRecord | None, SessionSnapshot | None]]:
    validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
    return _reads.session_and_leaf(engine, tenant_key(engine.settings.tenant_of, context), session_id)


def _create_steps(
    engine: Engine,
    session_id: str,
    metadata: Mapping[str, str] | None,
    ttl: timedelta | None,
    sliding: bool,
    snapshots: Iterable[SessionSnapshot],
    context: Context,
) -> Steps[SessionRecord]:
    validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
    frozen = rules.check_metadata(metadata)
    rules.check_ttl(ttl)
    tenant = tenant_key(engine.settings.tenant_of, context)
    sliding = bool(sliding) and ttl is not None
    given = list(snapshots)
    if given:
        return _records.create_with_snapshots(engine, tenant, session_id, frozen, ttl, sliding, given)
    return _records.create_session(engine, tenant, session_id, frozen, ttl, sliding)


def _metadata_steps(
    engine: Engine, session_id: str, name: str, value: str | None, context: Context
) -> Steps[SessionRecord]:
    validate_id(session_id, "session_id", Reason.INVALID_SESSION_ID)
    rules.check_metadata_entry(name, value, allow_none=True)
    return _records.set_metadata(engine, tenant_key(engine.settings.tenant_of, context), session_id, name, value)


def _find_steps(
    engine: Engine, name: str, value: str, limit: int, page_token: str | None, context: Context
) -> Steps[SessionPage]:
    rules.check_metadata_entry(name, value)
    if name not in engine.settings.indexed:
        raise rules.not_indexed(name, engine.settings.indexed)
    rules.check_limit(limit)
    after = rules.decode_page_token(page_token)
    return _records.find_sessions(engine, tenant_key(engine.settings.tenant_of, context), name, value, limit, after)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _expired_steps(engine: Engine, before: datetime, context: Context) -> Steps[int]:
    rules.check_before(before)
    micros = (before - _EPOCH) // timedelta(microseconds=1)  # exact, where a float timestamp rounds
    before_ms = -(-micros // 1000)  # up: expiry instants are whole milliseconds, so "< before" keeps its meaning
    return _records.delete_expired(engine, tenant_key(engine.settings.tenant_of, context), before_ms)


def default_region(region_name: str | None) -> str:
    """The region to use: the one given, else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else ``us-east-1``."""
    return region_name or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def build_client(
    region_name: str | None = None,
    endpoint_url: str | None = None,
    retry_mode: str = "standard",
    max_retries: int = 5,
    client_options: dict[str, Any] | None = None,
) -> Any:
    """A boto3 DynamoDB client using botocore's own retry mode for transient errors.

    ``client_options`` go to ``boto3.client`` as they are (credentials, say).
    """
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    config = Config(retries={"mode": retry_mode, "total_max_attempts": max_retries + 1})
    try:
        return boto3.client(
            "dynamodb",
            region_name=default_region(region_name),
            endpoint_url=endpoint_url,
            config=config,
            **(client_options or {}),
        )
    except BACKEND_ERRORS as exc:
        raise map_error(exc, "CreateClient", "-") from exc
