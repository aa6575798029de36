"""DynamoDBSessionStore against langgraph-checkpoint-aws's DynamoDBSaver, side by side on one moto server.

Run it from the bench environment (the peer lives in the ``bench`` extra)::

    .venv-bench/bin/python benchmarks/bench_dynamodb.py [--turns 200] [--message-bytes 1000]

Both stores save the same conversation: each turn resumes the session from a
cold store (a new process, nothing cached), appends a user and a model message
of about 1 KB of prose-like text, and saves the turn's end. The stores take
turns (in rotating order), so drift in the machine's speed falls on all alike.
Every DynamoDB call of both clients is counted through botocore's event hooks,
with the bytes of the items it writes. Then each store is asked to hold one
ever larger state, without S3. The program prints one table; it asserts
nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
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
from genkit_sessions.dynamodb.embedded import free_port, local_client
from genkit_sessions.dynamodb.store import item_size

WRITE_OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


# moto's TransactWriteItems deep-copies the whole table once per action before applying it (its
# rollback snapshot), so a transaction's cost in moto grows with the table; DynamoDB's does not.
# ``--moto-rollback shallow`` makes that snapshot a shallow copy, to show what the emulator adds.
_SHALLOW_ROLLBACK = """
import copy as _copy, sys
import moto.dynamodb.models as _models
from moto.dynamodb.models.table import Table as _Table
class _Copy:
    def __getattr__(self, name): return getattr(_copy, name)
    @staticmethod
    def deepcopy(value, memo=None):
        return _copy.copy(value) if isinstance(value, _Table) else _copy.deepcopy(value, memo)
