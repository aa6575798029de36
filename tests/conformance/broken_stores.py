"""Deliberately broken stores: each wraps an in-memory store and violates exactly one rule.

They exist to prove the suite catches each violation and names the rule.
``BROKEN_STORES`` maps every class to the rule the suite must name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.clock import utc_now
from genkit_sessions.model.frozen_json import thaw
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus
from genkit_sessions.stores.memory import InMemorySessionStore
from genkit_sessions.stores.protocol import Context, Mutator


class _Wrapper:
    """Delegates everything to a fresh in-memory store; subclasses override one behaviour."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        return self.inner.get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        return self.inner.save_snapshot(snapshot_id, mutator, context=context)

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        return self.inner.list_snapshots(session_id, context=context)

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        return self.inner.delete_session(session_id, context=context)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        return self.inner.abort_snapshot(snapshot_id, context=context)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        return self.inner.heartbeat(snapshot_id, context=context)

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        return self.inner.restore_snapshots(snapshots, context=context)

    def _plant(self, snapshot: SessionSnapshot, context: Context) -> SessionSnapshot:
        """Write ``snapshot`` bypassing every rule (what a careless backend would do)."""
        self.inner.restore_snapshots([snapshot], context=context)
        return snapshot

    def _stamped(self, snapshot_id: str, result: SessionSnapshot, existing: SessionSnapshot | None) -> SessionSnapshot:
        now = utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        session_id = result.session_id or (result.state.session_id if result.state else None)
        return attrs.evolve(
            result,
            snapshot_id=snapshot_id,
            session_id=session_id or (existing.session_id if existing else None),
            created_at=existing.created_at if existing is not None else now,
            updated_at=now,
            status=result.effective_status,
        )


class SelectorNotChecked(_Wrapper):
    """S1: a read with both selectors answers by snapshot id instead of refusing."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        if snapshot_id is not None and session_id is not None:
            return self.inner.get_snapshot(snapshot_id=snapshot_id, context=context)
        return super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)


class AbsentRaisesNotFound(_Wrapper):
    """S2: an absent snapshot raises NOT_FOUND instead of reading as none."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        found = super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        if found is None:
            raise GenkitError(Status.NOT_FOUND, f"no snapshot {snapshot_id or session_id!r}")
        return found


class BlindMutator(_Wrapper):
    """S3: the mutator is shown none instead of the current snapshot."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        return self.inner.save_snapshot(snapshot_id, lambda _existing: mutator(None), context=context)


class CreatedAtRewritten(_Wrapper):
    """S4: every write stamps a new createdAt."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        saved = self.inner.save_snapshot(snapshot_id, mutator, context=context)
        if saved is None:
            return None
        return self._plant(attrs.evolve(saved, created_at=saved.updated_at or saved.created_at), context)


class TerminalStatusMutable(_Wrapper):
    """S5: a completed, failed or aborted snapshot may change status."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        existing = self.inner.get_snapshot(snapshot_id=snapshot_id, context=context)
        if existing is not None and existing.effective_status.is_terminal:
            result = mutator(existing)
            if result is None:
                return None
            if result.effective_status is not existing.effective_status:
                return self._plant(self._stamped(snapshot_id, result, existing), context)
        return self.inner.save_snapshot(snapshot_id, mutator, context=context)


class ReparentAllowed(_Wrapper):
    """S6: an existing snapshot may be given another parent."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        existing = self.inner.get_snapshot(snapshot_id=snapshot_id, context=context)
        if existing is not None:
            result = mutator(existing)
            if result is not None and result.parent_id != existing.parent_id:
                return self._plant(self._stamped(snapshot_id, result, existing), context)
        return self.inner.save_snapshot(snapshot_id, mutator, context=context)


class ParentNotChecked(_Wrapper):
    """S7: a new snapshot is written even when its parent does not exist."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        if self.inner.get_snapshot(snapshot_id=snapshot_id, context=context) is None:
            result = mutator(None)
            if result is not None and result.parent_id is not None:
                parent = self.inner.get_snapshot(snapshot_id=result.parent_id, context=context)
                if parent is None:
                    return self._plant(self._stamped(snapshot_id, result, None), context)
        return self.inner.save_snapshot(snapshot_id, mutator, context=context)


class OldestLeaf(_Wrapper):
    """S8: a session lookup returns the oldest leaf instead of the newest."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        if session_id is None or snapshot_id is not None:
            return super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        members = self.inner.list_snapshots(session_id, context=context)
        parents = {s.parent_id for s in members}
        leaves = [s for s in members if s.snapshot_id not in parents]
        return min(leaves, key=lambda s: (s.created_at, s.snapshot_id)) if leaves else None


