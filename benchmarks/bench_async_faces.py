"""Concurrent turns through an async store face: the thread-pool face against the non-blocking one.

    .venv/bin/python benchmarks/bench_async_faces.py [--sessions 1000] [--rounds 3] [--faces offloaded,native]
        [--latency 0.010] [--moto-rollback keyed|stock] [--message-bytes 200] [--no-debug-pass]
        [--long-chat 1000] [--long-message-bytes 1000]

N sessions are seeded with one completed turn each (through the sync store,
8 threads, no latency, not timed). Then N turns start at once, one per
session, on one event loop: each resolves its session by id with
``SessionResolver.aresolve(face, True, AgentInit(session_id=...))``, adds a
user and a model message (about 200 bytes each, distinct per session) and
awaits ``session.asave(...)``. The face is new for every pass, so every turn
reads (nothing cached).

DynamoDB is :class:`genkit_sessions.dynamodb.local.LocalDynamoDB` with moto
in a subprocess (its own GIL) and ``--latency`` of round trip added to every
request by its proxy, outside the proxy's serialisation, so concurrent
requests overlap as on a network. The proxy runs in a helper process
(``--proxy process``, the default), so the process measured runs the face and
nothing else; ``--proxy thread`` puts it on a thread of this process, where it
shares the face's GIL. The proxy counts every request (calls per
turn) and times moto's answer to each: when moto is busy most of the wall
time, moto, not the face, sets the throughput. Stock moto's TransactWriteItems
deep-copies the whole table once per action (``benchmarks/moto_transaction_cost.py``),
about a quarter of a second per save with a thousand sessions, so the default
is ``--moto-rollback keyed``: moto rolls a transaction back by the items it names,
still atomically (``genkit_sessions.dynamodb._local_moto``); ``stock`` measures
moto as it ships. The output says which was used.

Faces (``--faces``, in rotating order over ``--rounds`` rounds, medians reported):

- ``offloaded``: ``DynamoDBSessionStore(table, client, executor=ThreadPoolExecutor(8)).aio``, boto3 on a
  pool of 8 threads, the face every async call went through before the non-blocking one existed;
- ``native``: ``DynamoDBSessionStore(table, client, aio_connections=256).aio``, the same steps driven by
  aiobotocore on the event loop (the ``aio`` extra); skipped when aiobotocore is not installed.

Event-loop health, per face: a probe task sleeps 1 ms in a loop during the
timed pass and records how late it wakes (the largest overshoot is the
longest the loop was blocked in wall time: GIL waits, and the time the
operating system gave the core to moto or the proxy, included); every
callback the loop runs in the timed pass is timed in the loop thread's CPU
(``time.thread_time``), and counted over 5 ms with and without the CPU the
cyclic garbage collector spent inside it; then a second pass over
the same sessions runs in asyncio debug mode with
``loop.slow_callback_duration = 0.005`` and counts the ``asyncio`` logger's
"Executing ... took" records (debug mode slows everything down, so its pass
is not timed). When a tenth of the turns have finished, the debug pass also
counts the objects the collector tracks (a full collection visits each of
them), against the count before the turns started, and times one full
collection.

Long histories (``--long-chat TURNS``, 0 to skip): the concurrent turns above carry two short messages
each, so they never show what a long chat costs the loop. Then each face plays one chat of TURNS
turns (two distinct ~``--long-message-bytes`` messages each, as in ``bench_dynamodb``), one turn at a
time, each turn on a new store (one client shared, as in a server process), so every turn's resume
reads and decodes the whole history from the table, as a turn that lands on another server would;
every callback is timed as above, and the largest (with and without the collector's CPU), the count
over 5 ms and the resume times at the last turns are printed. The program prints tables; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import os
import platform
import random
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from genkit_sessions import AgentInit, Message, SessionResolver
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.dynamodb.local import LocalDynamoDB, placeholder_client
from genkit_sessions.dynamodb.store import AsyncDynamoDBSessionStore

FACES = ("offloaded", "native")
PROBE_INTERVAL = 0.001
SLOW_CALLBACK = 0.005
LAUNCH_CHUNK = 25  # turns started per loop iteration: all 1,000 are running within a few dozen milliseconds

Close = Callable[[], Awaitable[None] | None]


class FaceUnavailable(Exception):
    """The face cannot be built here (its extra is not installed, or the store does not offer it yet)."""


# --- the local DynamoDB, in a process of its own ---------------------------------------------------


def _serve_local_dynamodb(rollback: str, commands: Any) -> None:
    """In a helper process: run a LocalDynamoDB (moto in a further subprocess, the proxy on a thread
    here) and answer ``(method, args)`` commands on ``commands`` until told to stop."""
    with LocalDynamoDB(process=True, latency=0.0, rollback=rollback) as ddb:  # type: ignore[arg-type]
        commands.send(ddb.endpoint_url)
        while True:
            method, value = commands.recv()
            if method == "stop":
                break
            if method == "latency":
                ddb.latency = value
                commands.send(None)
            else:
                commands.send(getattr(ddb, method)())


class DynamoDBElsewhere:
    """A :class:`LocalDynamoDB` whose proxy runs in a helper process, so the process measured runs the
    face and nothing else: the proxy's thread does not share the face's GIL (it did: about 2 ms of
    CPU per turn, and every wait for the GIL showed as a blocked event loop). The same methods the
    benchmark uses (``latency``, ``client``, ``reset_log``, ``operations``, ``forwards``,
    ``proxy_cpu_seconds``, which here is the helper's proxy thread)."""

    def __init__(self, rollback: str) -> None:
        import multiprocessing

        spawn = multiprocessing.get_context("spawn")
        self._commands, theirs = spawn.Pipe()
        self._process = spawn.Process(target=_serve_local_dynamodb, args=(rollback, theirs), daemon=True)
        self._latency = 0.0

    def __enter__(self) -> DynamoDBElsewhere:
        self._process.start()
        if not self._commands.poll(120):
            raise RuntimeError("the local DynamoDB's helper process did not start within 120 s")
        self.endpoint_url: str = self._commands.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, EOFError):
            self._commands.send(("stop", None))
        self._process.join(timeout=60)

    def _ask(self, method: str, value: Any = None) -> Any:
        self._commands.send((method, value))
        return self._commands.recv()

    @property
    def latency(self) -> float:
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._ask("latency", seconds)
        self._latency = seconds

    def client(self, **config_overrides: Any) -> Any:
        return placeholder_client(self.endpoint_url, **config_overrides)

    def reset_log(self) -> None:
        self._ask("reset_log")

    def operations(self) -> list[str]:
        result: list[str] = self._ask("operations")
        return result

    def forwards(self) -> list[Any]:
        result: list[Any] = self._ask("forwards")
        return result

    def proxy_cpu_seconds(self) -> float:
        result: float = self._ask("proxy_cpu_seconds")
        return result


