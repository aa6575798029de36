"""DynamoDBSessionStore against langgraph-checkpoint-aws's DynamoDBSaver, side by side on one moto server.

Run it from the bench environment (the peer lives in the ``bench`` extra)::

    PYTHONPATH=. .venv-bench/bin/python benchmarks/bench_dynamodb.py [--turns 1000] [--sessions 1000]

The workload, the same for both stores (a chat of two ~1 KB messages of
prose-like text per turn):

- **chat**: every turn resumes the session by id, appends a user and a model
  message, and saves the turn's end. Our side resumes each turn from a cold
  store (a new ``DynamoDBSessionStore`` on the shared client: nothing cached,
  as in a new process); the peer keeps one warm ``DynamoDBSaver`` (one saver,
  one client) for the whole run, as its users do. The peer plays twice, in
  two tables: its ``messages`` channel holding LangChain messages with ids
  (what ``MessagesState`` keeps, so what a LangGraph chat agent stores), and
  holding plain dicts (its cheapest payload, which it unpacks without building
  a message object); ours builds typed ``Message`` objects. At turns 10, 100
  and 1,000 each side resumes the leaf ``--repeats`` more times (ours cold
  every time, the peers warm), in rotating order, and the medians are compared.
  The peer's checkpoint holds the whole state, so what its turn t reads and
  writes does not depend on the turns before: it plays turns 1-100, then
  jumps to the state of turn ``t - 10`` with one unmetered put before each
  later checkpoint (fewer stale checkpoints in its table, which can only make
  it faster).
- **in flight**: ``--sessions`` sessions resumed one after another by one store
  (and one saver), every leaf held, then every turn's end saved: the calls a
  turn needs when that many sessions are in flight.
- **large states**: one state of 10 to 100 MB saved and read back (ours), and
  the largest state the peer stores without S3.

Every call of both clients is counted through botocore's event hooks: calls,
bytes written (the items or values a request sends; the peer's S3 bodies
too), items fetched, and request units by AWS's rules (per item, 1 WRU per KB
written, doubled in a transaction; 1 RRU per 4 KB read strongly consistent,
half that eventually consistent; a Query rounds its total once). S3 requests
are billed per request, not in units: their bytes count as written or
fetched. The program prints one table (progress goes to stderr); it asserts
nothing. Its workloads are functions (:func:`chat`, :func:`in_flight`,
:func:`large_states`, rendered by :func:`table`), and :func:`suite` runs them
all on a moto server of its own and returns the report, for a program that
runs several suites.
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attrs

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb.store import item_size

__all__ = ["Meter", "Prose", "Side", "chat", "in_flight", "large_states", "main", "suite", "table"]

WRITE_OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
CHECKPOINTS = (10, 100, 1000)


# --- text that compresses like prose ---------------------------------------------------------


class Prose:
    """Pseudo-English: a 6,000-word vocabulary of syllable words drawn with Zipf frequencies."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ea", "ou")]
        words = {"".join(rng.choices(syllables, k=rng.choice((1, 1, 2, 2, 2, 3, 3, 4)))) for _ in range(9000)}
        self.words = sorted(words)[:6000]
        rng.shuffle(self.words)
        self.cumulative = list(_accumulate([1 / (rank + 1) for rank in range(len(self.words))]))
        self.rng = rng

    def text(self, size: int) -> str:
        out: list[str] = []
        length = 0
        while length < size:
            sentence = self.rng.choices(self.words, cum_weights=self.cumulative, k=self.rng.randint(6, 18))
            line = " ".join(sentence).capitalize() + self.rng.choice((". ", ". ", ", ", "? ", "! "))
            out.append(line)
            length += len(line)
        return "".join(out)[:size]


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for value in values:
        total += value
        yield total


# --- counting calls, bytes, items and request units --------------------------------------------


