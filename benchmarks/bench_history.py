"""The history reads (contract section 7) measured against the figures of their issue, in one table.

Run it from the bench environment (moto lives in the ``bench`` extra)::

    .venv-bench/bin/python benchmarks/bench_history.py [--quick]

On DynamoDB (moto in its own process, behind ``LocalDynamoDB``'s HTTP proxy, with its keyed transaction
rollback), every read goes through a cold store (a new ``DynamoDBSessionStore`` and ``SessionService``,
nothing cached), and its calls and the bytes it fetched (the sizes of the items the reads returned, by
DynamoDB's rules) are counted through botocore's ``after-call`` hook:

- ``iter_history`` of a ~50 MB history (50,000 distinct ~1 KB prose messages) with the default chunk
  size: peak Python heap growth (tracemalloc) and time to the first chunk, beside a full read
  (``get_active_messages``). Saving 25,000 turns one by one takes about half an hour on moto, so the
  session is built as turn-by-turn saves would leave it: its first 24,001 turns restored as one
  completed snapshot (``restore_snapshots``), then 999 ``add_interaction`` turns through the service,
  which rewrite the restored blob into a top-level page and add the pages after it; the program checks
  that the stored blocks are exactly those 25,000 turn-by-turn saves make. A session of
  ``--turn-built`` turns saved one by one is measured the same way.
- ``read_window(max_messages=20)`` of a 1,000-turn session saved turn by turn, against a full read.
- ``get_history`` of that session (2,000 messages, beyond the default window of 1,000): compared with a
  full read, and the service's fallback count.

In memory, ``read_window(max_messages=20)`` of sessions of 100, 1,000 and 10,000 turns, each call timed
on its own (median of many).

The program prints one table; it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_service import Prose, log

from genkit_sessions import InMemorySessionStore, Message, SessionService, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb._codec import TOP_BYTES, TOP_COUNT, _carry
from genkit_sessions.dynamodb._items import item_size
from genkit_sessions.model.types import SnapshotStatus
from genkit_sessions.service.service import _with_event_ids
from genkit_sessions.stores.history_rules import message_bytes

MB = 1_000_000


@dataclass
class Row:
    figure: str
    measured: str
    target: str
    met: str


def print_table(rows: list[Row]) -> None:
    header = Row("figure", "measured", "target", "met")
    cells = [[r.figure, r.measured, r.target, r.met] for r in [header, *rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(4)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(line)
    for index, cell in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + " |")
        if index == 0:
            print(line)
    print(line)


# --- counting calls and the bytes they fetch ----------------------------------------------------


@dataclass
class Fetched:
    """The calls of one measured read, and the DynamoDB size of every item they returned."""

    calls: Counter[str] = field(default_factory=Counter)
    items: int = 0
    bytes: int = 0

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def describe(self) -> str:
        return ", ".join(f"{name} {count}" for name, count in sorted(self.calls.items()))


class Counting:
    """A client whose calls are counted, while a measurement is open, through botocore's after-call hook."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.current: Fetched | None = None
        client.meta.events.register("after-call.dynamodb", self._after)

    @contextmanager
    def measure(self) -> Iterator[Fetched]:
        fetched = Fetched()
        self.current = fetched
        try:
            yield fetched
        finally:
            self.current = None

    def _after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        fetched = self.current
        if fetched is None:
            return
        fetched.calls[model.name] += 1
        items: list[dict[str, Any]] = []
        if "Item" in parsed:
            items.append(parsed["Item"])
        items.extend(parsed.get("Items", []))
        for found in parsed.get("Responses", {}).values():
            items.extend(found)
        fetched.items += len(items)
        fetched.bytes += sum(item_size(item) for item in items)


def cold(table: str, client: Any) -> SessionService:
    """A service over a new store instance: nothing cached, as in a new process."""
    return SessionService(DynamoDBSessionStore(table, client))


# --- building histories --------------------------------------------------------------------------