Local = LocalDynamoDB | DynamoDBElsewhere


# --- faces ---------------------------------------------------------------------------------------


STORE_OPTIONS: dict[str, Any] = {}  # --cache-size
COLLECTOR = {"on": True, "freeze": False}  # --collector, --freeze


def _after_start_up() -> None:
    """With ``--freeze``: what a server process can do once started (clients open, modules imported), so a
    full collection visits only what its requests made: collect, then move every object the collector
    tracks into its permanent generation (``gc.freeze``; botocore's service models alone are ~50,000
    objects)."""
    if COLLECTOR["freeze"]:
        import gc

        gc.collect()
        gc.freeze()


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """The cyclic garbage collector disabled (a diagnostic: which slow callbacks are the collector's)."""
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def offloaded_face(ddb: Local, table: str) -> tuple[Any, Close]:
    """The thread-offloaded face: every boto3 call runs on a pool of 8 threads handed to the store."""
    client = ddb.client(retries={"mode": "standard", "total_max_attempts": 6})
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    store = DynamoDBSessionStore(table, client, executor=pool, **STORE_OPTIONS)

    def close() -> None:
        pool.shutdown(wait=True)

    return store.aio, close


def native_face(ddb: Local, table: str) -> tuple[Any, Close]:
    """The non-blocking face: the same store logic on aiobotocore (extra ``aio``)."""
    try:
        import aiobotocore  # type: ignore[import-not-found, unused-ignore]  # noqa: F401  (the `aio` extra)
    except ImportError as exc:
        raise FaceUnavailable(f"aiobotocore is not installed ({exc}); pip install 'genkit-sessions[aio]'") from exc
    client = ddb.client(retries={"mode": "standard", "total_max_attempts": 6})
    try:
        store = DynamoDBSessionStore(table, client, aio_connections=256, **STORE_OPTIONS)
        face = store.aio
    except Exception as exc:
        raise FaceUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(face, AsyncDynamoDBSessionStore):
        raise FaceUnavailable(f"DynamoDBSessionStore(...).aio is {type(face).__name__}, not the native face")

    async def close() -> None:
        for target in (face, store):
            for name in ("aclose", "close"):
                method = getattr(target, name, None)
                if method is not None:
                    result = method()
                    if inspect.isawaitable(result):
                        await result
                    break

    return face, close


MAKERS: dict[str, Callable[[Local, str], tuple[Any, Close]]] = {
    "offloaded": offloaded_face,
    "native": native_face,
}


# --- workload ------------------------------------------------------------------------------------

_VOCABULARY = (
    "the a session turn agent model user reply tool state snapshot branch leaf store table item write read "
    "context tenant message answer question weather city forecast rain sun travel plan budget hotel flight "
    "because which while after before into over under about would could should might their there where"
)
_WORDS = _VOCABULARY.split()


