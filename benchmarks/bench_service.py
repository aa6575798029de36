"""The session service (contract section 6) measured against the figures of its issue, in one table.

Run it from the bench environment (langgraph-checkpoint and moto live in the ``bench`` extra)::

    .venv-bench/bin/python benchmarks/bench_service.py [--quick]

In memory:

- ``SessionService.append(session_id, [user, model])`` of a turn of two
  distinct ~1 KB messages, on sessions holding 6 and 200 messages, against
  langgraph-checkpoint's ``InMemorySaver.put`` of the same turn (a checkpoint
  whose ``messages`` channel holds the whole list of LangChain messages, with
  the config, metadata and ``new_versions`` LangGraph's loop passes). Each turn
  is timed on its own; the two take turns in rotating order.
- ``find_by_metadata("principal", p)`` of one principal's 10 sessions among
  100,000 made through ``SessionService.create``.

On DynamoDB (moto in its own process, behind ``LocalDynamoDB``'s HTTP proxy,
with its keyed transaction rollback so that 10,000 sessions load in minutes),
every call is counted through botocore's event hooks. Beside each figure are
the request units AWS would charge: per item, 1 WRU per KB (rounded up) of the
larger of the item before and after the write, doubled in a transaction; 1 RRU
per 4 KB of a strongly consistent read per item (a Query: of the items it
returns together). Item sizes before a write, and full sizes behind a
projection, come from reads on a second, uncounted client.

The program prints one table; it asserts nothing.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import math
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dynamodb import Prose, write_cost

from genkit_sessions import InMemorySessionStore, Message, SessionService
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb._codec import compress
from genkit_sessions.dynamodb._items import item_size
from genkit_sessions.model.wire import to_wire
from genkit_sessions.service.compaction import KeepLastStrategy, MessageCountTrigger

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Row:
    figure: str
    measured: str
    units: str
    target: str
    met: str


# --- in memory: append against InMemorySaver.put ----------------------------------------------


@dataclass
class Turn:
    """One turn's two messages, as our Messages and as LangChain messages (the same texts)."""

    ours: list[Message]
    peer: list[Any]


def make_turns(prose: Prose, count: int, size: int) -> list[Turn]:
    from langchain_core.messages import AIMessage, HumanMessage

    turns = []
    for _ in range(count):
        user, model = prose.text(size), prose.text(size)
        turns.append(
            Turn(
                [Message.of_text("user", user), Message.of_text("model", model)],
                [HumanMessage(content=user, id=str(uuid.uuid4())), AIMessage(content=model, id=str(uuid.uuid4()))],
            )
        )
    return turns


class PeerThread:
    """One LangGraph thread on an InMemorySaver, checkpointed as LangGraph's loop does it."""

    def __init__(self, saver: Any, thread_id: str) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.messages: list[Any] = []
        self.version: Any = None
        self.checkpoint_id: str | None = None
        self.step = -1

    def prepare(self, added: list[Any]) -> tuple[Any, Any, Any, Any]:
        """What ``put`` gets for the next turn; built outside the timed call, as the loop builds it."""
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6

        self.step += 1
        self.messages = [*self.messages, *added]  # what add_messages leaves in the channel: the whole list
        self.version = self.saver.get_next_version(self.version, None)
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=self.step))
        checkpoint["ts"] = datetime.now(timezone.utc).isoformat()
        checkpoint["channel_values"] = {"messages": self.messages}
        checkpoint["channel_versions"] = {"messages": self.version}
        checkpoint["updated_channels"] = ["messages"]
        configurable = {"thread_id": self.thread_id, "checkpoint_ns": ""}
        if self.checkpoint_id is not None:
            configurable["checkpoint_id"] = self.checkpoint_id
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        self.checkpoint_id = checkpoint["id"]
        return {"configurable": configurable}, checkpoint, metadata, {"messages": self.version}