class Texts:
    """Distinct ~1 KB prose messages, a user and a model one per turn."""

    def __init__(self, seed: int, size: int = 1000) -> None:
        self.prose = Prose(seed)
        self.size = size

    def turn(self) -> tuple[Message, list[Message]]:
        return Message.of_text("user", self.prose.text(self.size)), [
            Message.of_text("model", self.prose.text(self.size))
        ]


def add_turns(service: SessionService, session_id: str, texts: Texts, turns: int, label: str) -> float:
    started = time.perf_counter()
    for index in range(turns):
        user, rest = texts.turn()
        service.add_interaction(session_id, user, rest)
        if (index + 1) % 1000 == 0:
            log(f"  {label}: {index + 1:,} of {turns:,} turns, {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


def turn_by_turn_blocks(
    turns: int, restored: int = 0, checkpoint_every: int = 5, top: int = 3, max_pages: int = 48
) -> tuple[int, ...]:
    """The message count of each stored block that ``turns`` two-message saves leave (``plan_state``'s
    carry, on levels alone: top pages fold 16 pages of level 2, as they do while those hold under
    256 KB); with ``restored``, when the first that many turns were restored as one snapshot (one blob
    of level 0) and the rest saved one by one."""
    levels: list[int] = [0] if restored else []
    ends: list[int] = [2 * restored] if restored else []
    for turn in range(restored + 1, turns + 1):
        end = 2 * turn
        if not levels:
            levels, ends = [0], [end]
            continue
        level, kept = _carry(tuple(levels), (0,) * len(levels), checkpoint_every, top, TOP_BYTES, TOP_COUNT)
        if level == 0:
            levels.append(0)
            ends.append(end)
        elif not kept or levels[:kept].count(top) >= max_pages:
            levels, ends = [level], [end]
        else:
            levels, ends = [*levels[:kept], level], [*ends[:kept], end]
    return tuple(b - a for a, b in zip([0, *ends], ends, strict=False))


def restore_split(turns: int) -> int:
    """How many of ``turns`` to restore so that saving the rest one by one leaves exactly the blocks of
    ``turns`` turn-by-turn saves (the restored blob is rewritten into the first block); 0 when none does."""
    expected = turn_by_turn_blocks(turns)
    first_turns = expected[0] // 2
    for restored in range(first_turns - 1, max(0, first_turns - 200), -1):
        if turn_by_turn_blocks(turns, restored) == expected:
            return restored
    return 0


def build_restored(
    service: SessionService, store: DynamoDBSessionStore, session_id: str, texts: Texts, turns: int, tail: int
) -> float:
    """``turns - tail`` turns restored as one completed snapshot, then ``tail`` turns through the service."""
    started = time.perf_counter()
    service.create(session_id)
    if tail == turns:
        add_turns(service, session_id, texts, tail, "big session")
        return time.perf_counter() - started
    restored: list[Message] = []
    for _ in range(turns - tail):
        user, rest = texts.turn()
        restored.extend(m for m, _ in _with_event_ids([user, *rest]))  # the event ids an append mints
    root = SessionSnapshot(
        snapshot_id=f"{session_id}-root",
        session_id=session_id,
        created_at=datetime.now(timezone.utc).isoformat(),
        status=SnapshotStatus.COMPLETED,
        state=SessionState(messages=tuple(restored)),
    )
    del restored
    store.restore_snapshots([root])
    log(f"  restored {turns - tail:,} turns in {time.perf_counter() - started:.0f} s")
    add_turns(service, session_id, texts, tail, "restored session")
    return time.perf_counter() - started


# --- the stream against a full read ---------------------------------------------------------------


def _traced(fn: Callable[[], Any]) -> int:
    """Peak heap growth of ``fn`` (tracemalloc), the result dropped only after the peak is read."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
        del result
    finally:
        tracemalloc.stop()
    return peak - base


def bench_stream(
    label: str, table: str, client: Any, counting: Counting, session_id: str, chunk: int | None
) -> list[Row]:
    kwargs = {} if chunk is None else {"chunk_messages": chunk}

    # a full read: time, calls, heap
    service = cold(table, counting.client)
    gc.collect()
    with counting.measure() as full_cost:
        started = time.perf_counter()
        full = service.get_active_messages(session_id)
        full_s = time.perf_counter() - started
    raw = sum(map(message_bytes, full))
    count = len(full)
    full_peak = _traced(lambda: cold(table, client).get_active_messages(session_id))

    # the stream: time to the first chunk and to the end, calls, equality with the full read
    plan = cold(table, client).store.history_plan(session_id=session_id)  # type: ignore[attr-defined]
    blocks = plan.blocks
    service = cold(table, counting.client)
    gc.collect()
    collected: list[Message] = []
    chunks = 0
    with counting.measure() as stream_cost:
        started = time.perf_counter()
        stream = service.iter_history(session_id, **kwargs)
        first = next(stream)
        first_s = time.perf_counter() - started
        first_calls = stream_cost.total
        collected.extend(first)
        chunks += 1
        for piece in stream:
            collected.extend(piece)
            chunks += 1
        stream_s = time.perf_counter() - started
    same = tuple(collected) == tuple(full)
    del collected, full

    def drain() -> int:
        seen = 0
        for piece in cold(table, client).iter_history(session_id, **kwargs):
            seen += len(piece)
        return seen

    stream_peak = _traced(drain)
    first_peak = _traced(lambda: next(iter(cold(table, client).iter_history(session_id, **kwargs))))

    shape = f"{len(blocks)} blocks, the first of {blocks[0]:,} messages" if blocks else "no blocks"
    chunk_text = f"chunk {chunk}" if chunk is not None else "default chunk (100)"
    return [
        Row(
            f"dynamodb: iter_history, {label}: {count:,} messages, {raw / MB:.1f} MB of message JSON ({shape})",
            f"peak heap growth {stream_peak / MB:.1f} MB ({chunk_text}; {first_peak / MB:.1f} MB to the first chunk); "
            f"full read (get_active_messages, cold) {full_peak / MB:.1f} MB; stream / full "
            f"{stream_peak / full_peak:.2f}",
            "< 10 MB",
            "yes" if stream_peak < 10 * MB else "NO",
        ),
        Row(
            "  time to the first chunk against a full read",
            f"first chunk {first_s * 1000:,.0f} ms ({first_calls} calls); full read {full_s * 1000:,.0f} ms "
            f"({full_cost.describe()}; {full_cost.bytes / MB:.1f} MB fetched); first / full "
            f"{first_s / full_s:.1%}; whole stream {stream_s * 1000:,.0f} ms, {chunks:,} chunks, "
            f"{stream_cost.total} calls ({stream_cost.describe()}; {stream_cost.bytes / MB:.1f} MB fetched); "
            f"equal to the full read: {'yes' if same else 'NO'}",
            "< 10% of the full read",
            "yes" if first_s < 0.1 * full_s and same else "NO",
        ),
    ]


# --- windows and get_history ----------------------------------------------------------------------


def bench_window_dynamodb(label: str, table: str, counting: Counting, session_id: str, repeats: int) -> Row:
    costs: list[Fetched] = []
    times: list[float] = []
    window = None
    for _ in range(repeats):
        service = cold(table, counting.client)
        with counting.measure() as cost:
            started = time.perf_counter()
            window = service.read_window(session_id, max_messages=20)
            times.append((time.perf_counter() - started) * 1000)
        costs.append(cost)
    assert window is not None
    service = cold(table, counting.client)
    with counting.measure() as full_cost:
        full = service.get_active_messages(session_id)
    suffix = tuple(window.messages) == tuple(full[-20:])
    warm = cold(table, counting.client)
    warm.read_window(session_id, max_messages=20)
    with counting.measure() as warm_cost:
        warm.read_window(session_id, max_messages=20)
    worst = max(costs, key=lambda c: (c.total, c.bytes))
    share = worst.bytes / full_cost.bytes
    return Row(
        f"dynamodb: read_window(max_messages=20), {label} ({len(full):,} messages), cold store",
        f"{worst.total} calls max ({worst.describe()}); {worst.bytes:,} B fetched in {worst.items} items, "
        f"{share:.2%} of a full read's {full_cost.bytes:,} B ({full_cost.describe()}); "
        f"{statistics.median(times):.1f} ms median of {repeats}; {len(window.messages)} messages, truncated "
        f"{window.truncated}, the last 20 of the full read: {'yes' if suffix else 'NO'}; warm store (same "
        f"instance again): {warm_cost.total} calls ({warm_cost.describe()}), {warm_cost.bytes:,} B",
        "<= 2 calls, <= 5% of a full read's bytes",
        "yes" if worst.total <= 2 and share <= 0.05 and suffix else "NO",
    )


def bench_get_history_dynamodb(label: str, table: str, counting: Counting, session_id: str) -> Row:
    full = cold(table, counting.client).get_active_messages(session_id)
    service = cold(table, counting.client)
    with counting.measure() as cost:
        started = time.perf_counter()
        history = service.get_history(session_id)
        elapsed = time.perf_counter() - started
    complete = tuple(history) == tuple(full)
    return Row(
        f"dynamodb: get_history, {label} ({len(full):,} messages, window max_messages 1,000), cold store",
        f"{len(history):,} messages, equal to get_active_messages: {'yes' if complete else 'NO'}; "
        f"history_fallbacks {service.history_fallbacks}; {cost.total} calls ({cost.describe()}), "
        f"{cost.bytes / MB:.2f} MB fetched, {elapsed * 1000:,.0f} ms",
        "complete, fallback counted",
        "yes" if complete and service.history_fallbacks == 1 else "NO",
    )


def bench_memory(turns_list: list[int], calls: int, seed: int) -> list[Row]:
    rows: list[Row] = []
    for turns in turns_list:
        log(f"memory: a {turns:,}-turn session")
        service = SessionService(InMemorySessionStore())
        service.create("chat")
        add_turns(service, "chat", Texts(seed + turns), turns, f"memory {turns}")
        full = service.get_active_messages("chat")
        window = service.read_window("chat", max_messages=20)
        suffix = tuple(window.messages) == tuple(full[-20:])
        samples: list[float] = []
        gc.collect()
        gc.disable()
        try:
            for _ in range(calls):
                start = time.perf_counter_ns()
                service.read_window("chat", max_messages=20)
                samples.append((time.perf_counter_ns() - start) / 1000)
        finally:
            gc.enable()
        median = statistics.median(samples)
        rows.append(
            Row(
                f"memory: read_window(max_messages=20), {turns:,} turns ({len(full):,} messages)",
                f"{median:,.2f} µs median (p95 {sorted(samples)[int(len(samples) * 0.95)]:,.2f}; {calls:,} calls); "
                f"the last 20: {'yes' if suffix else 'NO'}",
                "< 10 µs",
                "yes" if median < 10 else "NO",
            )
        )
        if turns == turns_list[1]:
            before = service.history_fallbacks
            history = service.get_history("chat", max_messages=100)
            rows.append(
                Row(
                    f"  memory: get_history(max_messages=100), {turns:,} turns",
                    f"{len(history):,} messages, equal to get_active_messages: "
                    f"{'yes' if tuple(history) == tuple(full) else 'NO'}; history_fallbacks "
                    f"{service.history_fallbacks - before}",
                    "complete, fallback counted",
                    "yes" if tuple(history) == tuple(full) and service.history_fallbacks == before + 1 else "NO",
                )
            )
        del service, full, window
        gc.collect()
    return rows


# --- the program -----------------------------------------------------------------------------------


def bench_dynamodb(args: argparse.Namespace) -> list[Row]:
    from genkit_sessions.dynamodb.local import LocalDynamoDB

    rows: list[Row] = []
    with LocalDynamoDB(process=True, rollback="keyed") as ddb:
        client = ddb.client()
        counting = Counting(ddb.client())
        table = "history"
        create_table(client, table)
        store = DynamoDBSessionStore(table, client)
        service = SessionService(store)

        log(f"dynamodb: a {args.window_turns:,}-turn session, turn by turn")
        service.create("thousand")
        built = add_turns(service, "thousand", Texts(args.seed), args.window_turns, "thousand")
        rows.append(
            bench_window_dynamodb(f"{args.window_turns:,} turns saved one by one", table, counting, "thousand", 5)
        )
        rows.append(bench_get_history_dynamodb(f"{args.window_turns:,} turns", table, counting, "thousand"))
        rows.extend(
            bench_stream(f"{args.window_turns:,} turns saved one by one", table, client, counting, "thousand", None)
        )
        built_note = [f"{args.window_turns:,} turns saved in {built:.0f} s"]

        if args.turn_built:
            log(f"dynamodb: a {args.turn_built:,}-turn session, turn by turn")
            service.create("turns")
            built = add_turns(service, "turns", Texts(args.seed + 1), args.turn_built, "turns")
            built_note.append(f"{args.turn_built:,} turns saved in {built:.0f} s")
            rows.extend(
                bench_stream(f"{args.turn_built:,} turns saved one by one", table, client, counting, "turns", None)
            )

        turns = args.big_turns
        tail = turns - (restore_split(turns) if args.restore else 0)
        log(f"dynamodb: a {turns:,}-turn session ({turns - tail:,} restored, {tail:,} added)")
        built = build_restored(SessionService(store), store, "big", Texts(args.seed + 2), turns, tail)
        plan = cold(table, client).store.history_plan(session_id="big")  # type: ignore[attr-defined]
        expected = turn_by_turn_blocks(turns)
        same = tuple(plan.blocks) == expected
        how = (
            f"{turns - tail:,} turns restored as one snapshot, then {tail:,} add_interaction turns"
            if tail < turns
            else "every turn saved with add_interaction"
        )
        built_note.append(
            f"{turns:,}-turn session: {how}, {built:.0f} s; its blocks {'are' if same else 'are NOT'} those "
            f"{turns:,} turn-by-turn saves leave ({len(expected)} blocks, the first of {expected[0]:,} messages)"
        )
        rows.extend(bench_stream(f"{turns:,} turns", table, client, counting, "big", None))
        rows.append(bench_window_dynamodb(f"{turns:,} turns", table, counting, "big", 2))
        rows.append(Row("(how the DynamoDB sessions were built)", "; ".join(built_note), "", ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller loads, for a smoke run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--window-turns", type=int, default=1000)
    parser.add_argument("--turn-built", type=int, default=3000, help="turns of a session saved one by one (0: none)")
    parser.add_argument("--big-turns", type=int, default=25_000, help="turns of the ~50 MB session")
    parser.add_argument(
        "--no-restore", dest="restore", action="store_false", help="save every turn of it one by one (slow)"
    )
    parser.add_argument("--memory-calls", type=int, default=5000)
    parser.add_argument("--skip-dynamodb", action="store_true")
    args = parser.parse_args(argv)
    memory_turns = [100, 1000, 10_000]
    if args.quick:
        args.turn_built, args.big_turns, args.memory_calls = 0, 2500, 1000
        memory_turns = [100, 1000, 2000]
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    started = time.perf_counter()
    rows = bench_memory(memory_turns, args.memory_calls, args.seed)
    if not args.skip_dynamodb:
        rows.extend(bench_dynamodb(args))
    from importlib.metadata import version

    print(
        f"bench_history: python {platform.python_version()}, moto {version('moto')} (LocalDynamoDB, keyed "
        f"rollback), {platform.machine()}, {os.cpu_count()} cores; {time.perf_counter() - started:.0f} s\n"
    )
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