def text(rng: random.Random, label: str, size: int) -> str:
    """About ``size`` characters of prose-like text that starts with ``label`` (so no two sessions share one)."""
    words = [label]
    length = len(label)
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


@dataclass
class Workload:
    sessions: list[str]
    seed_texts: dict[str, tuple[str, str]]
    turn_texts: dict[str, tuple[str, str]]


def workload(count: int, size: int, seed: int) -> Workload:
    rng = random.Random(seed)
    run = uuid.uuid4().hex[:8]
    sessions = [f"bench-{run}-{i:05d}" for i in range(count)]
    seed_texts = {s: (text(rng, f"[{s} seed user]", size), text(rng, f"[{s} seed model]", size)) for s in sessions}
    turn_texts = {s: (text(rng, f"[{s} user]", size), text(rng, f"[{s} model]", size)) for s in sessions}
    return Workload(sessions, seed_texts, turn_texts)


def seed_sessions(ddb: Local, table: str, work: Workload) -> None:
    """One completed turn per session, through the sync store (not timed)."""
    store = DynamoDBSessionStore(table, ddb.client(max_pool_connections=16))

    def one(session_id: str) -> None:
        resolution = SessionResolver.resolve(store, True, AgentInit(session_id=session_id))
        if not resolution.ok:
            raise RuntimeError(f"seeding {session_id}: {resolution.error}")
        user, model = work.seed_texts[session_id]
        resolution.session.add_messages(Message.of_text("user", user), Message.of_text("model", model))
        resolution.session.save(finish_reason="stop")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(one, work.sessions))
    store.close()


async def turn(face: Any, session_id: str, texts: tuple[str, str]) -> float:
    started = time.perf_counter()
    resolution = await SessionResolver.aresolve(face, True, AgentInit(session_id=session_id))
    if not resolution.ok:
        raise RuntimeError(f"{session_id}: {resolution.error}")
    session = resolution.session
    session.add_messages(Message.of_text("user", texts[0]), Message.of_text("model", texts[1]))
    await session.asave(finish_reason="stop")
    return time.perf_counter() - started


# --- one pass ------------------------------------------------------------------------------------


class SlowCallbacks(logging.Handler):
    """Counts asyncio debug mode's "Executing <handle> took 0.012 seconds" records while ``active``."""

    _TOOK = re.compile(r"took (\d+(?:\.\d+)?) seconds")

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.active = False
        self.count = 0
        self.slowest: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not self.active or "Executing" not in message or "coro=<_one_pass()" in message or "_census_task" in message:
            return  # the harness's own steps (starting turns, in debug mode) are not the face's
        self.count += 1
        took = self._TOOK.search(message)
        self.slowest.append((float(took.group(1)) if took else 0.0, message))
        self.slowest.sort(reverse=True)
        del self.slowest[3:]

    @contextlib.contextmanager
    def installed(self) -> Iterator[SlowCallbacks]:
        """Attached to the ``asyncio`` logger, which stops printing meanwhile (debug mode logs a lot)."""
        logger = logging.getLogger("asyncio")
        propagate, level = logger.propagate, logger.level
        logger.addHandler(self)
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.propagate = propagate
            logger.setLevel(level)


class CallbackCPU:
    """Times, in CPU of the loop's thread (``time.thread_time``), every callback the event loop runs
    while installed: how long each one held the loop. A wall-clock probe also counts the time the
    operating system gave the process's core to another process (here moto and the proxy share two
    cores with it), which no code of the face can cause or avoid; this counts only the callback's
    own work, C code with the GIL released included."""

    def __init__(self) -> None:
        self.callbacks = 0
        self.over = 0
        self.worst = 0.0
        self.worst_handle = ""
        self.over_without_gc = 0  # the same count with the cyclic garbage collector's time taken out
        self.worst_without_gc = 0.0
        self.worst_without_gc_handle = ""
        self.gc_seconds = 0.0
        self._gc_started = 0.0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self.gc_seconds += time.thread_time() - self._gc_started

    @contextlib.contextmanager
    def installed(self) -> Iterator[CallbackCPU]:
        import gc

        stock = asyncio.events.Handle._run
        clock = time.thread_time

        def timed_run(handle: asyncio.Handle) -> None:
            started, collected = clock(), self.gc_seconds
            try:
                stock(handle)
            finally:
                spent = clock() - started
                own = spent - (self.gc_seconds - collected)
                self.callbacks += 1
                if spent > self.worst or spent > SLOW_CALLBACK:
                    text = _where(handle)
                    if "_one_pass" not in text:  # the harness starting turns is not the face
                        self.over += spent > SLOW_CALLBACK
                        self.over_without_gc += own > SLOW_CALLBACK
                        if own > self.worst_without_gc:
                            self.worst_without_gc, self.worst_without_gc_handle = own, text[:300]
                        if spent > self.worst:
                            self.worst, self.worst_handle = spent, text[:300]

        gc.callbacks.append(self._on_gc)
        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
        try:
            yield self
        finally:
            asyncio.events.Handle._run = stock  # type: ignore[method-assign]
            gc.callbacks.remove(self._on_gc)


