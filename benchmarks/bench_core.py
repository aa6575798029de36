"""Core benchmark: our in-memory store against Genkit 0.12.0's, side by side.

Run ``python benchmarks/bench_core.py`` (``--quick`` for a short run, ``--sizes
1000,10000`` to choose the store sizes). Both stores hold sessions of 10
snapshots each (a chain: every snapshot the child of the previous) whose state
is 18 short messages. Each operation is timed call by call with
``time.perf_counter_ns``; the table shows the median and the 95th percentile
in microseconds, and the verdict block checks the performance targets.

Genkit's store is async-only, so its calls run inside one running event loop
(nothing is subtracted for the ``await``). Ours is timed through both faces:
the blocking store and its async face ``store.aio``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs

from genkit_sessions import (
    AgentInit,
    InMemorySessionStore,
    Message,
    SessionResolver,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
)

try:
    import genkit
    from genkit import Message as PeerMessage
    from genkit import Part as PeerPart
    from genkit.exp.agent import InMemorySessionStore as PeerStore
    from genkit.exp.agent import SessionSnapshot as PeerSnapshot
    from genkit.exp.agent import SessionState as PeerState
    from genkit.exp.agent import SnapshotStatus as PeerStatus
except ImportError:  # pragma: no cover - the benchmark needs the peer
    sys.exit("bench_core needs genkit==0.12.0: pip install 'genkit==0.12.0'")

SNAPSHOTS_PER_SESSION = 10
MESSAGES_PER_STATE = 18
DEFAULT_SIZES = (1_000, 10_000, 50_000, 100_000)


# --- data -------------------------------------------------------------------------------------


def _texts(count: int) -> list[tuple[str, str]]:
    roles = ("user", "model")
    return [(roles[i % 2], f"message {i}: a short line of chat, about ten words long.") for i in range(count)]


def _our_messages(count: int) -> tuple[Message, ...]:
    return tuple(Message.of_text(role, text) for role, text in _texts(count))


def _peer_messages(count: int) -> list[Any]:
    return [PeerMessage(role=role, content=[PeerPart(text=text)]) for role, text in _texts(count)]


def _session_ids(count: int) -> list[str]:
    return [f"session-{i:06d}" for i in range(count)]


def _snapshot_id(session: int, turn: int) -> str:
    return f"snap-{session:06d}-{turn:02d}"


@attrs.define
class Fixture:
    """Both stores filled with the same sessions, and what the timed calls need."""

    size: int
    ours: InMemorySessionStore
    peer: Any
    session_ids: list[str]
    leaves: dict[str, str]


def fill(size: int) -> Fixture:
    """Fill both stores with ``size`` snapshots: ``size / 10`` sessions of 10-snapshot chains.

    Ours is filled through its public ``save_snapshot`` (stamping and rule checks
    included). Genkit's is filled by putting equivalent pydantic snapshots into
    its ``snapshots`` dict directly: its own ``save_snapshot`` deep-copies every
    snapshot it writes, which makes filling 100,000 slow without changing what
    is stored or what is measured.
    """
    sessions = size // SNAPSHOTS_PER_SESSION
    session_ids = _session_ids(sessions)
    our_messages = _our_messages(MESSAGES_PER_STATE)
    peer_messages = _peer_messages(MESSAGES_PER_STATE)
    ours = InMemorySessionStore()
    peer = PeerStore()
    leaves: dict[str, str] = {}
    stamp = 0
    for index, session_id in enumerate(session_ids):
        our_state = SessionState(session_id=session_id, messages=our_messages)
        peer_state = PeerState.model_construct(session_id=session_id, messages=peer_messages)
        parent: str | None = None
        for turn in range(SNAPSHOTS_PER_SESSION):
            snapshot_id = _snapshot_id(index, turn)
            snapshot = SessionSnapshot(
                snapshot_id=snapshot_id,
                session_id=session_id,
                parent_id=parent,
                status=SnapshotStatus.COMPLETED,
                state=our_state,
            )
            ours.save_snapshot(snapshot_id, lambda _, s=snapshot: s)  # type: ignore[misc]
            stamp += 1
            created = f"2026-11-29T00:{stamp // 1_000_000:02d}:00.{stamp % 1_000_000:06d}Z"
            peer.snapshots[snapshot_id] = PeerSnapshot.model_construct(
                snapshot_id=snapshot_id,
                session_id=session_id,
                parent_id=parent,
                created_at=created,
                updated_at=created,
                status=PeerStatus.COMPLETED,
                state=peer_state,
            )
            parent = snapshot_id
        leaves[session_id] = parent  # type: ignore[assignment]
    return Fixture(size=size, ours=ours, peer=peer, session_ids=session_ids, leaves=leaves)


async def check_agreement(fx: Fixture) -> None:
    """Before timing anything: both stores return the same leaf and snapshot for a sample of sessions."""
    rng = random.Random(7)
    for session_id in rng.sample(fx.session_ids, min(20, len(fx.session_ids))):
        ours = fx.ours.get_snapshot(session_id=session_id)
        peer = await fx.peer.get_snapshot(session_id=session_id)
        assert ours is not None and peer is not None, session_id
        assert ours.snapshot_id == peer.snapshot_id == fx.leaves[session_id], (ours, peer.snapshot_id)
        assert len(ours.state.message_list) == len(peer.state.messages) == MESSAGES_PER_STATE  # type: ignore[union-attr]
        by_id = await fx.peer.get_snapshot(snapshot_id=ours.snapshot_id)
        assert by_id.snapshot_id == fx.ours.get_snapshot(snapshot_id=ours.snapshot_id).snapshot_id  # type: ignore[union-attr]


# --- timing -----------------------------------------------------------------------------------


@attrs.frozen
class Timing:
    """Per-call times of one operation, in nanoseconds."""

    samples: tuple[int, ...]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples) / 1000

    @property
    def p95_us(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] / 1000

    @property
    def reps(self) -> int:
        return len(self.samples)


@attrs.frozen
class Budget:
    """How long a series may run: at least ``min_reps`` calls, at most ``max_reps`` or ``seconds``."""

    min_reps: int
    max_reps: int
    seconds: float


def _ids(items: list[str], rng: random.Random) -> Iterator[str]:
    """Random ids, each a new string object, as an id parsed from a request would be.

    Reusing the store's own key objects would skip the hash and the key comparison
    and make the caller's side of the lookup cold in cache at large sizes only.
    """
    while True:
        yield rng.choice(items).encode().decode()


def _inits(items: list[str], rng: random.Random) -> Iterator[AgentInit]:
    """``AgentInit(session_id=...)`` for random sessions, built outside the timed call."""
    return (AgentInit(session_id=session_id) for session_id in _ids(items, rng))


def time_sync(call: Callable[[Any], Any], args: Iterator[Any], budget: Budget, warmup: int = 50) -> Timing:
    """Time ``call(arg)`` once per repetition until the budget is spent."""
    for _ in range(warmup):
        call(next(args))
    gc.collect()
    gc.disable()
    try:
        samples: list[int] = []
        clock = time.perf_counter_ns
        deadline = clock() + int(budget.seconds * 1e9)
        while len(samples) < budget.max_reps and (len(samples) < budget.min_reps or clock() < deadline):
            arg = next(args)
            start = clock()
            call(arg)
            samples.append(clock() - start)
    finally:
        gc.enable()
    return Timing(tuple(samples))


async def time_async(
    call: Callable[[Any], Awaitable[Any]], args: Iterator[Any], budget: Budget, warmup: int = 50
) -> Timing:
    """Time ``await call(arg)`` once per repetition, inside the running loop, until the budget is spent."""
    for _ in range(warmup):
        await call(next(args))
    gc.collect()
    gc.disable()
    try:
        samples: list[int] = []
        clock = time.perf_counter_ns
        deadline = clock() + int(budget.seconds * 1e9)
        while len(samples) < budget.max_reps and (len(samples) < budget.min_reps or clock() < deadline):
            arg = next(args)
            start = clock()
            await call(arg)
            samples.append(clock() - start)
    finally:
        gc.enable()
    return Timing(tuple(samples))


# --- the operations ---------------------------------------------------------------------------

Row = tuple[str, int, Timing, "Timing | None", str]
"""(operation, size, ours, peer or None, note)."""


def _turn_end(fx: Fixture, rng: random.Random, count: int) -> tuple[list[Any], list[Any]]:
    """``count`` prebuilt turn-end saves for each store: a child of a session's leaf with 2 more messages."""
    our_extra = _our_messages(2)
    peer_extra = _peer_messages(2)
    our_saves: list[Any] = []
    peer_saves: list[Any] = []
    leaves = dict(fx.leaves)
    for n in range(count):
        session_id = rng.choice(fx.session_ids)
        parent = leaves[session_id]
        child = f"turn-{n:07d}-{session_id}"
        leaves[session_id] = child
        base = fx.ours.get_snapshot(snapshot_id=fx.leaves[session_id])
        assert base is not None and base.state is not None
        state = attrs.evolve(base.state, messages=base.state.message_list + our_extra)
        ours = SessionSnapshot(
            snapshot_id=child, session_id=session_id, parent_id=parent, status=SnapshotStatus.COMPLETED, state=state
        )
        our_saves.append((child, ours))
        peer_base = fx.peer.snapshots[fx.leaves[session_id]]
        peer_state = PeerState.model_construct(session_id=session_id, messages=[*peer_base.state.messages, *peer_extra])
        peer_saves.append(
            (
                child,
                PeerSnapshot.model_construct(
                    snapshot_id=child,
                    session_id=session_id,
                    parent_id=parent,
                    created_at="",
                    status=PeerStatus.COMPLETED,
                    state=peer_state,
                ),
            )
        )
    return our_saves, peer_saves