class SharedMutableReads(_Wrapper):
    """S9: reads hand out the stored object with a mutable custom state, so callers can change it."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        saved = self.inner.save_snapshot(snapshot_id, mutator, context=context)
        if saved is not None and saved.state is not None and isinstance(saved.state.custom, dict):
            object.__setattr__(saved.state, "custom", thaw(saved.state.custom))
        return saved

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        planted = list(snapshots)
        count = self.inner.restore_snapshots(planted, context=context)
        for snapshot in planted:
            stored = self.inner.get_snapshot(snapshot_id=snapshot.snapshot_id, context=context)
            if stored is not None and stored.state is not None and isinstance(stored.state.custom, dict):
                object.__setattr__(stored.state, "custom", thaw(stored.state.custom))
        return count


class LeakyTenants(_Wrapper):
    """S10: the tenant in the context is ignored, so every tenant sees every other's data."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        return self.inner.get_snapshot(snapshot_id=snapshot_id, session_id=session_id)

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        return self.inner.save_snapshot(snapshot_id, mutator)

    def list_snapshots(self, session_id: str, *, context: Context = None) -> Sequence[SessionSnapshot]:
        return self.inner.list_snapshots(session_id)

    def delete_session(self, session_id: str, *, context: Context = None) -> int:
        return self.inner.delete_session(session_id)

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        return self.inner.abort_snapshot(snapshot_id)

    def heartbeat(self, snapshot_id: str, *, context: Context = None) -> SessionSnapshot:
        return self.inner.heartbeat(snapshot_id)

    def restore_snapshots(self, snapshots: Iterable[SessionSnapshot], *, context: Context = None) -> int:
        return self.inner.restore_snapshots(snapshots)


class AbortReportsNewStatus(_Wrapper):
    """S11: abort returns the status it wrote (aborted) instead of the one it saw."""

    def abort_snapshot(self, snapshot_id: str, *, context: Context = None) -> SnapshotStatus | None:
        before = self.inner.abort_snapshot(snapshot_id, context=context)
        return None if before is None else SnapshotStatus.ABORTED


class RawBackendErrors(_Wrapper):
    """S12: a backend failure escapes as a raw exception instead of a status-carrying error."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        try:
            return super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        except GenkitError as error:
            raise ValueError(f"ValidationException: {error.message}") from None

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        try:
            return super().save_snapshot(snapshot_id, mutator, context=context)
        except GenkitError as error:
            raise ValueError(f"ValidationException: {error.message}") from None


class UnstampedId(_Wrapper):
    """S4: the store keeps whatever snapshot id the mutator's snapshot carries."""

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        kept: list[str] = []

        def remember(existing: SessionSnapshot | None) -> SessionSnapshot | None:
            result = mutator(existing)
            if result is not None:
                kept.append(result.snapshot_id)
            return result

        saved = self.inner.save_snapshot(snapshot_id, remember, context=context)
        if saved is None or not kept or kept[-1] == snapshot_id:
            return saved
        return attrs.evolve(saved, snapshot_id=kept[-1])


class CycleReadsAsEmpty(_Wrapper):
    """R16: a session whose snapshots form a cycle reads as an empty session instead of DATA_LOSS."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        try:
            return super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        except GenkitError as error:
            if error.status is Status.DATA_LOSS:
                return None
            raise


class NoIdLimits(_Wrapper):
    """ID: ids over 512 bytes are accepted (a store that only checks for emptiness)."""

    def __init__(self) -> None:
        super().__init__()
        self.long: dict[str, SessionSnapshot] = {}
        """Snapshots under ids the in-memory store (even its restore) refuses, kept beside it."""

    def get_snapshot(
        self, *, snapshot_id: str | None = None, session_id: str | None = None, context: Context = None
    ) -> SessionSnapshot | None:
        if snapshot_id is not None and snapshot_id in self.long:
            return self.long[snapshot_id]
        return super().get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)

    def save_snapshot(self, snapshot_id: str, mutator: Mutator, *, context: Context = None) -> SessionSnapshot | None:
        if len(snapshot_id.encode("utf-8")) > 512:
            result = mutator(self.long.get(snapshot_id))
            if result is None:
                return None
            self.long[snapshot_id] = self._stamped(snapshot_id, result, None)
            return self.long[snapshot_id]
        return super().save_snapshot(snapshot_id, mutator, context=context)


BROKEN_STORES: dict[type[Any], str] = {
    SelectorNotChecked: "S1",
    AbsentRaisesNotFound: "S2",
    BlindMutator: "S3",
    CreatedAtRewritten: "S4",
    UnstampedId: "S4",
    TerminalStatusMutable: "S5",
    ReparentAllowed: "S6",
    ParentNotChecked: "S7",
    OldestLeaf: "S8",
    SharedMutableReads: "S9",
    LeakyTenants: "S10",
    AbortReportsNewStatus: "S11",
    RawBackendErrors: "S12",
    CycleReadsAsEmpty: "R16",
    NoIdLimits: "ID",
}
"""Each broken store, and the rule whose name must appear in the suite's failure messages."""
