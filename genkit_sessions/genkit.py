"""Any of our async stores as Genkit Python's own session store (``genkit==0.12.0``).

``GenkitSessionStore(store.aio)`` is a ``genkit.exp.agent.SessionStore`` and,
when the store can watch statuses, a ``SnapshotSubscriber``, so a Genkit agent
runs on it unchanged (contract rule G1)::

    from genkit_sessions.genkit import GenkitSessionStore

    agent = ai.define_agent(name="chat", model="...", store=GenkitSessionStore(dynamodb_store.aio))

How it translates (it decides nothing; the wrapped store's rules S1-S12 apply):

- snapshots cross as Genkit's wire JSON: ours are written with ``to_wire`` and
  validated by Genkit's pydantic models, Genkit's are dumped the way Genkit
  dumps them and read with ``from_wire``;
- Genkit's models refuse keys they do not know and drop parts without a kind,
  so those are stripped on the way to Genkit and merged back from the stored
  snapshot when Genkit saves (G3): a rewrite of the same snapshot gets them
  back from the snapshot it rewrites, a new snapshot gets back those of its
  parent's messages and artifacts that it carries unchanged;
- our :class:`~genkit_sessions.errors.GenkitError` reaches Genkit as Genkit's
  own ``GenkitError`` with the same status, message and reason (G4).

Genkit resolves the session itself (``load_session`` in its agent runtime: it
walks back from a leaf that is not completed, and reports an unknown snapshot as
a failed turn); our resolver is not involved. See ``docs/genkit.md``.
"""

from __future__ import annotations

import collections
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from genkit_sessions.errors import GenkitError, Status
from genkit_sessions.model.types import SessionSnapshot, SnapshotStatus
from genkit_sessions.model.wire import from_wire, to_wire
from genkit_sessions.stores.protocol import AsyncSessionStore

if TYPE_CHECKING:  # genkit is an optional dependency (the ``genkit`` extra)
    from genkit import GenkitError as GenkitPeerError
    from genkit.exp.agent import SessionSnapshot as GenkitSnapshot
    from genkit.exp.agent import SnapshotStatus as GenkitStatus

__all__ = ["GenkitSessionStore", "GenkitStatusStream", "to_genkit_error"]

GenkitMutator = Callable[["GenkitSnapshot | None"], "GenkitSnapshot | None"]
"""What Genkit hands ``save_snapshot``: its own snapshot (or None) in, the one to store (or None) out."""

# --- what Genkit's models keep (genkit 0.12.0, module genkit._core._typing) ----------------------

_KNOWN: dict[str, frozenset[str]] = {
    "snapshot": frozenset(
        {
            "snapshotId",
            "sessionId",
            "parentId",
            "createdAt",
            "updatedAt",
            "heartbeatAt",
            "status",
            "finishReason",
            "error",
            "state",
        }
    ),
    "error": frozenset({"status", "message", "details"}),
    "state": frozenset({"sessionId", "messages", "custom", "artifacts"}),
    "message": frozenset({"role", "content", "metadata"}),
    "artifact": frozenset({"name", "parts", "metadata"}),
    "part": frozenset(
        {"text", "media", "toolRequest", "toolResponse", "data", "metadata", "custom", "reasoning", "resource"}
    ),
    "media": frozenset({"url", "contentType"}),
    "toolRequest": frozenset({"ref", "name", "input", "partial"}),
    "toolResponse": frozenset({"ref", "name", "output", "content"}),  # content is list[Any]: kept whole
    "resource": frozenset({"uri"}),
}
_KINDS = ("text", "media", "toolRequest", "toolResponse", "data", "custom", "reasoning", "resource")