def _where(handle: asyncio.Handle) -> str:
    """A callback, and for a task's step the coroutines it had reached when the step ended."""
    owner = getattr(getattr(handle, "_callback", None), "__self__", None)
    if not isinstance(owner, asyncio.Task):
        return repr(handle)
    positions = []
    coro: Any = owner.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            positions.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return "task step, ended at " + " > ".join(positions) if positions else f"task step of {owner.get_name()}"


@dataclass
class Census:
    """What the cyclic garbage collector tracks with many turns in flight, against the process at rest
    (the debug pass, which is not timed, takes it): a full collection visits every tracked object."""

    at_rest: int
    in_flight: int
    tracked: int
    store_objects: int
    full_collection: float

    @property
    def per_turn(self) -> float:
        return (self.tracked - self.at_rest) / self.in_flight if self.in_flight else 0.0


def take_census(at_rest: int, in_flight: int) -> Census:
    import gc

    objects = gc.get_objects()
    tracked = len(objects)
    ours = sum(1 for o in objects if str(getattr(type(o), "__module__", "")).startswith("genkit_sessions"))
    del objects
    started = time.perf_counter()
    gc.collect()
    return Census(at_rest, in_flight, tracked, ours, time.perf_counter() - started)


async def _census_task(result: Pass, at_rest: int, in_flight: int) -> None:
    """The census as a step of its own, which the slow-callback count leaves out (it is the harness)."""
    result.census = take_census(at_rest, in_flight)


@dataclass
class Pass:
    face: str
    turns_ok: int = 0
    errors: list[str] = field(default_factory=list)
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    moto_seconds: list[float] = field(default_factory=list)
    moto_by_operation: dict[str, list[float]] = field(default_factory=dict)
    probe_worst: float = 0.0
    probe_p99: float = 0.0
    cpu: float = 0.0
    proxy_cpu: float = 0.0
    slow_callbacks: int = 0
    slowest: list[tuple[float, str]] = field(default_factory=list)
    callbacks: int = 0
    cpu_over: int = 0
    cpu_worst: float = 0.0
    cpu_worst_handle: str = ""
    cpu_over_without_gc: int = 0
    cpu_worst_without_gc: float = 0.0
    cpu_worst_without_gc_handle: str = ""
    gc_seconds: float = 0.0
    census: Census | None = None

    @property
    def slow_worst(self) -> float:
        return self.slowest[0][0] if self.slowest else 0.0

    @property
    def turns_per_second(self) -> float:
        return self.turns_ok / self.wall if self.wall else 0.0

    @property
    def moto_busy(self) -> float:
        return sum(self.moto_seconds) / self.wall if self.wall else 0.0


def one_pass(name: str, ddb: Local, table: str, work: Workload, *, debug: bool) -> Pass:
    """One pass on a new event loop (in asyncio debug mode, counting slow callbacks, when ``debug``)."""
    with SlowCallbacks().installed() as handler:
        return asyncio.run(_one_pass(name, ddb, table, work, debug, handler))