def bench_append(history: int, sessions: int, seed: int) -> tuple[Row, Row | None]:
    from langgraph.checkpoint.memory import InMemorySaver

    log(f"memory append: {sessions} sessions of {history} messages")
    prose = Prose(seed + history)
    store = InMemorySessionStore()
    service = SessionService(store)
    saver = InMemorySaver()
    ids = [f"chat-{history}-{i:05d}" for i in range(sessions)]
    threads = [PeerThread(saver, sid) for sid in ids]
    for sid, thread in zip(ids, threads, strict=True):
        past = make_turns(prose, history // 2, 1000)
        for turn in past:
            service.append(sid, turn.ours)
        saver.put(*thread.prepare([m for turn in past for m in turn.peer]))  # the peer's history, in one put
    timed = make_turns(prose, sessions, 1000)
    prepared = [thread.prepare(turn.peer) for thread, turn in zip(threads, timed, strict=True)]
    ours: list[float] = []
    peer: list[float] = []
    gc.collect()
    for index, (sid, turn, args) in enumerate(zip(ids, timed, prepared, strict=True)):
        for side in (0, 1) if index % 2 == 0 else (1, 0):
            if side == 0:
                start = time.perf_counter_ns()
                service.append(sid, turn.ours)
                ours.append((time.perf_counter_ns() - start) / 1000)
            else:
                start = time.perf_counter_ns()
                saver.put(*args)
                peer.append((time.perf_counter_ns() - start) / 1000)
    assert len(store.get_snapshot(session_id=ids[0]).state.messages) == history + 2  # type: ignore[union-attr]
    ours_m, peer_m = statistics.median(ours), statistics.median(peer)
    row = Row(
        f"memory: append of a 2 x 1 KB turn, {history}-message history ({sessions:,} sessions)",
        f"{ours_m:,.1f} µs median (p95 {_p95(ours):,.1f}); InMemorySaver.put {peer_m:,.1f} µs "
        f"(p95 {_p95(peer):,.1f}); ours / peer {ours_m / peer_m:.2f}x",
        "",
        "at least as fast as InMemorySaver.put",
        "yes" if ours_m <= peer_m else "NO",
    )
    cold: Row | None = None
    if history == 6:  # the next turn through a service instance that did not write the last one
        fresh = SessionService(store)
        timed = make_turns(prose, sessions, 1000)
        prepared = [thread.prepare(turn.peer) for thread, turn in zip(threads, timed, strict=True)]
        ours, peer = [], []
        gc.collect()
        for index, (sid, turn, args) in enumerate(zip(ids, timed, prepared, strict=True)):
            for side in (0, 1) if index % 2 == 0 else (1, 0):
                start = time.perf_counter_ns()
                if side == 0:
                    fresh.append(sid, turn.ours)
                    ours.append((time.perf_counter_ns() - start) / 1000)
                else:
                    saver.put(*args)
                    peer.append((time.perf_counter_ns() - start) / 1000)
        ours_m, peer_m = statistics.median(ours), statistics.median(peer)
        cold = Row(
            "  the next turn (8-message history) by a service that did not write the last (reads the leaf)",
            f"{ours_m:,.1f} µs median (p95 {_p95(ours):,.1f}); InMemorySaver.put {peer_m:,.1f} µs; "
            f"ours / peer {ours_m / peer_m:.2f}x",
            "",
            "(no target)",
            "",
        )
    return row, cold


def bench_find_memory(sessions: int, per_principal: int, lookups: int, seed: int) -> Row:
    log(f"memory find_by_metadata: creating {sessions:,} sessions")
    service = SessionService(InMemorySessionStore())
    principals = sessions // per_principal
    started = time.perf_counter()
    for i in range(sessions):  # each principal's sessions spread over the whole load
        service.create(metadata={"principal": f"user-{i % principals:06d}", "title": f"chat {i}"})
    create_s = time.perf_counter() - started
    rng = random.Random(seed)
    wanted = [f"user-{rng.randrange(principals):06d}" for _ in range(lookups)]
    samples: list[float] = []
    sizes: set[int] = set()
    gc.collect()
    for principal in wanted:
        start = time.perf_counter_ns()
        page = service.find_by_metadata("principal", principal)
        samples.append((time.perf_counter_ns() - start) / 1000)
        sizes.add(len(page.records))
    median = statistics.median(samples)
    return Row(
        f"memory: find_by_metadata('principal', p), {per_principal} of {sessions:,} sessions",
        f"{median:,.1f} µs median (p95 {_p95(samples):,.1f}; {lookups:,} lookups, records per page "
        f"{sorted(sizes)}; {sessions:,} creates took {create_s:.1f} s)",
        "",
        "< 50 µs",
        "yes" if median < 50 else "NO",
    )


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, math.ceil(len(values) * 0.95) - 1)]