async def measure(fx: Fixture, quick: bool) -> list[Row]:
    """Time every operation at one size; returns the table rows."""
    rng = random.Random(fx.size)
    fast = Budget(min_reps=2_000, max_reps=5_000 if quick else 30_000, seconds=0.3 if quick else 1.5)
    # The peer's session lookup scans every snapshot (about 50 ms a call at 100,000).
    slow = Budget(min_reps=10 if quick else 25, max_reps=2_000, seconds=0.5 if quick else 3.0)
    sessions = fx.session_ids
    snapshot_ids = [_snapshot_id(s, t) for s in range(len(sessions)) for t in range(SNAPSHOTS_PER_SESSION)]
    ours, aio, peer = fx.ours, fx.ours.aio, fx.peer
    rows: list[Row] = []

    sid_sync = time_sync(lambda s: ours.get_snapshot(session_id=s), _ids(sessions, rng), fast)
    sid_async = await time_async(lambda s: aio.get_snapshot(session_id=s), _ids(sessions, rng), fast)
    sid_peer = await time_async(lambda s: peer.get_snapshot(session_id=s), _ids(sessions, rng), slow, warmup=2)
    rows.append(("session-id lookup, ours sync", fx.size, sid_sync, sid_peer, ""))
    rows.append(("session-id lookup, ours .aio", fx.size, sid_async, sid_peer, ""))

    read_sync = time_sync(lambda s: ours.get_snapshot(snapshot_id=s), _ids(snapshot_ids, rng), fast)
    read_async = await time_async(lambda s: aio.get_snapshot(snapshot_id=s), _ids(snapshot_ids, rng), fast)
    read_peer = await time_async(lambda s: peer.get_snapshot(snapshot_id=s), _ids(snapshot_ids, rng), fast)
    rows.append(("snapshot-id read, ours sync", fx.size, read_sync, read_peer, ""))
    rows.append(("snapshot-id read, ours .aio", fx.size, read_async, read_peer, ""))

    resolve_sync = time_sync(lambda i: SessionResolver.resolve(ours, True, i), _inits(sessions, rng), fast)
    resolve_async = await time_async(lambda i: SessionResolver.aresolve(aio, True, i), _inits(sessions, rng), fast)
    rows.append(("full resolve by session id, sync", fx.size, resolve_sync, sid_peer, "*"))
    rows.append(("full resolve by session id, aresolve", fx.size, resolve_async, sid_peer, "*"))

    save_reps = 500 if quick else 2_000
    our_saves, peer_saves = _turn_end(fx, rng, 2 * save_reps + 100)
    save_budget = Budget(min_reps=save_reps, max_reps=save_reps, seconds=0)
    sync_saves, async_saves = iter(our_saves[: save_reps + 50]), iter(our_saves[save_reps + 50 :])
    save_sync = time_sync(lambda a: ours.save_snapshot(a[0], lambda _: a[1]), sync_saves, save_budget)
    save_async = await time_async(lambda a: aio.save_snapshot(a[0], lambda _: a[1]), async_saves, save_budget)
    save_peer = await time_async(lambda a: peer.save_snapshot(a[0], lambda _: a[1]), iter(peer_saves), save_budget)
    rows.append(("turn-end save (new child), ours sync", fx.size, save_sync, save_peer, ""))
    rows.append(("turn-end save (new child), ours .aio", fx.size, save_async, save_peer, ""))
    return rows