class _View:
    """Genkit's view of one of our wire snapshots, and whether making it dropped anything."""

    __slots__ = ("lossy",)

    def __init__(self) -> None:
        self.lossy = False

    def keep(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        known = _KNOWN[kind]
        kept = {k: v for k, v in obj.items() if k in known}
        if len(kept) != len(obj):
            self.lossy = True
        return kept

    def parts(self, parts: list[Any]) -> list[Any]:
        out = []
        for part in parts:
            kept = self.keep("part", part)
            for sub in ("media", "toolRequest", "toolResponse", "resource"):
                if isinstance(kept.get(sub), Mapping):
                    kept[sub] = self.keep(sub, kept[sub])
            if any(kept.get(k) is not None for k in _KINDS):
                out.append(kept)
            else:  # Genkit drops a part without a kind (and writes {"data": null} back as {})
                self.lossy = True
        return out

    def message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        kept = self.keep("message", message)
        kept["content"] = self.parts(kept["content"])
        return kept

    def artifact(self, artifact: Mapping[str, Any]) -> dict[str, Any]:
        kept = self.keep("artifact", artifact)
        kept["parts"] = self.parts(kept["parts"])
        return kept

    def state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        kept = self.keep("state", state)
        if "messages" in kept:
            kept["messages"] = [self.message(m) for m in kept["messages"]]
        if "artifacts" in kept:
            kept["artifacts"] = [self.artifact(a) for a in kept["artifacts"]]
        return kept

    def snapshot(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        kept = self.keep("snapshot", snapshot)
        if "error" in kept:
            kept["error"] = self.keep("error", kept["error"])
        if "state" in kept:
            kept["state"] = self.state(kept["state"])
        return kept


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _without_nulls(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def _match_form(item: Any) -> str:
    """A message or artifact as Genkit writes it back: its dump leaves out null fields (of the item, its
    parts and their media, tool request, tool response and resource; free-form JSON is kept as it is),
    and its agent drops a message's empty ``metadata``. Two items that agree in this form are the same
    item to Genkit."""
    if not isinstance(item, Mapping):
        return _canonical(item)
    form = _without_nulls(item)
    if form.get("metadata") == {}:
        del form["metadata"]
    for key in ("content", "parts"):
        if isinstance(form.get(key), list):
            form[key] = [_part_form(part) for part in form[key]]
    return _canonical(form)


def _part_form(part: Any) -> Any:
    if not isinstance(part, Mapping):
        return part
    form = _without_nulls(part)
    for sub in ("media", "toolRequest", "toolResponse", "resource"):
        if isinstance(form.get(sub), Mapping):
            form[sub] = _without_nulls(form[sub])
    return form


def _restore_items(saved: list[Any], full: list[Any], view: Callable[[Any], Any]) -> list[Any]:
    """Each saved item that is Genkit's view of a stored item, as Genkit writes it back (see
    :func:`_match_form`), becomes that stored item again (matched in order, so repeated items pair up
    first with first)."""
    pending: dict[str, collections.deque[Any]] = {}
    for item in full:
        pending.setdefault(_match_form(view(item)), collections.deque()).append(item)
    out = []
    for item in saved:
        queue = pending.get(_match_form(item))
        out.append(queue.popleft() if queue else item)
    return out


def _restore(saved: dict[str, Any], full: Mapping[str, Any], same_snapshot: bool) -> dict[str, Any]:
    """G3: put back into ``saved`` (what Genkit wrote) what Genkit's view of ``full`` (what we store)
    left out. A rewrite of the same snapshot gets its own unknown keys and error back; a new snapshot
    gets back the stored form of every message and artifact it carries over unchanged."""
    view = _View()
    if same_snapshot:
        for key, value in full.items():
            if key not in _KNOWN["snapshot"] and key not in saved:
                saved[key] = value
        if isinstance(full.get("error"), Mapping) and saved.get("error") == view.keep("error", full["error"]):
            saved["error"] = full["error"]
    state, stored = saved.get("state"), full.get("state")
    if isinstance(state, dict) and isinstance(stored, Mapping):
        for key, value in stored.items():
            if key not in _KNOWN["state"] and key not in state:
                state[key] = value
        if state.get("messages") and stored.get("messages"):
            state["messages"] = _restore_items(state["messages"], stored["messages"], view.message)
        if state.get("artifacts") and stored.get("artifacts"):
            state["artifacts"] = _restore_items(state["artifacts"], stored["artifacts"], view.artifact)
    return saved


# --- errors -----------------------------------------------------------------------------------------


def to_genkit_error(error: GenkitError) -> GenkitPeerError:
    """Our error as Genkit's ``GenkitError``: the same status, message, details and reason (G4).

    A reason Genkit does not define still reaches it, as ``details["reason"]`` (where Genkit
    itself keeps a reason)."""
    from genkit import GenkitError as PeerError
    from genkit._core._error import RuntimeErrorReason

    details: Any = error.details
    if details is not None and not isinstance(details, Mapping):
        details = {"details": details}
    reason = None
    if error.reason is not None:
        try:
            reason = RuntimeErrorReason(error.reason)
        except ValueError:
            details = {**(details or {}), "reason": error.reason}
    return PeerError(status=error.status.value, message=error.message, details=details, reason=reason)


class _NeedParent(Exception):
    """Raised from inside a save's mutator when the new snapshot's parent must be read first."""

    def __init__(self, parent_id: str) -> None:
        super().__init__(parent_id)
        self.parent_id = parent_id


_UNKNOWN = object()


class GenkitSessionStore:
    """One of our async stores (``store.aio``, or any :class:`AsyncSessionStore`) as Genkit Python's
    ``SessionStore`` and, through :meth:`on_snapshot_status_change`, its ``SnapshotSubscriber``.

    ``remember`` bounds how many snapshots it keeps the stored form of (those Genkit read or
    wrote through it), so a new snapshot can get back what Genkit's view of its parent left out
    without reading the parent again; a parent it does not remember is read from the store.
    """

    def __init__(self, store: AsyncSessionStore, *, remember: int = 4096) -> None:
        if not isinstance(store, AsyncSessionStore):
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"GenkitSessionStore wraps an async store, got {type(store).__name__}; "
                "pass the store's async face (store.aio)",
            )
        from genkit.exp.agent import SessionSnapshot as PeerSnapshot
        from genkit.exp.agent import SnapshotStatus as PeerStatus

        self.store = store
        self._peer_snapshot: type[GenkitSnapshot] = PeerSnapshot
        self._peer_status: type[GenkitStatus] = PeerStatus
        self._limit = remember
        self._stored: collections.OrderedDict[tuple[str, str], dict[str, Any] | None] = collections.OrderedDict()

    # --- conversions --------------------------------------------------------------------------------

    def _theirs(self, snapshot: SessionSnapshot) -> tuple[GenkitSnapshot, dict[str, Any], bool]:
        """Genkit's model of ``snapshot``, our wire JSON of it, and whether Genkit's view dropped anything."""
        from pydantic import ValidationError

        wire = to_wire(snapshot)
        view = _View()
        kept = view.snapshot(wire)
        try:
            model = self._peer_snapshot.model_validate(kept)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise to_genkit_error(
                GenkitError(
                    Status.DATA_LOSS,
                    f"snapshot {snapshot.snapshot_id!r} cannot be read by Genkit's SessionSnapshot model: "
                    f"{problems}; repair the stored snapshot or resume from another one",
                )
            ) from None
        return model, wire, view.lossy

    @staticmethod
    def _dump(snapshot: GenkitSnapshot) -> dict[str, Any]:
        data: dict[str, Any] = snapshot.model_dump(by_alias=True, exclude_none=True, mode="json")
        return data

    @staticmethod
    def _tenant_key(context: Mapping[str, Any] | None) -> str:
        return "" if not context else _canonical(context)

    def _remember(self, context: Mapping[str, Any] | None, snapshot_id: str, wire: dict[str, Any] | None) -> None:
        key = (self._tenant_key(context), snapshot_id)
        self._stored[key] = wire
        self._stored.move_to_end(key)
        while len(self._stored) > self._limit:
            self._stored.popitem(last=False)

    def _handed_out(self, snapshot: SessionSnapshot, context: Mapping[str, Any] | None) -> GenkitSnapshot:
        model, wire, lossy = self._theirs(snapshot)
        self._remember(context, snapshot.snapshot_id, wire if lossy else None)
        return model

    # --- SessionStore -------------------------------------------------------------------------------

    async def get_snapshot(
        self,
        *,
        snapshot_id: str | None = None,
        session_id: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> GenkitSnapshot | None:
        """The wrapped store's ``get_snapshot`` (S1, S2, S8, S10), answered as Genkit's model."""
        try:
            found = await self.store.get_snapshot(snapshot_id=snapshot_id, session_id=session_id, context=context)
        except GenkitError as error:
            raise to_genkit_error(error) from None
        return None if found is None else self._handed_out(found, context)

    async def save_snapshot(
        self,
        snapshot_id: str,
        fn: GenkitMutator,
        *,
        context: dict[str, Any] | None = None,
    ) -> GenkitSnapshot | None:
        """The wrapped store's atomic ``save_snapshot`` (S3-S7) with Genkit's mutator translated both ways.

        What Genkit's view left out of the snapshot it rewrites, or of the parent it continues, is
        merged back into what it returns (G3), so nothing stored is lost."""
        tenant = self._tenant_key(context)

        def mutator(existing: SessionSnapshot | None) -> SessionSnapshot | None:
            if existing is not None:
                theirs, wire, lossy = self._theirs(existing)
                result = fn(theirs)
                if result is None:
                    return None
                saved = self._dump(result)
                if lossy:
                    saved = _restore(saved, wire, same_snapshot=True)
            else:
                result = fn(None)
                if result is None:
                    return None
                saved = self._dump(result)
                parent_id = saved.get("parentId")
                if parent_id:
                    parent = self._stored.get((tenant, parent_id), _UNKNOWN)
                    if parent is _UNKNOWN:
                        raise _NeedParent(parent_id)
                    if parent is not None:
                        saved = _restore(saved, parent, same_snapshot=False)  # type: ignore[arg-type]
            if not saved.get("createdAt"):
                saved["createdAt"] = existing.created_at if existing is not None else "1970-01-01T00:00:00Z"
            return from_wire(SessionSnapshot, saved)

        for _ in range(2):
            try:
                stored = await self.store.save_snapshot(snapshot_id, mutator, context=context)
            except _NeedParent as need:
                try:
                    parent = await self.store.get_snapshot(snapshot_id=need.parent_id, context=context)
                except GenkitError as error:
                    raise to_genkit_error(error) from None
                wire = None
                if parent is not None:
                    _, parent_wire, lossy = self._theirs(parent)
                    wire = parent_wire if lossy else None
                self._remember(context, need.parent_id, wire)
                continue
            except GenkitError as error:
                raise to_genkit_error(error) from None
            return None if stored is None else self._handed_out(stored, context)
        raise to_genkit_error(
            GenkitError(
                Status.ABORTED,
                f"snapshot {snapshot_id!r}: its parent was evicted while saving; save it again",
            )
        )

    # --- SnapshotSubscriber -------------------------------------------------------------------------

    async def on_snapshot_status_change(
        self, snapshot_id: str, *, context: dict[str, Any] | None = None
    ) -> GenkitStatusStream:
        """The wrapped store's ``watch_status`` (S11) as Genkit's status stream: the current status,
        then each change, ending after a terminal one. UNIMPLEMENTED when the store cannot watch."""
        watch = getattr(self.store, "watch_status", None)
        if watch is None:
            raise to_genkit_error(
                GenkitError(
                    Status.UNIMPLEMENTED,
                    f"{type(self.store).__name__} cannot watch snapshot statuses, so Genkit cannot detach or "
                    "abort turns on it; wrap a store that has watch_status (both of this package's stores do)",
                )
            )
        return GenkitStatusStream(watch(snapshot_id, context=context), self._peer_status)


class GenkitStatusStream:
    """One of our status streams as Genkit's ``SnapshotStatusStream`` (``async for`` and ``aclose``)."""

    def __init__(self, source: AsyncIterator[SnapshotStatus], status_type: type[GenkitStatus]) -> None:
        self._source = source
        self._status_type = status_type

    def __aiter__(self) -> GenkitStatusStream:
        return self

    async def __anext__(self) -> GenkitStatus:
        try:
            status = await self._source.__anext__()
        except GenkitError as error:
            raise to_genkit_error(error) from None
        return self._status_type(status.value)

    async def aclose(self) -> None:
        """Stop watching."""
        closer = getattr(self._source, "aclose", None)
        if closer is not None:
            await closer()