async def _one_pass(name: str, ddb: Local, table: str, work: Workload, debug: bool, handler: SlowCallbacks) -> Pass:
    loop = asyncio.get_running_loop()
    result = Pass(name)
    if debug:
        loop.set_debug(True)
        loop.slow_callback_duration = SLOW_CALLBACK
    face, close = MAKERS[name](ddb, table)
    opener = getattr(face, "__aenter__", None)
    if opener is not None:  # as an application does at start-up: open the face's client before serving turns
        await opener()
    _after_start_up()
    overshoots: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await asyncio.sleep(PROBE_INTERVAL)
            overshoots.append(time.perf_counter() - started - PROBE_INTERVAL)

    at_rest = 0
    if debug:
        import gc

        gc.collect()
        at_rest = len(gc.get_objects())
    finished = 0
    census: asyncio.Task[None] | None = None

    async def counted(session_id: str) -> float:
        nonlocal finished, census
        try:
            return await turn(face, session_id, work.turn_texts[session_id])
        finally:
            finished += 1
            if debug and census is None and finished >= len(work.sessions) // 10:
                census = asyncio.create_task(_census_task(result, at_rest, len(work.sessions) - finished))

    ddb.reset_log()
    proxy_before = ddb.proxy_cpu_seconds()
    cpu_before = time.process_time()
    handler.active = debug
    probing = asyncio.create_task(probe())
    await asyncio.sleep(0)
    clocking = CallbackCPU()
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if not debug:
            stack.enter_context(clocking.installed())
        if not COLLECTOR["on"]:
            stack.enter_context(_collector_off())
        try:
            tasks: list[asyncio.Task[float]] = []
            for i in range(0, len(work.sessions), LAUNCH_CHUNK):  # a few at a time: no step of ours blocks the loop
                chunk = work.sessions[i : i + LAUNCH_CHUNK]
                tasks += [asyncio.create_task(counted(s)) for s in chunk]
                await asyncio.sleep(0)
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
            result.wall = time.perf_counter() - started
            if census is not None:
                await census
        finally:
            handler.active = False
            done.set()
            await probing
    closing = close()
    if inspect.isawaitable(closing):
        await closing
    result.callbacks, result.cpu_over = clocking.callbacks, clocking.over
    result.cpu_worst, result.cpu_worst_handle = clocking.worst, clocking.worst_handle
    result.cpu_over_without_gc, result.cpu_worst_without_gc = clocking.over_without_gc, clocking.worst_without_gc
    result.cpu_worst_without_gc_handle = clocking.worst_without_gc_handle
    result.gc_seconds = clocking.gc_seconds
    result.cpu = time.process_time() - cpu_before
    result.proxy_cpu = ddb.proxy_cpu_seconds() - proxy_before
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            result.errors.append(f"{type(outcome).__name__}: {outcome}")
        else:
            result.latencies.append(outcome)
    result.turns_ok = len(result.latencies)
    result.calls = Counter(ddb.operations())
    for forward in ddb.forwards():
        result.moto_seconds.append(forward.seconds)
        result.moto_by_operation.setdefault(forward.operation, []).append(forward.seconds)
    result.probe_worst = max(overshoots, default=0.0)
    result.probe_p99 = _quantile(overshoots, 0.99)
    result.slow_callbacks = handler.count
    result.slowest = list(handler.slowest)
    return result


# --- a long chat, one turn at a time -------------------------------------------------------------


@dataclass
class LongChat:
    face: str
    turns: int
    clocking: CallbackCPU = field(default_factory=CallbackCPU)
    last_resumes: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def long_chat(name: str, ddb: Local, turns: int, size: int, seed: int) -> LongChat:
    """One chat of ``turns`` turns through face ``name``, every callback timed (module docstring)."""
    table = f"long-{uuid.uuid4().hex[:10]}"
    admin = ddb.client()
    create_table(admin, table)
    ddb.latency = 0.0
    try:
        return asyncio.run(_long_chat(name, ddb, table, turns, size, seed))
    finally:
        admin.delete_table(TableName=table)


@contextlib.asynccontextmanager
async def _cold_faces(name: str, ddb: Local, table: str) -> Any:
    """A maker of faces on new stores (nothing cached: each turn reads its history from the table) that
    share one client, as the stores of one server process would."""
    client = ddb.client(retries={"mode": "standard", "total_max_attempts": 6})
    if name == "offloaded":
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            yield lambda: DynamoDBSessionStore(table, client, executor=pool).aio
        return
    from aiobotocore.config import AioConfig  # type: ignore[import-not-found, import-untyped, unused-ignore]
    from aiobotocore.session import get_session  # type: ignore[import-not-found, import-untyped, unused-ignore]

    config = AioConfig(retries={"mode": "standard", "total_max_attempts": 6})
    opening = get_session().create_client(
        "dynamodb", region_name="us-east-1", endpoint_url=client.meta.endpoint_url, config=config
    )
    async with opening as shared:
        yield lambda: DynamoDBSessionStore(table, client, aio_client=shared).aio


async def _long_chat(name: str, ddb: Local, table: str, turns: int, size: int, seed: int) -> LongChat:
    rng = random.Random(seed)
    result = LongChat(name, turns)
    session_id = f"long-{uuid.uuid4().hex[:8]}"
    clocking = result.clocking
    async with _cold_faces(name, ddb, table) as cold_face:
        _after_start_up()
        with clocking.installed():
            for number in range(1, turns + 1):
                face = cold_face()
                started = time.perf_counter()
                resolution = await SessionResolver.aresolve(face, True, AgentInit(session_id=session_id))
                resumed = time.perf_counter() - started
                if not resolution.ok:
                    result.errors.append(f"turn {number}: {resolution.error}")
                    break
                if number > turns - 10:
                    result.last_resumes.append(resumed)
                session = resolution.session
                session.add_messages(
                    Message.of_text("user", text(rng, f"[{session_id} user {number}]", size)),
                    Message.of_text("model", text(rng, f"[{session_id} model {number}]", size)),
                )
                await session.asave(finish_reason="stop")
    return result


