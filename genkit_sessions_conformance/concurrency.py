"""Concurrency cases: writers racing on one store, judged against a sequential model.

A ``race`` step runs several writers at once (threads for a blocking store, tasks for an async one,
or, with ``"processes": true``, one operating-system process per writer on a store the factory can
share across processes). Each writer runs its own list of steps in order. While they run, a reader
polls the session's leaf. The race passes when:

- every step ends in a result or a status-carrying error (never a raw exception, S12);
- every leaf the reader saw is a snapshot the store held before the race or one whose save
  succeeded (a reader never sees a write that then fails);
- the history is **linearizable**: there is one order of all the steps, keeping each writer's own
  order, in which the in-memory store (this package's reference, every rule of the contract) gives
  every step the same outcome (the same returned value, or an error where the store raised one)
  and ends holding the same snapshots (ids, parents, statuses, states), leaf and version. A step
  the store failed with ABORTED (contention outlasted its retries), or with any status where the
  step says ``"mayFail": true`` (a save racing a deletion, V6), may instead have had no effect.
  No lost update follows: an update the model would lose cannot be in any order.

A failed race names every check that failed, the reader's finding first: what the reader happened
to see depends on timing, the linearizability verdict does not, so the verdict is in the report on
every run.

Whether a failure can be blamed on the store depends on the backend: the report says whether the
backend under the store is known to be linearizable (a factory's ``linearizable`` attribute: True,
False, or absent for unknown).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from genkit_sessions.errors import GenkitError
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.model.wire import from_wire, to_wire
from genkit_sessions.stores.memory import InMemorySessionStore

__all__ = ["Outcome", "linearizable_label", "normalise", "run_race"]

Outcome = tuple[str, Any]
"""("ok", a normalised result) or ("error", a status name)."""

Perform = Callable[[Any, Mapping[str, Any]], Awaitable[Any]]
"""Runs one step on a store handle and returns its raw result (raising what the store raised)."""

_STAMPS = ("createdAt", "updatedAt", "heartbeatAt")
_MAX_NODES = 200_000


def linearizable_label(factory: Any) -> str:
    """``yes``, ``no`` or ``unknown``: what the factory says of the backend under its stores."""
    known = getattr(factory, "linearizable", None)
    return "unknown" if known is None else ("yes" if known else "no")


def normalise(value: Any) -> Any:
    """A step's result as plain JSON that two stores agree on (no timestamps; a snapshot as wire JSON)."""
    if isinstance(value, SessionSnapshot):
        wire = to_wire(value)
        return {k: v for k, v in wire.items() if k not in _STAMPS}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, Mapping):
        return {k: normalise(v) for k, v in value.items() if k not in _STAMPS}
    return value


async def _outcome(perform: Perform, handle: Any, step: Mapping[str, Any]) -> Outcome:
    try:
        return "ok", normalise(await perform(handle, step))
    except GenkitError as error:
        return "error", error.status.value
    except Exception as error:  # reported as a broken rule (S12), not raised
        return "raw", f"{type(error).__name__}: {error}"


async def observe(handle: Any, session_ids: Sequence[str], tenant_context: Any, records: bool) -> Any:
    """What the store holds for ``session_ids``: each session's snapshots (by id), leaf and version."""
    seen: dict[str, Any] = {}
    for session_id in session_ids:
        listed = await handle.call("list_snapshots", session_id, context=tenant_context)
        leaf = await handle.call("get_snapshot", session_id=session_id, context=tenant_context)
        entry: dict[str, Any] = {
            "snapshots": sorted((normalise(s) for s in listed), key=lambda s: s["snapshotId"]),
            "leaf": leaf.snapshot_id if leaf is not None else None,
        }
        if records:
            record = await handle.call("get_session_record", session_id, context=tenant_context)
            entry["version"] = record.version if record is not None else 0
        seen[session_id] = entry
    return seen


# --- running the writers ------------------------------------------------------------------------


async def _writer(perform: Perform, handle: Any, steps: Sequence[Mapping[str, Any]]) -> list[Outcome]:
    return [await _outcome(perform, handle, step) for step in steps]


