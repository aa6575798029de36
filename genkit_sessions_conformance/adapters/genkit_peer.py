"""Genkit's own Python ``InMemorySessionStore`` (``genkit==0.12.0``) behind our async store protocol.

The adapter translates, and decides nothing: snapshots cross as Genkit's wire
JSON, Genkit's errors become ours with the same status and message, and
``restore_snapshots`` plants snapshots straight into the store's dictionary
(Genkit has no import call) so the suite can seed what "the store holds".
Everything else (stamping, leaf choice, terminal statuses, tenancy) is
Genkit's own behaviour. ``genkit`` is an optional dependency (the ``genkit-peer``,
``test`` and ``bench`` extras), imported only when a store is made::

    python -m genkit_sessions_conformance --profile walk-back \
        --store genkit_sessions_conformance.adapters.genkit_peer:GenkitPeerStore
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus
from genkit_sessions.model.wire import from_wire, to_wire
from genkit_sessions.stores.protocol import Context, Mutator
from genkit_sessions.stores.write_rules import restorable

__all__ = ["GenkitPeerStore"]


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """Turn Genkit's GenkitError into ours, keeping status, message and reason."""
    from genkit import GenkitError as PeerError

    try:
        yield
    except PeerError as error:
        message = str(getattr(error, "original_message", None) or error)
        reason = getattr(error, "reason", None)
        raise GenkitError(
            Status(error.status or "UNKNOWN"),
            message,
            details=getattr(error, "details", None),
            reason=None if reason is None else str(getattr(reason, "value", reason)),
        ) from None


class GenkitPeerStore:
    """An async store backed by ``genkit.exp.agent.InMemorySessionStore``."""

    def __init__(self) -> None:
        from genkit.exp.agent import InMemorySessionStore
        from genkit.exp.agent import SessionSnapshot as PeerSnapshot

        self.peer: Any = InMemorySessionStore()
        self._peer_snapshot: Any = PeerSnapshot

    def _theirs(self, snapshot: SessionSnapshot) -> Any:
        from pydantic import ValidationError

        data = to_wire(snapshot)
        data.setdefault("createdAt", "")  # empty: Genkit's store stamps it
        try:
            return self._peer_snapshot.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"Genkit's SessionSnapshot model refuses this snapshot: {problems}",
            ) from None

    @staticmethod
    def _ours(snapshot: Any) -> SessionSnapshot:
        return from_wire(SessionSnapshot, snapshot.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        """Genkit's ``get_snapshot``, its answer decoded into our model."""
        with _translated():
            found = await self.peer.get_snapshot(
                snapshot_id=snapshot_id, session_id=session_id, context=None if context is None else dict(context)
            )
        return None if found is None else self._ours(found)

    async def save_snapshot(
        self, snapshot_id: str, mutator: Mutator, *, context: Context = None
    ) -> SessionSnapshot | None:
        """Genkit's ``save_snapshot`` with our mutator translated both ways."""

        def fn(existing: Any) -> Any:
            result = mutator(None if existing is None else self._ours(existing))
            return None if result is None else self._theirs(result)

        with _translated():
            saved = await self.peer.save_snapshot(snapshot_id, fn, context=None if context is None else dict(context))
        return None if saved is None else self._ours(saved)

    async def watch_status(self, snapshot_id: str, *, context: Context = None) -> AsyncIterator[SnapshotStatus]:
        """Genkit's ``on_snapshot_status_change``, as our status values."""
        with _translated():
            stream = await self.peer.on_snapshot_status_change(
                snapshot_id, context=None if context is None else dict(context)
            )
        try:
            async for status in stream:
                yield SnapshotStatus(getattr(status, "value", status) or "completed")
        finally:
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                await closer()

    async def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        """Plant snapshots verbatim into Genkit's dictionary (it has no tenants, so ``context`` is unused).

        Genkit's store has no restore of its own, so this one makes the refusals every restore makes
        (docs/contract.md, Restore) over the whole batch before planting any of it: a restore case
        judges the adapter, never Genkit.
        """
        batch = [restorable(snapshot)[0] for snapshot in snapshots]
        count = 0
        for snapshot in batch:
            self.peer.snapshots[snapshot.snapshot_id] = self._theirs(snapshot)
            count += 1
        return count