def summarise_long(chats: list[LongChat], size: int) -> None:
    if not chats:
        return
    turns = chats[0].turns
    print(
        f"one chat of {turns} turns (two ~{size} B messages each), a turn at a time, "
        "each on a new store (every resume cold)"
    )
    rows: list[tuple[str, Callable[[LongChat], str]]] = [
        ("callbacks over 5 ms of the loop thread's CPU", lambda c: f"{c.clocking.over}"),
        ("largest CPU of one callback (ms)", lambda c: f"{c.clocking.worst * 1e3:.2f}"),
        ("  over 5 ms, the collector's CPU taken out", lambda c: f"{c.clocking.over_without_gc}"),
        ("  largest, the collector's CPU taken out (ms)", lambda c: f"{c.clocking.worst_without_gc * 1e3:.2f}"),
        (f"resume at turns {turns - 9}-{turns}, median (ms)", lambda c: f"{_median(c.last_resumes) * 1e3:.1f}"),
        ("failed turns", lambda c: f"{len(c.errors)}"),
    ]
    print_table(["long chat", *(c.face for c in chats)], [[label, *(fmt(c) for c in chats)] for label, fmt in rows])
    for chat in chats:
        worst = chat.clocking
        print(f"{chat.face}: most CPU in one callback, {worst.worst * 1e3:.1f} ms: {_shorten(worst.worst_handle)}")
        print(
            f"  the collector's taken out, {chat.clocking.worst_without_gc * 1e3:.1f} ms: "
            f"{_shorten(chat.clocking.worst_without_gc_handle)}"
        )
        for error in chat.errors[:3]:
            print(f"  FAILED {error}")


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- rounds and the table ------------------------------------------------------------------------


@dataclass
class Run:
    face: str
    round: int
    timed: Pass
    debug: Pass | None


def run_face(name: str, round_no: int, ddb: Local, args: argparse.Namespace, latency: float) -> Run:
    work = workload(args.sessions, args.message_bytes, args.seed + round_no)
    table = f"bench-{uuid.uuid4().hex[:10]}"
    admin = ddb.client()
    create_table(admin, table)
    try:
        ddb.latency = 0.0
        seeding = time.perf_counter()
        seed_sessions(ddb, table, work)
        seeded = time.perf_counter() - seeding
        ddb.latency = latency
        timed = one_pass(name, ddb, table, work, debug=False)
        debug = one_pass(name, ddb, table, work, debug=True) if args.debug_pass else None
    finally:
        ddb.latency = 0.0
        admin.delete_table(TableName=table)
    _print_run(round_no, timed, debug, seeded)
    return Run(name, round_no, timed, debug)


def _print_run(round_no: int, timed: Pass, debug: Pass | None, seeded: float) -> None:
    failed = f", {len(timed.errors)} FAILED (first: {timed.errors[0]})" if timed.errors else ""
    line = (
        f"round {round_no + 1} {timed.face:<10} seeded in {seeded:5.1f} s; "
        f"{timed.turns_per_second:7.1f} turns/s, median {statistics.median(timed.latencies or [0]) * 1e3:7.1f} ms, "
        f"loop blocked <= {timed.probe_worst * 1e3:6.1f} ms (wall), "
        f"a callback's CPU <= {timed.cpu_worst * 1e3:5.1f} ms ({timed.cpu_over} over 5 ms), "
        f"moto busy {timed.moto_busy:4.0%}{failed}"
    )
    if debug is not None:
        line += f"; debug pass: {debug.slow_callbacks} slow callbacks"
        if debug.errors:
            line += f", {len(debug.errors)} FAILED"
    print(line, flush=True)