# --- report -----------------------------------------------------------------------------------


def _us(value: float) -> str:
    return f"{value:,.1f}" if value >= 100 else f"{value:,.2f}"


def print_table(rows: list[Row]) -> None:
    """Rows: operation x size. Columns: ours and peer (median, p95, reps), and peer/ours of the medians."""
    header = (
        f"{'operation':<40} {'size':>7} | {'ours med':>9} {'p95':>9} {'reps':>6} | "
        f"{'peer med':>9} {'p95':>9} {'reps':>6} | {'peer/ours':>9}"
    )
    print(header)
    print("-" * len(header))
    last = None
    for operation, size, ours, peer, note in sorted(rows, key=lambda r: (_ORDER.index(r[0]), r[1])):
        if last is not None and last != operation:
            print()
        last = operation
        peer_cols = (
            f"{_us(peer.median_us):>9} {_us(peer.p95_us):>9} {peer.reps:>6}" if peer else f"{'-':>9} {'-':>9} {'-':>6}"
        )
        ratio = f"{peer.median_us / ours.median_us:>8,.0f}x" if peer else f"{'-':>9}"
        print(
            f"{operation:<40} {size:>7,} | {_us(ours.median_us):>9} {_us(ours.p95_us):>9} {ours.reps:>6} | "
            f"{peer_cols} | {ratio}{note}"
        )
    print()
    print("Times in microseconds per call (median, 95th percentile). The peer is genkit 0.12.0's")
    print("genkit.exp.agent.InMemorySessionStore, always awaited inside one running event loop; the")
    print("peer column of 'sync' rows is that same async call (the peer has no blocking API).")
    print("* the peer column of the resolve rows is the peer's BARE get_snapshot(session_id=...), not a resolve.")