@dataclass
class Tally:
    """What a stretch of work cost."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes_written: int = 0
    wru: float = 0.0
    items_fetched: int = 0
    bytes_fetched: int = 0
    rru: float = 0.0

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def db_calls(self) -> int:
        return sum(v for k, v in self.calls.items() if not k.startswith("s3:"))


def _kb_units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


def write_cost(operation: str, params: dict[str, Any]) -> tuple[int, float]:
    """Bytes a write request sends, and its WRU by AWS's rules (an update counts the values it sends,
    a lower bound: AWS bills the larger of the item before and after)."""

    def put(item: dict[str, Any]) -> tuple[int, int]:
        size = item_size(item)
        return size, _kb_units(size, 1024)

    def update(request: dict[str, Any]) -> tuple[int, int]:
        size = item_size(request["Key"]) + sum(
            item_size({"v": v}) - 1 for v in request.get("ExpressionAttributeValues", {}).values()
        )
        return size, _kb_units(size, 1024)

    if operation == "PutItem":
        return put(params["Item"])
    if operation == "UpdateItem":
        return update(params)
    if operation == "DeleteItem":
        return 0, 1
    if operation == "BatchWriteItem":
        size = units = 0
        for requests in params["RequestItems"].values():
            for r in requests:
                s, u = put(r["PutRequest"]["Item"]) if "PutRequest" in r else (0, 1)
                size, units = size + s, units + u
        return size, units
    if operation == "TransactWriteItems":
        size = units = 0
        for action in params["TransactItems"]:
            if "Put" in action:
                s, u = put(action["Put"]["Item"])
            elif "Update" in action:
                s, u = update(action["Update"])
            elif "Delete" in action:
                s, u = 0, 1
            else:
                s, u = 0, 1  # a ConditionCheck is billed as a write
            size, units = size + s, units + 2 * u
        return size, units
    return 0, 0.0


def read_cost(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> tuple[int, int, float]:
    """Items a read returned, their bytes, and its RRU by AWS's rules."""
    if operation == "GetItem":
        item = parsed.get("Item")
        size = item_size(item) if item else 0
        units = _kb_units(size, 4096) * (1.0 if params.get("ConsistentRead") else 0.5)
        return (1 if item else 0), size, units
    if operation == "BatchGetItem":
        count = size = 0
        units = 0.0
        for table, items in parsed.get("Responses", {}).items():
            consistent = params.get("RequestItems", {}).get(table, {}).get("ConsistentRead", False)
            for item in items:
                s = item_size(item)
                count, size = count + 1, size + s
                units += _kb_units(s, 4096) * (1.0 if consistent else 0.5)
        return count, size, units
    if operation in ("Query", "Scan"):
        items = parsed.get("Items", [])
        size = sum(item_size(i) for i in items)
        units = _kb_units(size, 4096) * (1.0 if params.get("ConsistentRead") else 0.5)
        return len(items), size, units
    return 0, 0, 0.0