_models.copy = _Copy()
from moto.server import main
main(sys.argv[1:])
"""


@contextmanager
def moto_server_process(rollback: str = "stock") -> Iterator[str]:
    """A moto server in its own process on a free 127.0.0.1 port (so it does not share this process's GIL)."""
    import subprocess
    import urllib.request

    port = free_port()
    if rollback == "shallow":
        command = [sys.executable, "-c", _SHALLOW_ROLLBACK, "-H", "127.0.0.1", "-p", str(port)]
    else:
        command = [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


# --- text that compresses like prose ---------------------------------------------------------


class Prose:
    """Pseudo-English: a 6,000-word vocabulary of syllable words drawn with Zipf frequencies."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ea", "ou")]
        words = {"".join(rng.choices(syllables, k=rng.choice((1, 1, 2, 2, 2, 3, 3, 4)))) for _ in range(9000)}
        self.words = sorted(words)[:6000]
        rng.shuffle(self.words)
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.rng = rng

    def text(self, size: int) -> str:
        out: list[str] = []
        length = 0
        while length < size:
            sentence = self.rng.choices(self.words, weights=self.weights, k=self.rng.randint(6, 18))
            line = " ".join(sentence).capitalize() + self.rng.choice((". ", ". ", ", ", "? ", "! "))
            out.append(line)
            length += len(line)
        return "".join(out)[:size]


# --- counting calls and bytes ----------------------------------------------------------------


@dataclass
class Meter:
    """Calls and bytes written, per operation, through a client's event hooks."""

    calls: Counter[str] = field(default_factory=Counter)
    bytes_written: int = 0

    s3_calls: Counter[str] = field(default_factory=Counter)
    s3_bytes: int = 0

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.dynamodb", self._on_call)

    def attach_s3(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.s3", self._on_s3_call)

    def _on_s3_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.s3_calls[model.name] += 1
        body = params.get("Body")
        if isinstance(body, (bytes, bytearray, str)):
            self.s3_bytes += len(body)

    def reset(self) -> None:
        self.calls.clear()
        self.bytes_written = 0

    def _on_call(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        self.bytes_written += written_bytes(model.name, params)

    @contextmanager
    def measure(self) -> Iterator[Counter[str]]:
        before_calls, before_bytes, before_s3 = Counter(self.calls), self.bytes_written, self.s3_bytes
        before_s3_calls = sum(self.s3_calls.values())
        result: Counter[str] = Counter()
        yield result
        result.update(self.calls - before_calls)
        result["__bytes__"] = self.bytes_written - before_bytes + self.s3_bytes - before_s3
        result["__s3_calls__"] = sum(self.s3_calls.values()) - before_s3_calls


def _values_size(values: dict[str, Any]) -> int:
    return sum(item_size({"v": v}) - 1 for v in values.values())


def written_bytes(operation: str, params: dict[str, Any]) -> int:
    """Bytes of the items (or updated values) a write request sends."""
    if operation == "PutItem":
        return item_size(params["Item"])
    if operation == "UpdateItem":
        return item_size(params["Key"]) + _values_size(params.get("ExpressionAttributeValues", {}))
    if operation == "BatchWriteItem":
        return sum(
            item_size(r["PutRequest"]["Item"])
            for requests in params["RequestItems"].values()
            for r in requests
            if "PutRequest" in r
        )
    if operation == "TransactWriteItems":
        total = 0
        for action in params["TransactItems"]:
            if "Put" in action:
                total += item_size(action["Put"]["Item"])
            elif "Update" in action:
                update = action["Update"]
                total += item_size(update["Key"]) + _values_size(update.get("ExpressionAttributeValues", {}))
        return total
    return 0


def _calls(measured: Counter[str]) -> int:
    return sum(v for k, v in measured.items() if not k.startswith("__"))


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1000


# --- the two stores ---------------------------------------------------------------------------


@dataclass
class Run:
    """What one store did over the conversation."""

    name: str
    bytes_per_turn: list[int] = field(default_factory=list)
    s3_calls_per_turn: list[int] = field(default_factory=list)
    resume_s3_calls: list[int] = field(default_factory=list)
    save_s3_calls: list[int] = field(default_factory=list)
    resume_calls: list[int] = field(default_factory=list)
    save_calls: list[int] = field(default_factory=list)
    resume_ms: list[float] = field(default_factory=list)
    save_ms: list[float] = field(default_factory=list)
    largest_ok: int = 0
    first_failure: str = ""


class Ours:
    """Our store's side of the conversation: one turn at a time, each on a cold store."""

    def __init__(self, endpoint: str, message_bytes: int, seed: int) -> None:
        self.client = local_client(endpoint)
        self.meter = Meter()
        self.meter.attach(self.client)
        self.table = f"genkit-{uuid.uuid4().hex[:8]}"
        create_table(self.client, self.table)
        self.run = Run("genkit_sessions DynamoDBSessionStore")
        self.prose = Prose(seed)
        self.message_bytes = message_bytes

    def turn(self, turn: int) -> None:
        run, meter, session_id = self.run, self.meter, "chat-1"
        store = DynamoDBSessionStore(self.table, self.client)  # a cold process per turn: nothing cached
        with meter.measure() as resume:
            leaf, ms = _timed(lambda s=store: s.get_snapshot(session_id=session_id))
        run.resume_ms.append(ms)
        run.resume_calls.append(_calls(resume))
        base = leaf.state if leaf is not None and leaf.state is not None else SessionState(session_id=session_id)
        added = (
            Message.of_text("user", self.prose.text(self.message_bytes)),
            Message.of_text("model", self.prose.text(self.message_bytes)),
        )
        state = attrs.evolve(base, messages=base.message_list + added)
        snapshot_id = str(uuid.uuid4())
        parent_id = leaf.snapshot_id if leaf is not None else None

        def save(
            s: DynamoDBSessionStore = store, i: str = snapshot_id, p: str | None = parent_id, st: Any = state
        ) -> Any:
            return s.save_snapshot(i, lambda _: SessionSnapshot(snapshot_id=i, parent_id=p, state=st))

        with meter.measure() as saved:
            _, ms = _timed(save)
        run.save_ms.append(ms)
        run.save_calls.append(_calls(saved))
        run.bytes_per_turn.append(resume["__bytes__"] + saved["__bytes__"])


def largest_ours(endpoint: str, sizes: list[int], seed: int) -> tuple[int, str]:
    client = local_client(endpoint)
    table = f"genkit-big-{uuid.uuid4().hex[:8]}"
    create_table(client, table)
    store = DynamoDBSessionStore(table, client)
    prose = Prose(seed + 1)
    largest = 0
    for size in sizes:
        state = SessionState(
            session_id=f"big-{size}",
            messages=tuple(Message.of_text("user", prose.text(100_000)) for _ in range(max(1, size // 100_000))),
        )
        snapshot_id = f"big-{size}"
        try:
            store.save_snapshot(snapshot_id, lambda _, i=snapshot_id, s=state: SessionSnapshot(snapshot_id=i, state=s))
            back = DynamoDBSessionStore(table, client).get_snapshot(snapshot_id=snapshot_id)
            if back is None or back.state != state:
                return largest, f"{_mb(size)}: read back differs"
        except Exception as exc:  # report where it stops
            return largest, f"{_mb(size)}: {_reason(exc)}"
        largest = size
    return largest, ""


class Peer:
    """DynamoDBSaver's side of the same conversation, one turn at a time, each on a cold saver."""

    def __init__(self, endpoint: str, message_bytes: int, seed: int, compress: bool) -> None:
        self.endpoint = endpoint
        self.table = f"peer-{uuid.uuid4().hex[:8]}"
        _create_peer_table(endpoint, self.table)
        self.bucket = f"peer-offload-{uuid.uuid4().hex[:8]}"
        local_s3(endpoint).create_bucket(Bucket=self.bucket)
        self.meter = Meter()
        self.run = Run("DynamoDBSaver" + (" + compression" if compress else " (defaults)") + " + S3 offload")
        self.prose = Prose(seed)
        self.message_bytes = message_bytes
        self.compress = compress

    def turn(self, turn: int) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6
        from langgraph_checkpoint_aws import DynamoDBSaver

        run, meter = self.run, self.meter
        thread = {"configurable": {"thread_id": "chat-1", "checkpoint_ns": ""}}
        offload = {"bucket_name": self.bucket, "endpoint_url": self.endpoint}  # its docs: over 350 KB goes to S3
        cold = DynamoDBSaver(
            table_name=self.table,
            region_name="us-east-1",
            endpoint_url=self.endpoint,
            enable_checkpoint_compression=self.compress,
            s3_offload_config=offload,  # type: ignore[arg-type]
        )
        meter.attach(cold.client)
        meter.attach_s3(cold.storage.s3_client)
        with meter.measure() as resume:
            latest, ms = _timed(lambda c=cold: c.get_tuple(thread))
        run.resume_ms.append(ms)
        run.resume_calls.append(_calls(resume))
        messages = list(latest.checkpoint["channel_values"].get("messages", [])) if latest else []
        messages += [
            {"role": "user", "content": self.prose.text(self.message_bytes)},
            {"role": "model", "content": self.prose.text(self.message_bytes)},
        ]
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=turn))
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": turn + 1}
        config = dict(latest.config) if latest else thread

        def put(c: Any = cold, cfg: Any = config, cp: Any = checkpoint, t: int = turn) -> Any:
            return c.put(cfg, cp, {"source": "loop", "step": t}, {"messages": t + 1})

        with meter.measure() as saved:
            _, ms = _timed(put)
        run.save_ms.append(ms)
        run.save_calls.append(_calls(saved))
        run.bytes_per_turn.append(resume["__bytes__"] + saved["__bytes__"])
        run.s3_calls_per_turn.append(resume["__s3_calls__"] + saved["__s3_calls__"])
        run.resume_s3_calls.append(resume["__s3_calls__"])
        run.save_s3_calls.append(saved["__s3_calls__"])


def converse(sides: list[Ours | Peer], turns: int) -> list[Run]:
    """Every side plays the same conversation, turn by turn in rotating order, so a slower or faster
    stretch of the machine falls on all of them alike."""
    for turn in range(turns):
        shift = turn % len(sides)
        for side in sides[shift:] + sides[:shift]:
            side.turn(turn)
    return [side.run for side in sides]


def local_s3(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def largest_peer(endpoint: str, sizes: list[int], seed: int, compress: bool) -> tuple[int, str]:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph_checkpoint_aws import DynamoDBSaver

    table = f"peer-big-{uuid.uuid4().hex[:8]}"
    _create_peer_table(endpoint, table)
    saver = DynamoDBSaver(
        table_name=table, region_name="us-east-1", endpoint_url=endpoint, enable_checkpoint_compression=compress
    )
    prose = Prose(seed + 1)
    largest = 0
    for size in sizes:
        messages = [{"role": "user", "content": prose.text(100_000)} for _ in range(max(1, size // 100_000))]
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": messages}
        config = {"configurable": {"thread_id": f"big-{size}", "checkpoint_ns": ""}}
        try:
            saver.put(config, checkpoint, {}, {})
            back = saver.get_tuple(config)
            if back is None or back.checkpoint["channel_values"]["messages"] != messages:
                return largest, f"{_mb(size)}: read back differs"
        except Exception as exc:  # report where it stops
            return largest, f"{_mb(size)}: {_reason(exc)}"
        largest = size
    return largest, ""


def _reason(exc: Exception) -> str:
    text = str(exc)
    if "Item size has exceeded" in text:
        return "item over DynamoDB's 400 KB limit"
    return f"{type(exc).__name__}: {text[:60]}"


def _create_peer_table(endpoint: str, table: str) -> None:
    client = local_client(endpoint)
    client.create_table(
        TableName=table,
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )


# --- the table ---------------------------------------------------------------------------------


def _mb(size: int) -> str:
    return f"{size / 1_000_000:g} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def _mean(values: list[int], start: int, end: int) -> float:
    window = values[start:end]
    return statistics.mean(window) if window else 0.0


def _with_s3(run: Run) -> str:
    resume = [c + s for c, s in zip(run.resume_calls, run.resume_s3_calls or [0] * len(run.resume_calls), strict=True)]
    save = [c + s for c, s in zip(run.save_calls, run.save_s3_calls or [0] * len(run.save_calls), strict=True)]
    return f"{statistics.mean(resume):.2f} / {statistics.mean(save):.2f}"


def print_table(runs: list[Run], turns: int) -> None:
    ours, peer = runs[0], runs[1]
    rows: list[tuple[str, ...]] = []
    header = ("measure", *(r.name for r in runs))
    span = min(50, turns)

    def row(label: str, fn: Callable[[Run], str]) -> None:
        rows.append((label, *(fn(r) for r in runs)))

    row(f"bytes written per turn, mean of {turns}", lambda r: f"{statistics.mean(r.bytes_per_turn):,.0f} B")
    row(f"  turns 1-{span}", lambda r: f"{_mean(r.bytes_per_turn, 0, span):,.0f} B")
    row(f"  turns {turns - span + 1}-{turns}", lambda r: f"{_mean(r.bytes_per_turn, turns - span, turns):,.0f} B")
    row(
        "  growth (late / early)",
        lambda r: f"{_mean(r.bytes_per_turn, turns - span, turns) / max(1.0, _mean(r.bytes_per_turn, 0, span)):.2f}x",
    )
    row(
        "  share of the peer (defaults + S3)",
        lambda r: f"{statistics.mean(r.bytes_per_turn) / statistics.mean(peer.bytes_per_turn):.2%}",
    )
    row(
        "DynamoDB calls per resume, mean / max",
        lambda r: f"{statistics.mean(r.resume_calls):.2f} / {max(r.resume_calls)}",
    )
    row(
        "DynamoDB calls per turn-end save, mean / max",
        lambda r: f"{statistics.mean(r.save_calls):.2f} / {max(r.save_calls)}",
    )
    row("  with S3 calls, per resume / per save", lambda r: _with_s3(r))
    row("resume latency, median", lambda r: f"{statistics.median(r.resume_ms):.2f} ms")
    row("save latency, median", lambda r: f"{statistics.median(r.save_ms):.2f} ms")
    row("largest state stored without S3", lambda r: _mb(r.largest_ok) if r.largest_ok else "none")
    row("  stops at", lambda r: r.first_failure or "did not stop (largest size tried)")
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(line)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print(line)
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    print(line)
    del ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--message-bytes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--moto-rollback",
        choices=("stock", "shallow"),
        default="stock",
        help="stock moto, or moto whose transactions do not deep-copy the whole table per action",
    )
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the peer logs every offload and every refused item
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ.setdefault(name, "testing")  # moto accepts any credentials; the peer insists on some
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    sizes = [100_000, 250_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000]
    with moto_server_process(args.moto_rollback) as endpoint:
        print(
            f"moto server ({args.moto_rollback} transaction rollback) at {endpoint}; "
            f"{args.turns} turns of two ~{args.message_bytes} B messages each\n"
        )
        sides: list[Ours | Peer] = [
            Ours(endpoint, args.message_bytes, args.seed),
            Peer(endpoint, args.message_bytes, args.seed, compress=False),
            Peer(endpoint, args.message_bytes, args.seed, compress=True),
        ]
        runs = converse(sides, args.turns)
        runs[0].largest_ok, runs[0].first_failure = largest_ours(endpoint, sizes, args.seed)
        for run, compress in ((runs[1], False), (runs[2], True)):
            run.largest_ok, run.first_failure = largest_peer(endpoint, sizes, args.seed, compress)
    print_table(runs, args.turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