_ORDER = [
    "session-id lookup, ours sync",
    "session-id lookup, ours .aio",
    "snapshot-id read, ours sync",
    "snapshot-id read, ours .aio",
    "full resolve by session id, sync",
    "full resolve by session id, aresolve",
    "turn-end save (new child), ours sync",
    "turn-end save (new child), ours .aio",
]


def verdicts(rows: list[Row]) -> bool:
    """Print PASS/FAIL for each target; True when all pass."""
    table = {(op, size): (ours, peer) for op, size, ours, peer, _ in rows}
    sizes = sorted({size for _, size, *_ in rows})
    lines: list[tuple[bool | None, str]] = []
    smallest, largest = sizes[0], sizes[-1]

    for face in ("sync", ".aio"):
        op = f"session-id lookup, ours {face}"
        low, high = table[(op, smallest)][0].median_us, table[(op, largest)][0].median_us
        ratio = high / low
        lines.append(
            (
                ratio <= 1.5,
                f"session-id lookup stays flat ({face}): {_us(high)} us at {largest:,} vs {_us(low)} us at "
                f"{smallest:,} = {ratio:.2f}x (target <= 1.5x)",
            )
        )
    for face in ("sync", ".aio"):
        op = f"session-id lookup, ours {face}"
        for size in [s for s in sizes if s >= 50_000]:
            ours, peer = table[(op, size)]
            speedup = peer.median_us / ours.median_us  # type: ignore[union-attr]
            lines.append(
                (
                    speedup >= 100,
                    f"session-id lookup >= 100x faster than peer at {size:,} ({face}): ours {_us(ours.median_us)} us, "
                    f"peer {_us(peer.median_us)} us = {speedup:,.0f}x",  # type: ignore[union-attr]
                )
            )
    for face in ("sync", ".aio"):
        op = f"snapshot-id read, ours {face}"
        worst = min(
            (table[(op, size)][1].median_us / table[(op, size)][0].median_us, size)  # type: ignore[union-attr]
            for size in sizes
        )
        lines.append(
            (
                worst[0] >= 10,
                f"snapshot-id read >= 10x faster than peer at every size ({face}): smallest margin {worst[0]:,.0f}x "
                f"(at {worst[1]:,})",
            )
        )
    if largest >= 100_000:
        for op in ("full resolve by session id, sync", "full resolve by session id, aresolve"):
            ours, peer = table[(op, largest)]
            speedup = peer.median_us / ours.median_us  # type: ignore[union-attr]
            lines.append(
                (
                    speedup >= 50,
                    f"{op} at {largest:,} >= 50x faster than peer's bare session-id lookup: ours "
                    f"{_us(ours.median_us)} us, peer {_us(peer.median_us)} us = {speedup:,.0f}x",  # type: ignore[union-attr]
                )
            )
    else:
        lines.append((None, "full resolve by session id at 100,000: not measured in this run (add 100000 to --sizes)"))

    print("Verdict")
    print("-------")
    for ok, text in lines:
        print(f"{'SKIP' if ok is None else 'PASS' if ok else 'FAIL'}  {text}")
    return all(ok is not False for ok, _ in lines)