# --- DynamoDB: calls, bytes and request units ---------------------------------------------------


@dataclass
class Cost:
    """What one measured stretch of calls cost."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes_written: int = 0
    wru: int = 0
    rru: float = 0.0
    items_read: int = 0
    items_written: int = 0
    failed: int = 0

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def describe(self) -> str:
        return ", ".join(f"{name} {count}" for name, count in sorted(self.calls.items()))


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"pk": item["pk"], "sk": item["sk"]}


def _written_keys(name: str, params: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None, bool]]:
    """(key, item carried by a Put or None, transactional) for every item a write request touches."""
    if name == "PutItem":
        return [(_key(params["Item"]), params["Item"], False)]
    if name in ("UpdateItem", "DeleteItem"):
        return [(params["Key"], None, False)]
    if name == "BatchWriteItem":
        out: list[tuple[dict[str, Any], dict[str, Any] | None, bool]] = []
        for requests in params["RequestItems"].values():
            for request in requests:
                if "PutRequest" in request:
                    out.append((_key(request["PutRequest"]["Item"]), request["PutRequest"]["Item"], False))
                else:
                    out.append((request["DeleteRequest"]["Key"], None, False))
        return out
    if name == "TransactWriteItems":
        out = []
        for action in params["TransactItems"]:
            kind, body = next(iter(action.items()))
            if kind == "Put":
                out.append((_key(body["Item"]), body["Item"], True))
            else:
                out.append((body["Key"], None, True))
        return out
    return []


class Ledger:
    """Counts every call of a client and prices it by AWS's rules, while a measurement is open."""

    def __init__(self, client: Any, shadow: Any, table: str) -> None:
        self.shadow = shadow
        self.table = table
        self.cost: Cost | None = None
        client.meta.events.register("provide-client-params.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    @contextmanager
    def measure(self) -> Iterator[Cost]:
        cost = Cost()
        self.cost = cost
        try:
            yield cost
        finally:
            self.cost = None

    def _size(self, key: dict[str, Any]) -> int:
        item = self.shadow.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        return item_size(item) if item else 0

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if self.cost is None:
            return
        name = model.name
        self.cost.calls[name] += 1
        self.cost.bytes_written += write_cost(name, params)[0]
        if name in WRITES:
            touched = _written_keys(name, params)
            context["bench"] = [(key, put, tx, self._size(key)) for key, put, tx in touched]

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        cost = self.cost
        if cost is None:
            return
        if http_response.status_code >= 300:
            cost.failed += 1
            return
        name = model.name
        if name in WRITES:
            for key, put, transactional, before in context.get("bench", []):
                if put is not None:
                    after = item_size(put)
                elif name in ("UpdateItem", "TransactWriteItems"):
                    after = self._size(key)  # an Update's item after it; 0 for a Delete already gone
                else:
                    after = 0
                cost.wru += max(1, math.ceil(max(before, after) / 1024)) * (2 if transactional else 1)
                cost.items_written += 1
            return
        if name == "GetItem":
            item = parsed.get("Item")
            size = self._size(_key(item)) if item else 0
            cost.rru += max(1, math.ceil(size / 4096))
            cost.items_read += 1
        elif name == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                for item in items:
                    cost.rru += max(1, math.ceil(self._size(_key(item)) / 4096))
                    cost.items_read += 1
        elif name == "Query":
            items = parsed.get("Items", [])
            total = sum(self._size(_key(item)) if "pk" in item and "sk" in item else item_size(item) for item in items)
            cost.rru += max(1, math.ceil(total / 4096))
            cost.items_read += len(items)


def _units(cost: Cost) -> str:
    return f"{cost.wru:,} WRU, {cost.rru:,.0f} RRU"


def _history_sizes(messages: tuple[Message, ...]) -> tuple[int, int]:
    """The history's JSON size and its compressed size (as the store compresses a blob)."""
    wire = [to_wire(m) for m in messages]
    return len(json.dumps(wire, separators=(",", ":"), ensure_ascii=False).encode()), len(compress(wire))


def bench_dynamodb(args: argparse.Namespace) -> list[Row]:
    from genkit_sessions.dynamodb.local import LocalDynamoDB

    rows: list[Row] = []
    prose = Prose(args.seed + 7)
    with LocalDynamoDB(process=True, rollback="keyed") as ddb:
        client = ddb.client(max_pool_connections=32)
        shadow = ddb.client()
        table = f"service-{uuid.uuid4().hex[:8]}"
        create_table(client, table)
        ledger = Ledger(client, shadow, table)
        store = DynamoDBSessionStore(table, client)
        service = SessionService(store)

        # 10,000 sessions, each with a principal (10 per principal) and an expiry a day away,
        # then a few that expire soon, each holding three turns.
        total, expired = args.ddb_sessions, args.expired
        long_lived = total - sum(expired)
        principals = total // 10
        log(f"dynamodb: creating {long_lived:,} sessions on {ddb.endpoint_url}")
        started = time.perf_counter()

        def make(i: int) -> str:
            record = service.create(metadata={"principal": f"user-{i % principals:05d}"}, ttl=timedelta(days=1))
            return record.id

        with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
            made = list(pool.map(make, range(long_lived)))
        log(f"  created in {time.perf_counter() - started:.1f} s")
        waves: list[tuple[list[str], datetime]] = []
        for wave, count in enumerate(expired):
            ttl = timedelta(seconds=args.expiry_seconds * (wave + 1))
            ids = []
            for i in range(count):
                sid = service.create(metadata={"principal": f"user-{(long_lived + i) % principals:05d}"}, ttl=ttl).id
                for _ in range(3):
                    service.append(sid, make_turns(prose, 1, 1000)[0].ours)
                ids.append(sid)
            waves.append((ids, datetime.now(timezone.utc) + ttl))

        # append with the expected version current, by the service that wrote the previous turn
        log("dynamodb: append at steady state")
        sid = made[0]
        version = 0
        for turn in make_turns(prose, args.warm_turns, 1000):
            version = service.append(sid, turn.ours, expected_version=version).version
        costs: list[Cost] = []
        for turn in make_turns(prose, args.measured_turns, 1000):
            with ledger.measure() as cost:
                result = service.append(sid, turn.ours, expected_version=version)
            assert result.ok
            version = result.version
            costs.append(cost)
        calls = [c.total_calls for c in costs]
        ops = sum((c.calls for c in costs), Counter())
        reads = sum(sum(v for k, v in c.calls.items() if k not in WRITES) for c in costs)
        rows.append(
            Row(
                f"dynamodb: append, expected version current, turns {args.warm_turns + 1}-"
                f"{args.warm_turns + args.measured_turns} (the service wrote the turn before)",
                f"{statistics.mean(calls):.2f} calls mean, max {max(calls)} "
                f"({', '.join(f'{k} {v}' for k, v in sorted(ops.items()))}); reads {reads}; "
                f"{statistics.mean(c.bytes_written for c in costs):,.0f} B written per turn",
                f"{statistics.mean(c.wru for c in costs):.1f} WRU, {statistics.mean(c.rru for c in costs):.1f} RRU "
                "per turn",
                "1 call: one TransactWriteItems, no read",
                "yes" if max(calls) == 1 and set(ops) == {"TransactWriteItems"} else "NO",
            )
        )
        # the same turn from a cold process: a new store and service, nothing known
        cold_costs: list[Cost] = []
        for turn in make_turns(prose, 5, 1000):
            cold = SessionService(DynamoDBSessionStore(table, client))
            with ledger.measure() as cost:
                result = cold.append(sid, turn.ours, expected_version=version)
            assert result.ok
            version = result.version
            cold_costs.append(cost)
        rows.append(
            Row(
                "  the same append from a new process (new store and service instance)",
                f"{statistics.mean(c.total_calls for c in cold_costs):.2f} calls ({cold_costs[-1].describe()})",
                f"{statistics.mean(c.wru for c in cold_costs):.1f} WRU, "
                f"{statistics.mean(c.rru for c in cold_costs):.1f} RRU",
                "(no target)",
                "",
            )
        )

        # find_by_id
        log("dynamodb: find_by_id, find_by_metadata")
        rng = random.Random(args.seed)
        finds = []
        for sid in rng.sample(made, 20):
            with ledger.measure() as cost:
                assert service.find_by_id(sid) is not None
            finds.append(cost)
        rows.append(
            Row(
                f"dynamodb: find_by_id (20 sessions among {total:,})",
                f"{max(c.total_calls for c in finds)} call max ({finds[0].describe()})",
                f"{statistics.mean(c.rru for c in finds):.1f} RRU",
                "1 call",
                "yes" if max(c.total_calls for c in finds) == 1 else "NO",
            )
        )
        pages = []
        for principal in rng.sample(range(principals), 20):
            with ledger.measure() as cost:
                page = service.find_by_metadata("principal", f"user-{principal:05d}")
            pages.append((cost, len(page.records)))
        worst = max(pages, key=lambda p: p[0].total_calls)[0]
        good = all(c.calls["Query"] == 1 and c.calls["BatchGetItem"] <= 1 and c.total_calls <= 2 for c, _ in pages)
        rows.append(
            Row(
                f"dynamodb: find_by_metadata of a page (20 principals, {sorted({n for _, n in pages})} records)",
                f"{max(c.total_calls for c, _ in pages)} calls max ({worst.describe()})",
                f"{statistics.mean(c.rru for c, _ in pages):.1f} RRU",
                "1 Query + at most 1 BatchGetItem",
                "yes" if good else "NO",
            )
        )

        # a 1,000-turn session, forked, then compacted, then forked again
        log(f"dynamodb: a {args.long_turns}-turn session")
        long_id = "long-chat"
        service.create(long_id, metadata={"principal": "user-long"})
        version = 0
        started = time.perf_counter()
        for turn in make_turns(prose, args.long_turns, 1000):
            result = service.append(long_id, turn.ours, expected_version=version)
            version = result.version
        log(f"  written in {time.perf_counter() - started:.1f} s")
        leaf = result.snapshot
        assert leaf is not None
        history = service.get_messages(long_id)
        raw, packed = _history_sizes(history)
        with ledger.measure() as cost:
            service.fork(leaf.snapshot_id, new_session_id="long-fork")
        assert len(service.get_messages("long-fork")) == len(history)
        once = cost.bytes_written <= packed * 1.05 + 4096
        rows.append(
            Row(
                f"dynamodb: fork of the {args.long_turns}-turn session ({len(history):,} messages)",
                f"{cost.bytes_written:,} B written = {cost.bytes_written / packed:.2f}x the history compressed "
                f"({packed:,} B; {raw:,} B raw); {cost.total_calls} calls ({cost.describe()})",
                _units(cost),
                "each byte of the history at most once (compressed)",
                "yes" if once else "NO",
            )
        )
        summary_text = prose.text(1000)
        strategy = KeepLastStrategy(keep=args.keep, summarize=lambda _: summary_text)
        with ledger.measure() as cost:
            compacted = service.compact(long_id, MessageCountTrigger(100), strategy)
        assert compacted.changed
        active = service.get_active_messages(long_id)
        active_raw, active_packed = _history_sizes(active)
        assert len(service.get_messages(long_id)) == len(history) + len(compacted.summary)
        small = cost.bytes_written <= 4 * active_packed + 8192
        rows.append(
            Row(
                f"dynamodb: compaction of the {args.long_turns}-turn session (keep {args.keep}, 1 KB summary)",
                f"{cost.bytes_written:,} B written; summary + kept {active_raw:,} B raw, {active_packed:,} B "
                f"compressed; history {raw:,} B raw, {packed:,} B compressed; {cost.total_calls} calls "
                f"({cost.describe()})",
                _units(cost),
                "O(summary + kept), not O(history)",
                "yes" if small else "NO",
            )
        )
        compacted_leaf = store.get_snapshot(session_id=long_id)
        assert compacted_leaf is not None
        full = service.get_messages(long_id)
        full_raw, full_packed = _history_sizes(full)
        with ledger.measure() as cost:
            service.fork(compacted_leaf.snapshot_id, new_session_id="long-fork-compacted")
        assert len(service.get_messages("long-fork-compacted")) == len(full)
        once = cost.bytes_written <= full_packed * 1.05 + 8192
        rows.append(
            Row(
                "  fork of the compacted session (its full history, archive and active view)",
                f"{cost.bytes_written:,} B written = {cost.bytes_written / full_packed:.2f}x the full history "
                f"compressed ({full_packed:,} B; {full_raw:,} B raw); {cost.total_calls} calls ({cost.describe()})",
                _units(cost),
                "each byte at most once (compressed)",
                "yes" if once else "NO",
            )
        )

        # delete_expired, one wave after the other
        for index, (ids, due) in enumerate(waves):
            wait = (due - datetime.now(timezone.utc)).total_seconds() + 0.5
            if wait > 0:
                log(f"dynamodb: waiting {wait:.1f} s for {len(ids)} sessions to expire")
                time.sleep(wait)
            before = due + timedelta(seconds=args.expiry_seconds / 2) if index + 1 < len(waves) else None
            log(f"dynamodb: delete_expired of {len(ids)}")
            with ledger.measure() as cost:
                count = service.delete_expired(before)
            gone = sum(service.find_by_id(s) is None for s in ids)
            touched = cost.items_read + cost.items_written
            rows.append(
                Row(
                    f"dynamodb: delete_expired, k = {len(ids)} expired (3 turns each) among {total:,} sessions",
                    f"returned {count} ({gone} of {len(ids)} gone); {touched:,} items touched "
                    f"({cost.items_read:,} read, {cost.items_written:,} written; {touched / max(1, len(ids)):.1f} "
                    f"per session); {cost.total_calls} calls ({cost.describe()})",
                    _units(cost),
                    "O(k) items, count printed",
                    "yes" if count == len(ids) and touched <= 20 * len(ids) + 10 else "NO",
                )
            )
    return rows


# --- the table ---------------------------------------------------------------------------------


def print_table(rows: list[Row]) -> None:
    header = Row("figure", "measured", "request units (AWS rules)", "target", "met")
    cells = [[r.figure, r.measured, r.units, r.target, r.met] for r in [header, *rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(5)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(line)
    for index, cell in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) + " |")
        if index == 0:
            print(line)
    print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller loads, for a smoke run")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--memory-sessions", type=int, default=100_000)
    parser.add_argument("--ddb-sessions", type=int, default=10_000)
    parser.add_argument("--long-turns", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=8, help="threads that load the DynamoDB sessions")
    parser.add_argument("--skip-dynamodb", action="store_true")
    args = parser.parse_args(argv)
    args.expired = (5, 20)
    args.expiry_seconds = 6.0
    args.warm_turns, args.measured_turns, args.keep = 100, 50, 20
    append_sessions = {6: 1000, 200: 250}
    if args.quick:
        args.memory_sessions, args.ddb_sessions, args.long_turns = 10_000, 500, 100
        args.warm_turns, args.measured_turns = 10, 10
        append_sessions = {6: 200, 200: 50}
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    started = time.perf_counter()
    rows: list[Row] = []
    for history, sessions in append_sessions.items():
        row, cold = bench_append(history, sessions, args.seed)
        rows.append(row)
        if cold is not None:
            rows.append(cold)
    rows.append(bench_find_memory(args.memory_sessions, 10, 2000, args.seed))
    if not args.skip_dynamodb:
        rows.extend(bench_dynamodb(args))
    from importlib.metadata import version

    print(
        f"bench_service: python {platform.python_version()}, langgraph-checkpoint {version('langgraph-checkpoint')}, "
        f"moto {version('moto')} (LocalDynamoDB, keyed rollback), {platform.machine()}, {os.cpu_count()} cores; "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