class Meter:
    """Counts every call a client makes (DynamoDB, or S3 with :meth:`attach_s3`) into the open tallies."""

    def __init__(self) -> None:
        self._open: list[Tally] = []

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    def attach_s3(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.s3", self._before_s3)
        client.meta.events.register("after-call.s3", self._after_s3)

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = params
        size, units = write_cost(model.name, params)
        for tally in self._open:
            tally.calls[model.name] += 1
            tally.bytes_written += size
            tally.wru += units

    def _after(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        count, size, units = read_cost(model.name, context.get("bench_params", {}), parsed or {})
        for tally in self._open:
            tally.items_fetched += count
            tally.bytes_fetched += size
            tally.rru += units

    def _before_s3(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        body = params.get("Body")
        size = len(body) if isinstance(body, (bytes, bytearray, str)) else 0
        for tally in self._open:
            tally.calls["s3:" + model.name] += 1
            tally.bytes_written += size

    def _after_s3(self, http_response: Any, model: Any, **_: Any) -> None:
        if model.name != "GetObject":
            return
        size = int(http_response.headers.get("content-length", 0) or 0)
        for tally in self._open:
            tally.items_fetched += 1
            tally.bytes_fetched += size

    @contextmanager
    def measure(self) -> Iterator[Tally]:
        tally = Tally()
        self._open.append(tally)
        try:
            yield tally
        finally:
            self._open.remove(tally)


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


# --- the two sides ------------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """One side's figures at turn ``turn``."""

    turn: int
    resume_ms: float
    resume: Tally
    save: Tally
    warm_resume_ms: float | None = None


@dataclass
class Side:
    """What one store did over the chat."""

    name: str
    per_turn: dict[int, Tally] = field(default_factory=dict)
    """Turn number (1-based) -> what its resume and save wrote (the peer plays only some turns)."""
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)


class Ours:
    """Our store's side of the chat: every turn on a cold store (a new instance, nothing cached)."""

    def __init__(self, endpoint: str, message_bytes: int, seed: int) -> None:
        from genkit_sessions.dynamodb.embedded import local_client

        self.client = local_client(endpoint)
        self.meter = Meter()
        self.meter.attach(self.client)
        self.table = f"genkit-{uuid.uuid4().hex[:8]}"
        create_table(self.client, self.table)
        self.side = Side("genkit_sessions DynamoDBSessionStore (cold store every resume)")
        self.prose = Prose(seed)
        self.message_bytes = message_bytes
        self.session_id = "chat-1"
        self.last_store: DynamoDBSessionStore | None = None

    def turn(self, turn: int) -> tuple[float, Tally, Tally]:
        store = DynamoDBSessionStore(self.table, self.client)
        with self.meter.measure() as resume:
            leaf, ms = _timed(lambda: store.get_snapshot(session_id=self.session_id))
        base = leaf.state if leaf is not None and leaf.state is not None else SessionState(session_id=self.session_id)
        added = (
            Message.of_text("user", self.prose.text(self.message_bytes)),
            Message.of_text("model", self.prose.text(self.message_bytes)),
        )
        state = attrs.evolve(base, messages=base.message_list + added)
        snapshot_id = str(uuid.uuid4())
        parent_id = leaf.snapshot_id if leaf is not None else None
        with self.meter.measure() as saved:
            store.save_snapshot(
                snapshot_id, lambda _: SessionSnapshot(snapshot_id=snapshot_id, parent_id=parent_id, state=state)
            )
        self.last_store = store
        return ms, resume, saved

    def resume_cold(self) -> tuple[float, Tally]:
        store = DynamoDBSessionStore(self.table, self.client)
        with self.meter.measure() as tally:
            _, ms = _timed(lambda: store.get_snapshot(session_id=self.session_id))
        return ms, tally

    def resume_warm(self) -> float:
        assert self.last_store is not None
        store = self.last_store
        return _timed(lambda: store.get_snapshot(session_id=self.session_id))[1]


PEER_MESSAGES = ("langchain", "dict")
"""What the peer's ``messages`` channel holds: LangChain messages with ids (what ``MessagesState`` and its
``add_messages`` reducer keep, so what a LangGraph chat agent stores), or plain dicts (the saver's
cheapest payload: its serializer unpacks them without building a message object)."""


class Peer:
    """DynamoDBSaver's side: one saver and one client for the whole run, as its users keep it, with S3
    offload (its items pass 400 KB around turn 90 without it)."""

    def __init__(
        self, endpoint: str, s3_endpoint: str, message_bytes: int, seed: int, compress: bool, messages: str
    ) -> None:
        from langgraph_checkpoint_aws import DynamoDBSaver

        self.table = f"peer-{uuid.uuid4().hex[:8]}"
        _create_peer_table(endpoint, self.table)
        bucket = f"peer-offload-{uuid.uuid4().hex[:8]}"
        _s3(s3_endpoint).create_bucket(Bucket=bucket)
        self.saver = DynamoDBSaver(
            table_name=self.table,
            region_name="us-east-1",
            endpoint_url=endpoint,
            enable_checkpoint_compression=compress,
            s3_offload_config={"bucket_name": bucket, "endpoint_url": s3_endpoint},  # type: ignore[arg-type]
        )
        self.meter = Meter()
        self.meter.attach(self.saver.client)
        self.meter.attach_s3(self.saver.storage.s3_client)
        what = "LangChain messages" if messages == "langchain" else "dict messages"
        self.side = Side(f"DynamoDBSaver + S3 offload{' + compression' if compress else ''}, {what} (one warm saver)")
        self.prose = Prose(seed)
        self.message_bytes = message_bytes
        self.thread = {"configurable": {"thread_id": "chat-1", "checkpoint_ns": ""}}
        self.kind = messages
        self.messages: list[Any] = []

    def _put(self, turn: int, latest: Any) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6

        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=turn))
        checkpoint["channel_values"] = {"messages": list(self.messages)}
        checkpoint["channel_versions"] = {"messages": turn + 1}
        config = dict(latest.config) if latest else self.thread
        self.saver.put(config, checkpoint, {"source": "loop", "step": turn}, {"messages": turn + 1})  # type: ignore[arg-type]

    def _new_messages(self) -> list[Any]:
        user, model = self.prose.text(self.message_bytes), self.prose.text(self.message_bytes)
        if self.kind == "dict":
            return [{"role": "user", "content": user}, {"role": "model", "content": model}]
        from langchain_core.messages import AIMessage, HumanMessage

        return [HumanMessage(content=user, id=str(uuid.uuid4())), AIMessage(content=model, id=str(uuid.uuid4()))]

    def turn(self, turn: int) -> tuple[float, Tally, Tally]:
        with self.meter.measure() as resume:
            latest, ms = _timed(lambda: self.saver.get_tuple(self.thread))  # type: ignore[arg-type]
        self.messages = list(latest.checkpoint["channel_values"].get("messages", [])) if latest else []
        self.messages += self._new_messages()
        with self.meter.measure() as saved:
            self._put(turn, latest)
        return ms, resume, saved

    def jump_to(self, turns_done: int) -> None:
        """Put (unmetered) the checkpoint the chat has after ``turns_done`` turns."""
        while len(self.messages) < 2 * turns_done:
            self.messages += self._new_messages()
        latest = self.saver.get_tuple(self.thread)  # type: ignore[arg-type]
        self._put(turns_done - 1, latest)

    def resume_cold(self) -> tuple[float, Tally]:
        with self.meter.measure() as tally:
            _, ms = _timed(lambda: self.saver.get_tuple(self.thread))  # type: ignore[arg-type]
        return ms, tally

    def resume_warm(self) -> float:
        return self.resume_cold()[0]