def _process_writer(opener: Callable[[], Any], steps: Sequence[Mapping[str, Any]], start: Any) -> list[Outcome]:
    """One writer in a process of its own: open the shared store, wait for the others, run the steps,
    report the outcomes."""
    from genkit_sessions_conformance.runner import perform_step
    from genkit_sessions_conformance.store_handle import StoreHandle

    handle = StoreHandle(opener())
    start.wait(timeout=300)
    return asyncio.run(_writer(perform_step, handle, steps))


async def _leaf_reader(handle: Any, session_id: str, context: Any, done: threading.Event, seen: set[Any]) -> None:
    while not done.is_set():
        try:
            leaf = await handle.call("get_snapshot", session_id=session_id, context=context)
        except GenkitError:
            continue
        seen.add(leaf.snapshot_id if leaf is not None else None)
        await asyncio.sleep(0)


async def _run_writers(
    perform: Perform,
    handle: Any,
    writers: Sequence[Sequence[Mapping[str, Any]]],
    session_id: str,
    context: Any,
    opener: Callable[[], Any] | None,
) -> tuple[list[list[Outcome]], set[Any]]:
    done = threading.Event()
    leaves: set[Any] = set()
    if opener is not None:
        import multiprocessing

        spawn = multiprocessing.get_context("spawn")
        manager = spawn.Manager()
        start = manager.Barrier(len(writers))
        processes = concurrent.futures.ProcessPoolExecutor(len(writers), mp_context=spawn)
        loop = asyncio.get_running_loop()
        try:
            futures = [loop.run_in_executor(processes, _process_writer, opener, list(w), start) for w in writers]
            reader = asyncio.create_task(_read_in_thread(handle, session_id, context, done, leaves))
            outcomes = list(await asyncio.gather(*futures))
        finally:
            done.set()
            processes.shutdown()
            manager.shutdown()
        await reader
        return outcomes, leaves
    if handle.is_async:
        reader = asyncio.create_task(_leaf_reader(handle, session_id, context, done, leaves))
        outcomes = list(await asyncio.gather(*(_writer(perform, handle, w) for w in writers)))
        done.set()
        await reader
        return outcomes, leaves
    barrier = threading.Barrier(len(writers))

    def in_thread(steps: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        barrier.wait()
        return asyncio.run(_writer(perform, handle, steps))

    loop = asyncio.get_running_loop()
    with concurrent.futures.ThreadPoolExecutor(len(writers) + 1) as pool:
        reader_future = loop.run_in_executor(
            pool, lambda: asyncio.run(_leaf_reader(handle, session_id, context, done, leaves))
        )
        try:
            outcomes = list(await asyncio.gather(*(loop.run_in_executor(pool, in_thread, w) for w in writers)))
        finally:
            done.set()
        await reader_future
    return outcomes, leaves


async def _read_in_thread(handle: Any, session_id: str, context: Any, done: threading.Event, seen: set[Any]) -> None:
    if handle.is_async:
        await _leaf_reader(handle, session_id, context, done, seen)
    else:
        await asyncio.to_thread(lambda: asyncio.run(_leaf_reader(handle, session_id, context, done, seen)))


# --- the sequential model -----------------------------------------------------------------------


class _Model:
    """Replays step sequences on fresh in-memory stores seeded like the store under test."""

    def __init__(self, perform: Perform, seed: Sequence[tuple[Any, list[SessionSnapshot]]]) -> None:
        self._perform = perform
        self._seed = seed

    async def replay(self, steps: Sequence[Mapping[str, Any] | None]) -> tuple[list[Outcome | None], Any]:
        from genkit_sessions_conformance.store_handle import StoreHandle

        store = InMemorySessionStore()
        for context, snapshots in self._seed:
            store.restore_snapshots(snapshots, context=context)
        handle = StoreHandle(store)
        outcomes: list[Outcome | None] = []
        for step in steps:
            outcomes.append(None if step is None else await _outcome(self._perform, handle, step))
        return outcomes, handle


async def _linearize(
    model: _Model,
    writers: Sequence[Sequence[Mapping[str, Any]]],
    observed: Sequence[Sequence[Outcome]],
    final: Callable[[Any], Awaitable[Any]],
    expected_final: Any,
) -> bool:
    """Depth-first search for an order of every writer's steps (each writer's kept) that the model
    agrees with step by step and at the end. A step the store failed with ABORTED may be skipped."""
    visited: set[Any] = set()
    nodes = 0

    async def search(positions: tuple[int, ...], path: tuple[tuple[int, int, bool], ...]) -> bool:
        nonlocal nodes
        nodes += 1
        if nodes > _MAX_NODES:
            raise _TooMany()
        steps = [None if skipped else writers[w][i] for w, i, skipped in path]
        outcomes, handle = await model.replay(steps)
        for (w, i, skipped), got in zip(path, outcomes, strict=True):
            if not skipped and got != observed[w][i]:
                return False
        key = (positions, repr(await final(handle)))
        if key in visited:
            return False
        visited.add(key)
        if all(p == len(writers[w]) for w, p in enumerate(positions)):
            return bool(await final(handle) == expected_final)
        for w, p in enumerate(positions):
            if p == len(writers[w]):
                continue
            after = tuple(q + 1 if v == w else q for v, q in enumerate(positions))
            failed = observed[w][p][0] == "error"
            may_skip = failed and (observed[w][p][1] == "ABORTED" or bool(writers[w][p].get("mayFail")))
            choices = [False, True] if may_skip else [False]
            for skipped in choices:
                if await search(after, (*path, (w, p, skipped))):
                    return True
        return False

    return await search(tuple(0 for _ in writers), ())


class _TooMany(Exception):
    pass


async def run_race(
    perform: Perform,
    handle: Any,
    step: Mapping[str, Any],
    seed: Sequence[tuple[Any, list[SessionSnapshot]]],
    context: Any,
    records: bool,
    opener: Callable[[], Any] | None,
) -> str | None:
    """Run one ``race`` step; None when it passes, else what went wrong."""
    writers: list[list[Mapping[str, Any]]] = [list(w) for w in step["writers"]]
    session_ids: list[str] = list(step["observe"])
    outcomes, leaves = await _run_writers(perform, handle, writers, session_ids[0], context, opener)
    raw = [(w, i, o[1]) for w, out in enumerate(outcomes) for i, o in enumerate(out) if o[0] == "raw"]
    if raw:
        w, i, what = raw[0]
        return f"writer {w + 1} step {i + 1} raised a raw {what} [S12]"
    saved = {
        writers[w][i]["snapshotId"]
        for w, out in enumerate(outcomes)
        for i, o in enumerate(out)
        if o[0] == "ok" and writers[w][i]["op"] == "save"
    }
    held = {s.snapshot_id for _, snapshots in seed for s in snapshots}
    findings: list[str] = []
    stray = sorted(str(leaf) for leaf in leaves if leaf is not None and leaf not in saved | held)
    if stray:
        findings.append(f"a reader saw leaf {stray} during the race, a snapshot whose save did not succeed")
    final = await observe(handle, session_ids, context, records)

    async def model_final(model_handle: Any) -> Any:
        return await observe(model_handle, session_ids, context, records)

    try:
        ok = await _linearize(_Model(perform, seed), writers, outcomes, model_final, final)
    except _TooMany:
        findings.append(f"the history could not be checked within {_MAX_NODES} orders; race fewer steps")
        ok = True
    if not ok:
        shown = "; ".join(
            f"writer {w + 1}: " + ", ".join(f"{o[0]} {_brief(o[1])}" for o in out) for w, out in enumerate(outcomes)
        )
        findings.append(
            f"no order of the writers' steps explains what the store answered and holds ({shown}; holds {final})"
        )
    return "; and ".join(findings) if findings else None


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def seed_groups(given: Mapping[str, Any], context_for: Callable[[Any], Any]) -> list[tuple[Any, list[SessionSnapshot]]]:
    """The case's ``given`` as (context, snapshots) groups, as the runner seeds them."""
    groups: list[tuple[Any, list[SessionSnapshot]]] = [
        (None, [from_wire(SessionSnapshot, s) for s in given.get("snapshots", [])])
    ]
    for tenant, snaps in (given.get("tenants") or {}).items():
        groups.append((context_for(tenant), [from_wire(SessionSnapshot, s) for s in snaps]))
    return [(context, snaps) for context, snaps in groups if snaps]