async def main_async(sizes: list[int], quick: bool) -> bool:
    rows: list[Row] = []
    for size in sizes:
        started = time.perf_counter()
        fx = fill(size)
        filled = time.perf_counter() - started
        await check_agreement(fx)
        rows.extend(await measure(fx, quick))
        print(
            f"  size {size:>7,}: filled in {filled:.1f} s, measured in {time.perf_counter() - started - filled:.1f} s",
            flush=True,
        )
        del fx
        gc.collect()
    print()
    print_table(rows)
    print()
    return verdicts(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run: fewer repetitions")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(part.replace("_", "")) for part in text.split(",")],
        default=list(DEFAULT_SIZES),
        help="comma-separated store sizes in snapshots (default: 1000,10000,50000,100000)",
    )
    args = parser.parse_args(argv)
    print(f"bench_core: python {platform.python_version()}, genkit {genkit_version()}, {platform.machine()}")
    print(
        f"{SNAPSHOTS_PER_SESSION} snapshots per session (a chain), {MESSAGES_PER_STATE} short messages per state; "
        f"sizes {', '.join(f'{s:,}' for s in args.sizes)}{' (quick)' if args.quick else ''}"
    )
    print(
        "Ours is filled through save_snapshot; genkit's InMemorySessionStore is filled by putting equivalent "
        "pydantic SessionSnapshot objects into its `snapshots` dict directly (its own save_snapshot would "
        "give the same contents, more slowly)."
    )
    started = time.perf_counter()
    ok = asyncio.run(main_async(args.sizes, args.quick))
    print(f"\nTotal run time: {time.perf_counter() - started:.0f} s")
    return 0 if ok else 1


def genkit_version() -> str:
    from importlib.metadata import version

    return version("genkit") if genkit else "?"


if __name__ == "__main__":
    sys.exit(main())