def _s3(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def _create_peer_table(endpoint: str, table: str) -> None:
    from genkit_sessions.dynamodb.embedded import local_client

    local_client(endpoint).create_table(
        TableName=table,
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _play(side: Ours | Peer, turn: int) -> None:
    _, resume, saved = side.turn(turn)
    merged = Tally()
    for part in (resume, saved):
        merged.calls.update(part.calls)
        merged.bytes_written += part.bytes_written
        merged.wru += part.wru
    side.side.per_turn[turn] = saved
    side.side.per_turn[turn].bytes_written = merged.bytes_written


def _checkpoint(sides: list[Ours | Peer], turn: int, repeats: int) -> None:
    """Each side's resume at ``turn``: ``repeats`` resumes, the sides in rotating order."""
    times: dict[int, list[float]] = {i: [] for i in range(len(sides))}
    tallies: dict[int, Tally] = {}
    warm: dict[int, list[float]] = {i: [] for i in range(len(sides))}
    for repeat in range(repeats):
        order = list(range(len(sides)))
        order = order[repeat % len(order) :] + order[: repeat % len(order)]
        for i in order:
            gc.collect()
            ms, tally = sides[i].resume_cold()
            times[i].append(ms)
            tallies[i] = tally
            warm[i].append(sides[i].resume_warm())
    for i, side in enumerate(sides):
        side.side.checkpoints[turn] = Checkpoint(
            turn,
            statistics.median(times[i]),
            tallies[i],
            side.side.per_turn[turn],
            statistics.median(warm[i]),
        )


def chat(
    endpoint: str,
    s3_endpoint: str,
    *,
    turns: int = 1000,
    checkpoints: tuple[int, ...] = CHECKPOINTS,
    message_bytes: int = 1000,
    seed: int = 42,
    repeats: int = 5,
    peer_compression: bool = False,
    peer_messages: tuple[str, ...] = PEER_MESSAGES,
    log: Callable[[str], None] = print,
) -> list[Side]:
    """The chat workload: ours (every turn on a cold store) and the peer (one warm saver) for each kind
    of ``peer_messages``, turn by turn in rotating order; returns every side's figures, ours first."""
    ours = Ours(endpoint, message_bytes, seed)
    peers = [Peer(endpoint, s3_endpoint, message_bytes, seed, peer_compression, kind) for kind in peer_messages]
    everyone: list[Ours | Peer] = [ours, *peers]
    checkpoints = tuple(c for c in checkpoints if c <= turns)
    peer_turns = set(range(1, min(turns, 100) + 1))
    for c in checkpoints:
        peer_turns |= set(range(max(1, c - 9), c + 1))
    started = time.perf_counter()
    for turn in range(1, turns + 1):
        shift = turn % len(everyone)
        for side in everyone[shift:] + everyone[:shift]:
            if isinstance(side, Peer) and turn not in peer_turns:
                continue
            if isinstance(side, Peer) and turn - 1 not in peer_turns and turn > 1:
                side.jump_to(turn - 1)
            _play(side, turn)
        if turn in checkpoints:
            _checkpoint(everyone, turn, repeats)
            log(f"  chat: turn {turn} done, {time.perf_counter() - started:.0f} s, load {_load()}")
    return [side.side for side in everyone]


@dataclass
class InFlight:
    """Calls per turn with many sessions in flight."""

    name: str
    sessions: int
    resume: Tally
    save: Tally


def in_flight(endpoint: str, *, sessions: int = 1000, seed: int = 7, cache_size: int = 64) -> list[InFlight]:
    """``sessions`` sessions of one turn each; then one store (and one saver) resumes every one, holding
    every leaf, and saves every turn's end: the calls per turn with that many sessions in flight."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6
    from langgraph_checkpoint_aws import DynamoDBSaver

    from genkit_sessions.dynamodb.embedded import local_client

    prose = Prose(seed)
    texts = [prose.text(1000) for _ in range(64)]
    client = local_client(endpoint)
    meter = Meter()
    meter.attach(client)
    table = f"genkit-flight-{uuid.uuid4().hex[:8]}"
    create_table(client, table)
    seeding = DynamoDBSessionStore(table, client)
    ids = [f"s-{i}" for i in range(sessions)]
    for n, session_id in enumerate(ids):
        state = SessionState(
            session_id=session_id,
            messages=(Message.of_text("user", texts[n % 64]), Message.of_text("model", texts[(n + 1) % 64])),
        )
        seeding.save_snapshot(
            f"{session_id}-0", lambda _, s=state, i=f"{session_id}-0": SessionSnapshot(snapshot_id=i, state=s)
        )
    rows: list[InFlight] = []
    for size in (0, cache_size, 1024):
        store = DynamoDBSessionStore(table, client, cache_size=size)
        with meter.measure() as resume:
            leaves = [store.get_snapshot(session_id=session_id) for session_id in ids]
        with meter.measure() as save:
            for n, leaf in enumerate(leaves):
                assert leaf is not None and leaf.state is not None
                state = attrs.evolve(
                    leaf.state, messages=(*leaf.state.message_list, Message.of_text("user", texts[n % 64]))
                )
                new_id = str(uuid.uuid4())
                store.save_snapshot(
                    new_id,
                    lambda _, i=new_id, p=leaf.snapshot_id, s=state: SessionSnapshot(
                        snapshot_id=i, parent_id=p, state=s
                    ),
                )
        rows.append(InFlight(f"genkit_sessions, one store, cache_size={size}", sessions, resume, save))
        del leaves
    peer_table = f"peer-flight-{uuid.uuid4().hex[:8]}"
    _create_peer_table(endpoint, peer_table)
    saver = DynamoDBSaver(table_name=peer_table, region_name="us-east-1", endpoint_url=endpoint)
    peer_meter = Meter()
    peer_meter.attach(saver.client)
    threads = [{"configurable": {"thread_id": session_id, "checkpoint_ns": ""}} for session_id in ids]
    for n, thread in enumerate(threads):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {
            "messages": [{"role": "user", "content": texts[n % 64]}, {"role": "model", "content": texts[(n + 1) % 64]}]
        }
        saver.put(thread, checkpoint, {}, {"messages": 1})  # type: ignore[arg-type]
    with peer_meter.measure() as resume:
        latest = [saver.get_tuple(thread) for thread in threads]  # type: ignore[arg-type]
    with peer_meter.measure() as save:
        for n, found in enumerate(latest):
            assert found is not None
            checkpoint = empty_checkpoint()
            checkpoint["id"] = str(uuid6(clock_seq=n))
            checkpoint["channel_values"] = {
                "messages": [
                    *found.checkpoint["channel_values"]["messages"],
                    {"role": "user", "content": texts[n % 64]},
                ]
            }
            saver.put(found.config, checkpoint, {}, {"messages": 2})
    rows.append(InFlight("DynamoDBSaver, one warm saver", sessions, resume, save))
    return rows


@dataclass
class Large:
    """One large state: stored and read back."""

    size: int
    stored: bool
    equal: bool
    save_calls: Counter[str]
    read_by_id: Counter[str]
    read_leaf: Counter[str]
    note: str = ""


def large_states(endpoint: str, sizes: tuple[int, ...], *, seed: int = 43) -> tuple[list[Large], list[str]]:
    """Ours: each state saved, then read back by id and by session from cold stores (calls counted);
    the peer: the largest state it stores without S3 (it stores the state as one item)."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph_checkpoint_aws import DynamoDBSaver

    from genkit_sessions.dynamodb.embedded import local_client

    prose = Prose(seed)
    texts = [prose.text(100_000) for _ in range(120)]  # cycled: zlib's 32 KB window sees no repeat
    client = local_client(endpoint)
    meter = Meter()
    meter.attach(client)
    table = f"genkit-big-{uuid.uuid4().hex[:8]}"
    create_table(client, table)
    rows: list[Large] = []
    for size in sizes:
        session_id = f"big-{size}"
        state = SessionState(
            session_id=session_id,
            messages=tuple(Message.of_text("user", texts[i % len(texts)]) for i in range(max(1, size // 100_000))),
        )
        store = DynamoDBSessionStore(table, client)
        try:
            with meter.measure() as saved:
                store.save_snapshot(
                    session_id, lambda _, s=state, i=session_id: SessionSnapshot(snapshot_id=i, state=s)
                )
            with meter.measure() as by_id:
                back = DynamoDBSessionStore(table, client).get_snapshot(snapshot_id=session_id)
            with meter.measure() as by_leaf:
                leaf = DynamoDBSessionStore(table, client).get_snapshot(session_id=session_id)
            equal = back is not None and back.state == state and leaf is not None and leaf.state == state
            rows.append(Large(size, True, equal, saved.calls, by_id.calls, by_leaf.calls))
        except Exception as exc:  # report where it stops
            rows.append(Large(size, False, False, Counter(), Counter(), Counter(), f"{type(exc).__name__}: {exc}"[:80]))
        del state, back, leaf
        gc.collect()
    peer_table = f"peer-big-{uuid.uuid4().hex[:8]}"
    _create_peer_table(endpoint, peer_table)
    peer_notes: list[str] = []
    for compress in (False, True):
        saver = DynamoDBSaver(
            table_name=peer_table,
            region_name="us-east-1",
            endpoint_url=endpoint,
            enable_checkpoint_compression=compress,
        )
        largest, stop = 0, "did not stop"
        for size in (100_000, 250_000, 500_000, 1_000_000, 2_000_000, 5_000_000):
            messages = [{"role": "user", "content": texts[i % len(texts)]} for i in range(max(1, size // 100_000))]
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": messages}
            config = {"configurable": {"thread_id": f"big-{size}-{compress}", "checkpoint_ns": ""}}
            try:
                saver.put(config, checkpoint, {}, {})  # type: ignore[arg-type]
                found = saver.get_tuple(config)  # type: ignore[arg-type]
                if found is None or found.checkpoint["channel_values"]["messages"] != messages:
                    stop = f"{_mb(size)}: read back differs"
                    break
            except Exception as exc:  # report where it stops
                text = str(exc)
                stop = f"{_mb(size)}: " + ("item over 400 KB" if "Item size" in text else type(exc).__name__)
                break
            largest = size
        peer_notes.append(
            f"DynamoDBSaver{' + compression' if compress else ''} without S3: largest {_mb(largest)}, stops at {stop}"
        )
    return rows, peer_notes


# --- the table ------------------------------------------------------------------------------


def _mb(size: int) -> str:
    return f"{size / 1_000_000:g} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _window(side: Side, first: int, last: int) -> list[Tally]:
    return [side.per_turn[t] for t in range(first, last + 1) if t in side.per_turn]


def _mean(values: list[float]) -> float:
    return statistics.mean(values) if values else float("nan")


def _bytes(window: list[Tally]) -> float:
    return _mean([t.bytes_written for t in window])


def _window_spread(side: Side, turns: int) -> str:
    """How the bytes of every 10-turn window (turns 1-10, 11-20, ...) compare with those of turns 1-10:
    the median and largest ratio, and how many windows pass 1.25x. One window says little where a page
    folds every few turns: this shows the whole chat."""
    first = _bytes(_window(side, 1, 10))
    ratios = [_bytes(_window(side, start, start + 9)) / first for start in range(1, turns - 8, 10)]
    over = sum(1 for r in ratios if r > 1.25)
    return f"{statistics.median(ratios):.2f}x, {max(ratios):.2f}x, {over} of {len(ratios)}"


def _calls_text(calls: Counter[str]) -> str:
    db = {k: v for k, v in calls.items() if not k.startswith("s3:")}
    s3 = {k[3:]: v for k, v in calls.items() if k.startswith("s3:")}
    text = f"{sum(db.values())} (" + ", ".join(f"{k} {v}" for k, v in sorted(db.items())) + ")"
    if s3:
        text += " + S3 " + ", ".join(f"{k} {v}" for k, v in sorted(s3.items()))
    return text


def table(
    sides: list[Side],
    flight: list[InFlight],
    large: list[Large],
    peer_large: list[str],
    turns: int,
) -> str:
    """The report: one row per figure, ours and each peer side by side, and ours over each peer."""
    ours, peers = sides[0], sides[1:]
    rows: list[list[str]] = []

    def row(label: str, a: str, others: list[str], ratio: str = "") -> None:
        rows.append([label, a, *others, *[""] * (len(peers) - len(others)), ratio])

    def ratios(values: list[float | None], of: float, fmt: str = "{:.2f}x") -> str:
        return " / ".join(fmt.format(of / v) if v else "-" for v in values)

    for turn in sorted(ours.checkpoints):
        o = ours.checkpoints[turn]
        ps = [p.checkpoints[turn] for p in peers if turn in p.checkpoints]
        if len(ps) != len(peers):
            continue
        row(
            f"turn {turn:,}: resume, median (ours cold, peer warm)",
            f"{o.resume_ms:.1f} ms",
            [f"{p.resume_ms:.1f} ms" for p in ps],
            ratios([p.resume_ms for p in ps], o.resume_ms),
        )
        row(
            "  resume from the store that saved (warm)",
            f"{o.warm_resume_ms:.1f} ms",
            [f"{p.warm_resume_ms:.1f} ms" for p in ps],
            ratios([p.warm_resume_ms for p in ps], o.warm_resume_ms or 0),
        )
        row("  calls per resume", _calls_text(o.resume.calls), [_calls_text(p.resume.calls) for p in ps])
        row(
            "  items fetched per resume",
            f"{o.resume.items_fetched} ({o.resume.bytes_fetched / 1000:,.0f} KB)",
            [f"{p.resume.items_fetched} ({p.resume.bytes_fetched / 1000:,.0f} KB)" for p in ps],
        )
        row("  RRU per resume", f"{o.resume.rru:.1f}", [f"{p.resume.rru:.1f}" for p in ps])
        row("  calls per turn-end save", _calls_text(o.save.calls), [_calls_text(p.save.calls) for p in ps])
        wo, wps = _window(ours, turn - 9, turn), [_window(p, turn - 9, turn) for p in peers]
        row(
            f"  bytes written per turn, turns {max(1, turn - 9)}-{turn}",
            f"{_bytes(wo):,.0f} B",
            [f"{_bytes(wp):,.0f} B" for wp in wps],
            ratios([_bytes(wp) for wp in wps], _bytes(wo), "{:.2%}"),
        )
        row(
            f"  WRU per turn-end save, turns {max(1, turn - 9)}-{turn} (mean / max)",
            f"{_mean([t.wru for t in wo]):.1f} / {max(t.wru for t in wo):.0f}",
            [f"{_mean([t.wru for t in wp]):.1f} / {max(t.wru for t in wp):.0f}" for wp in wps],
        )

    def growth(side: Side) -> str:
        a, b = _window(side, 1, 10), _window(side, turns - 9, turns)
        return f"{_bytes(b) / _bytes(a):.2f}x"

    row(f"bytes per turn, turns {turns - 9}-{turns} / turns 1-10", growth(ours), [growth(p) for p in peers])
    if turns >= 200:
        row(
            f"  turns {turns - 99}-{turns} / turns 1-100 (ours: every turn played)",
            f"{_bytes(_window(ours, turns - 99, turns)) / _bytes(_window(ours, 1, 100)):.2f}x",
            [],
        )
    if turns >= 20:
        row(
            "  every 10-turn window / turns 1-10 (ours): median, max, windows over 1.25x",
            _window_spread(ours, turns),
            [],
        )
    row(
        f"WRU per turn-end save, mean of all {turns} turns (ours)",
        f"{_mean([t.wru for t in ours.per_turn.values()]):.1f}",
        [],
    )
    for f in flight:
        turn_calls = (f.resume.db_calls() + f.save.db_calls()) / f.sessions
        row(
            f"{f.sessions:,} sessions in flight, calls per turn: {f.name}",
            f"{turn_calls:.2f}: resume {f.resume.db_calls() / f.sessions:.2f}, "
            f"save {f.save.db_calls() / f.sessions:.2f}",
            [],
            f"save: {_calls_text(f.save.calls)}",
        )
    for big in large:
        if big.stored:
            row(
                f"state of {_mb(big.size)} (ours): stored, read back equal",
                f"{'yes' if big.equal else 'NO'}; read by id {_calls_text(big.read_by_id)}",
                [],
                f"leaf {_calls_text(big.read_leaf)}; save {_calls_text(big.save_calls)}",
            )
        else:
            row(f"state of {_mb(big.size)} (ours)", f"failed: {big.note}", [])
    for note in peer_large:
        row("largest state without S3 (peer)", "", [note])
    header = ["figure", ours.name, *[p.name for p in peers], "ours / each peer, or more"]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    rule = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    out = [rule, "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |", rule]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    out.append(rule)
    return "\n".join(out)


def suite(
    *,
    turns: int = 1000,
    sessions: int = 1000,
    message_bytes: int = 1000,
    repeats: int = 5,
    seed: int = 42,
    large_mb: tuple[float, ...] = (10, 35, 60, 100),
    peer_compression: bool = False,
    peer_messages: tuple[str, ...] = PEER_MESSAGES,
    rollback: str = "keyed",
    log: Callable[[str], None] = print,
) -> str:
    """Every workload on a moto server of its own (started and stopped here); returns the report, with
    the versions and load averages it ran under. What ``--suite dynamodb`` of a peers program calls."""
    from importlib.metadata import version

    from genkit_sessions.dynamodb.local import LocalDynamoDB

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ.setdefault(name, "testing")  # moto accepts any credentials; the peer insists on some
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    started = time.perf_counter()
    lines = [
        f"bench_dynamodb: python {platform.python_version()}, moto {version('moto')}, "
        f"langgraph-checkpoint-aws {version('langgraph-checkpoint-aws')}, {platform.machine()}, "
        f"{os.cpu_count()} cores; load {_load()}",
        f"LocalDynamoDB(process=True, rollback={rollback!r}): moto in its own process; both stores' clients "
        "call it directly (the workloads are sequential, so its serialising proxy is not needed), S3 too",
        f"chat: {turns} turns of two ~{message_bytes} B messages; in flight: {sessions} sessions",
    ]
    for line in lines:
        log(line)
    with LocalDynamoDB(process=True, rollback=rollback) as ddb:  # type: ignore[arg-type]
        sides = chat(
            ddb.moto_url,
            ddb.moto_url,
            turns=turns,
            message_bytes=message_bytes,
            seed=seed,
            repeats=repeats,
            peer_compression=peer_compression,
            peer_messages=peer_messages,
            log=log,
        )
        flight = in_flight(ddb.moto_url, sessions=sessions) if sessions else []
        log(f"  in flight done, {time.perf_counter() - started:.0f} s, load {_load()}")
        large, peer_large = (
            large_states(ddb.moto_url, tuple(int(mb * 1_000_000) for mb in large_mb)) if large_mb else ([], [])
        )
        log(f"  large states done, {time.perf_counter() - started:.0f} s, load {_load()}")
    report = table(sides, flight, large, peer_large, turns)
    return "\n".join([*lines, "", report, "", f"{time.perf_counter() - started:.0f} s; load {_load()}"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--message-bytes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--large", default="10,35,60,100", help="sizes of the large states, MB (empty: none)")
    parser.add_argument("--peer-compression", action="store_true", help="the peer with its checkpoint compression")
    parser.add_argument(
        "--peer-messages",
        default=",".join(PEER_MESSAGES),
        help="what the peer's messages channel holds, one peer side each: langchain (LangChain messages, as "
        "MessagesState keeps them), dict (plain dicts); comma-separated",
    )
    parser.add_argument(
        "--chat-only", action="store_true", help="the chat workload only (no in-flight, no large states)"
    )
    parser.add_argument(
        "--rollback",
        choices=("keyed", "stock"),
        default="keyed",
        help="moto's transaction rollback: keyed (by the items a transaction names, as cheap as DynamoDB's), "
        "or stock (a deep copy of the table per action)",
    )
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the peer logs every offload
    print(
        suite(
            turns=args.turns,
            sessions=0 if args.chat_only else args.sessions,
            message_bytes=args.message_bytes,
            repeats=args.repeats,
            seed=args.seed,
            large_mb=() if args.chat_only else tuple(float(x) for x in args.large.split(",") if x.strip()),
            peer_compression=args.peer_compression,
            peer_messages=tuple(x.strip() for x in args.peer_messages.split(",") if x.strip()),
            rollback=args.rollback,
            log=lambda line: print(line, file=sys.stderr, flush=True),  # progress; the report goes to stdout
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