def print_table(header: list[str], table: list[list[str]]) -> None:
    """A boxed table: labels left, figures right."""
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    print(line)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print(line)
    for row in table:
        cells = [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
        print("| " + " | ".join(cells) + " |")
    print(line)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarise(runs: list[Run], faces: list[str], sessions: int) -> None:
    rows: list[tuple[str, Callable[[Run], float], str]] = [
        ("turns/s", lambda r: r.timed.turns_per_second, "{:.1f}"),
        ("turn latency, median (ms)", lambda r: _median(r.timed.latencies) * 1e3, "{:.1f}"),
        ("turn latency, p99 (ms)", lambda r: _quantile(r.timed.latencies, 0.99) * 1e3, "{:.1f}"),
        ("failed turns", lambda r: float(len(r.timed.errors)), "{:.0f}"),
        ("DynamoDB calls per turn (at the proxy)", lambda r: sum(r.timed.calls.values()) / sessions, "{:.2f}"),
        ("moto time per request, mean (ms)", lambda r: _mean(r.timed.moto_seconds) * 1e3, "{:.2f}"),
        ("moto busy, share of the wall time", lambda r: r.timed.moto_busy * 100, "{:.0f}%"),
        ("loop probe: largest overshoot (ms)", lambda r: r.timed.probe_worst * 1e3, "{:.1f}"),
        ("loop probe: p99 overshoot (ms)", lambda r: r.timed.probe_p99 * 1e3, "{:.2f}"),
        ("callbacks over 5 ms of the loop thread's CPU", lambda r: float(r.timed.cpu_over), "{:.0f}"),
        ("largest CPU of one callback (ms)", lambda r: r.timed.cpu_worst * 1e3, "{:.2f}"),
        ("  over 5 ms, the collector's CPU taken out", lambda r: float(r.timed.cpu_over_without_gc), "{:.0f}"),
        ("  largest, the collector's CPU taken out (ms)", lambda r: r.timed.cpu_worst_without_gc * 1e3, "{:.2f}"),
        ("cyclic garbage collector, CPU per turn (ms)", lambda r: r.timed.gc_seconds / sessions * 1e3, "{:.2f}"),
        ("CPU of this process per turn (ms)", lambda r: r.timed.cpu / sessions * 1e3, "{:.2f}"),
        ("the proxy's thread, CPU per turn (ms)", lambda r: r.timed.proxy_cpu / sessions * 1e3, "{:.2f}"),
    ]
    if any(r.debug is not None for r in runs):
        rows += [
            (
                "debug pass: slow callbacks (> 5 ms)",
                lambda r: float(r.debug.slow_callbacks if r.debug else 0),
                "{:.0f}",
            ),
            ("debug pass: slowest callback (ms)", lambda r: (r.debug.slow_worst if r.debug else 0) * 1e3, "{:.1f}"),
        ]
    by_face = {f: [r for r in runs if r.face == f] for f in faces}
    ratio = "native/offloaded" if {"native", "offloaded"} <= set(by_face) else None
    header = [f"medians of {max(len(v) for v in by_face.values())} rounds", *faces] + ([ratio] if ratio else [])
    table: list[list[str]] = []
    for label, metric, fmt in rows:
        medians = {f: _median([metric(r) for r in by_face[f]]) for f in faces}
        cells = [label, *(fmt.format(medians[f]) for f in faces)]
        if ratio:
            cells.append(f"{medians['native'] / medians['offloaded']:.2f}x" if medians["offloaded"] else "-")
        table.append(cells)
    print_table(header, table)
    for f in faces:
        calls: Counter[str] = Counter()
        moto: dict[str, list[float]] = {}
        for r in by_face[f]:
            calls.update(r.timed.calls)
            for operation, seconds in r.timed.moto_by_operation.items():
                moto.setdefault(operation, []).extend(seconds)
        per_turn = ", ".join(
            f"{op} {n / (sessions * len(by_face[f])):.2f} ({_mean(moto.get(op, [])) * 1e3:.1f} ms in moto)"
            for op, n in calls.most_common()
        )
        print(f"{f}: calls per turn by operation: {per_turn}")
        slowest = sorted((s for r in by_face[f] if r.debug for s in r.debug.slowest), reverse=True)[:3]
        for took, message in slowest:
            print(f"  slow callback, debug pass, {took * 1e3:.0f} ms: {_shorten(message)}")
        censuses = [r.debug.census for r in by_face[f] if r.debug and r.debug.census]
        if censuses:
            c = sorted(censuses, key=lambda c: c.full_collection)[len(censuses) // 2]
            print(
                f"  the collector, debug pass (median of {len(censuses)}): {c.tracked:,} objects tracked with "
                f"{c.in_flight:,} turns in flight, {c.at_rest:,} at rest ({c.per_turn:.0f} more per turn in flight; "
                f"{c.store_objects:,} of all are genkit_sessions objects); one full collection of them "
                f"{c.full_collection * 1e3:.0f} ms"
            )
        worst = max(by_face[f], key=lambda r: r.timed.cpu_worst).timed
        if worst.cpu_worst_handle:
            print(f"  most CPU in one callback, {worst.cpu_worst * 1e3:.1f} ms: {_shorten(worst.cpu_worst_handle)}")
        worst = max(by_face[f], key=lambda r: r.timed.cpu_worst_without_gc).timed
        if worst.cpu_worst_without_gc_handle:
            print(
                f"  most CPU in one callback, the collector's taken out, {worst.cpu_worst_without_gc * 1e3:.1f} ms: "
                f"{_shorten(worst.cpu_worst_without_gc_handle)}"
            )


def _shorten(message: str, limit: int = 240) -> str:
    message = re.sub(r" at 0x[0-9a-f]+", "", message.replace("\n", " "))
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _raise_open_files_limit(needed: int) -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < needed:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else min(needed, hard), hard)
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000, help="concurrent turns, one per session (1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs every face once, in rotating order")
    parser.add_argument("--faces", default=",".join(FACES), help="comma-separated: offloaded,native")
    parser.add_argument("--latency", type=float, default=0.010, help="round-trip delay per request, seconds (0.010)")
    parser.add_argument("--message-bytes", type=int, default=200, help="size of each message (200)")
    parser.add_argument(
        "--moto-rollback",
        choices=("keyed", "stock"),
        default="keyed",
        help="keyed: transactions roll back by the items they name (fast, atomic); stock: moto's copy of the table",
    )
    parser.add_argument(
        "--debug-pass",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="count slow callbacks in a second pass in asyncio debug mode (default: on)",
    )
    parser.add_argument(
        "--cache-size", type=int, default=None, help="the store's cache_size (states and heads it keeps; default 1024)"
    )
    parser.add_argument(
        "--proxy",
        choices=("process", "thread"),
        default="process",
        help="process: the local DynamoDB's proxy in a helper process (default); thread: on a thread of this "
        "process, sharing the measured face's GIL",
    )
    parser.add_argument(
        "--collector",
        choices=("on", "off"),
        default="on",
        help="off: the cyclic garbage collector disabled during each pass, a diagnostic that shows which "
        "slow callbacks are the collector's (default: on, as a process runs)",
    )
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="gc.freeze() once each face is open, as a server process can after start-up (default: off)",
    )
    parser.add_argument(
        "--long-chat", type=int, default=1000, help="turns of the long chat each face plays, 0 to skip (1000)"
    )
    parser.add_argument("--long-message-bytes", type=int, default=1000, help="size of each long-chat message (1000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.cache_size is not None:
        STORE_OPTIONS["cache_size"] = args.cache_size
    COLLECTOR["on"] = args.collector == "on"
    COLLECTOR["freeze"] = args.freeze
    faces = [f.strip() for f in args.faces.split(",") if f.strip()]
    unknown = [f for f in faces if f not in MAKERS]
    if unknown or not faces:
        parser.error(f"--faces takes some of {', '.join(FACES)}; got {args.faces!r}")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"  # placeholders: nothing real goes to the local endpoint
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    _raise_open_files_limit(4 * args.sessions + 1024)
    logging.getLogger("botocore").setLevel(logging.ERROR)

    print(
        f"{args.sessions} concurrent turns on {args.sessions} sessions, two ~{args.message_bytes} B messages each; "
        f"{args.rounds} rounds; latency {args.latency * 1e3:.1f} ms per request"
    )
    print(
        f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min) at the start"
    )
    print(
        f"DynamoDB: LocalDynamoDB(process=True, latency={args.latency}, rollback={args.moto_rollback!r}): "
        f"moto in a subprocess, {args.moto_rollback} transaction rollback, the proxy "
        + ("in a helper process" if args.proxy == "process" else "on a thread of this process")
        + (" (moto deep-copies the table per transaction action)" if args.moto_rollback == "stock" else "")
    )
    print(f"store options: {STORE_OPTIONS or 'defaults (cache_size 1024)'}")
    if args.freeze:
        print("gc.freeze() once each face is open (a server process's start-up tuning)")
    if args.collector == "off":
        print("the cyclic garbage collector is disabled during each pass (a diagnostic, not how a process runs)")

    local: Local = (
        DynamoDBElsewhere(args.moto_rollback)
        if args.proxy == "process"
        else LocalDynamoDB(process=True, latency=0.0, rollback=args.moto_rollback)
    )
    with local as ddb:
        available: list[str] = []
        for name in faces:
            try:
                asyncio.run(_try_face(name, ddb))
                available.append(name)
            except FaceUnavailable as exc:
                print(f"{name} face not available: {exc}")
        if not available:
            print("no face to measure")
            return 1
        print()
        runs: list[Run] = []
        for round_no in range(args.rounds):
            order = available[round_no % len(available) :] + available[: round_no % len(available)]
            for name in order:
                runs.append(run_face(name, round_no, ddb, args, args.latency))
        chats: list[LongChat] = []
        if args.long_chat > 0:
            for name in available:
                chats.append(long_chat(name, ddb, args.long_chat, args.long_message_bytes, args.seed))
                print(f"long chat, {name}: done, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if runs:
        print()
        summarise(runs, available, args.sessions)
    if chats:
        print()
        summarise_long(chats, args.long_message_bytes)
    if not runs:
        return 0
    busy = _median([r.timed.moto_busy for r in runs])
    print()
    if busy >= 0.8:
        print(
            f"moto was busy {busy:.0%} of the wall time (median): moto, one request at a time, sets the pace, "
            "so turns/s compares the emulator, not the faces"
            + ("; try --moto-rollback keyed" if args.moto_rollback == "stock" else "")
        )
    else:
        print(f"moto was busy {busy:.0%} of the wall time (median): the faces, not moto, set the pace")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min) at the end")
    return 0


async def _try_face(name: str, ddb: Local) -> None:
    """Build the face (on a running loop, as the passes do) and close it again; FaceUnavailable when it cannot."""
    table = f"probe-{uuid.uuid4().hex[:8]}"
    admin = ddb.client()
    create_table(admin, table)
    try:
        _face, close = MAKERS[name](ddb, table)
        closing = close()
        if inspect.isawaitable(closing):
            await closing
    finally:
        admin.delete_table(TableName=table)


if __name__ == "__main__":
    raise SystemExit(main())
