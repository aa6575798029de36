"""One in-memory turn, ours against every store a user would pick instead, in one run.

Run ``PYTHONPATH=. python benchmarks/bench_peers.py`` (``--quick`` for a short run). The workload is the
same for every store: resume a session by id, append a user message and a model message, save; and the
lookup alone (resume a session by id). Each store runs in a worker process of its own, started with the
Python of the environment that has it installed (``--python PEER=PATH``; by default this interpreter),
so the peers never share one environment. For each configuration every store is filled in
``--processes`` fresh workers (3 by default), one after another; each set of workers is asked for
batches of timed calls in rotating order, round after round, so a load change on the machine hits
every store alike; the table shows each store's median over all its batches in all its processes and
its ratio to ours.

Why several processes: on this kind of machine (a virtual machine of 2 cores) one process runs the
same code at one of two speeds, about a factor of two apart, and mostly keeps it for its life. The
same ``Session.add_messages`` (no store, no I/O) took 12 µs in one process and 6.8 µs in the next,
every batch; pinning the workers to one core does not remove it. With one worker per store for the
whole run, each row was decided by which store's process drew the slow speed. Several fresh
processes per store sample that draw, and the median over their batches is the store's typical cost.

Stores (the peer's fastest documented configuration where it has one):

- ``ours``: ``SessionResolver.resolve`` + ``Session.add_messages`` + ``Session.save`` on an
  ``InMemorySessionStore``; lookup is the resolve.
- ``genkit``: Genkit 0.12's ``genkit.exp.agent.InMemorySessionStore``: ``get_snapshot(session_id=)``, then
  ``save_snapshot`` of a child holding the messages plus two.
- ``langgraph``: ``InMemorySaver.get_tuple`` then ``put`` of the next checkpoint whose ``messages``
  channel holds LangChain messages (what ``MessagesState`` holds); ``langgraph-dict``: the same with
  plain dict messages, the saver's cheapest payload.
- ``adk``: google-adk ``InMemorySessionService`` with its light-copy feature on: ``get_session``, then
  ``append_event`` twice.
- ``openai-agents``: ``SQLiteSession`` on one database file in a RAM-backed directory (``/dev/shm``):
  ``get_items``, then ``add_items`` of the two; one session object per conversation, kept open (each
  holds its own connections, so its timed calls go to 500 sessions opened before the timing).

Data: every session has its own distinct messages (about 250 bytes of text each). Configurations:
10,000 and 100,000 sessions of 6 messages; and 10,000 sessions whose timed ones (``--long``, 200 by
default) hold 200 or 2,000 messages. Message objects are built before each timed call (a framework builds
them either way); what is timed is the store and session work. The 2,000-turn chat's memory is measured
with ``tracemalloc`` in our worker: what the store holds beyond the messages' own size.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

PEERS = ("ours", "genkit", "langgraph", "langgraph-dict", "adk", "openai-agents")
"""Every store the program knows, ours first."""
OPS = ("turn", "lookup")
"""The timed calls, in the order each configuration runs them."""

_PROSE = (
    "the session store keeps every turn of a conversation as a snapshot so an agent can resume fork "
    "or replay it later while the model sees the active history and the user sees the whole thread "
    "tools answer with data images or text and the framework records their results next to the model"
)
WORDS = _PROSE.split(" ")


def text(rng: random.Random, size: int = 250) -> str:
    """Distinct prose of about ``size`` bytes."""
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return f"{rng.getrandbits(48):012x} " + " ".join(out)


def history(session_id: str, count: int) -> list[tuple[str, str]]:
    """``count`` distinct (role, text) messages of one session, alternating user and model."""
    rng = random.Random(session_id)
    return [("user" if i % 2 == 0 else "model", text(rng)) for i in range(count)]


# --- the stores: each fills, builds one turn's messages, runs a turn, looks up -----------------------


class Ours:
    name = "ours"

    def __init__(self) -> None:
        from genkit_sessions import AgentInit, InMemorySessionStore, SessionResolver

        self.store = InMemorySessionStore()
        self.init, self.resolve = AgentInit, SessionResolver.resolve

    def fill(self, session_id: str, messages: list[tuple[str, str]]) -> None:
        from genkit_sessions import Message, SessionSnapshot, SessionState

        state = SessionState(session_id=session_id, messages=[Message.of_text(r, t) for r, t in messages])
        snapshot = SessionSnapshot(snapshot_id=f"{session_id}-0", session_id=session_id, state=state)
        self.store.save_snapshot(snapshot.snapshot_id, lambda _: snapshot)

    def prepare(self, user: str, model: str) -> Any:
        from genkit_sessions import Message

        return Message.of_text("user", user), Message.of_text("model", model)

    def turn(self, session_id: str, prepared: Any) -> None:
        resolution = self.resolve(self.store, True, self.init(session_id=session_id))
        session = resolution.session
        assert session is not None
        session.add_messages(*prepared)
        session.save()

    def lookup(self, session_id: str) -> int:
        resolution = self.resolve(self.store, True, self.init(session_id=session_id))
        assert resolution.session is not None
        return len(resolution.session.messages)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class Genkit:
    name = "genkit"
    is_async = True

    def __init__(self) -> None:
        from genkit.exp.agent import InMemorySessionStore, SessionSnapshot, SessionState, SnapshotStatus

        self.store = InMemorySessionStore()
        self.snapshot, self.state, self.completed = SessionSnapshot, SessionState, SnapshotStatus.COMPLETED

    async def afill(self, session_id: str, messages: list[tuple[str, str]]) -> None:
        from genkit import Message, Part
        from genkit.exp.agent import SessionSnapshot, SessionState, SnapshotStatus

        state = SessionState(
            session_id=session_id, messages=[Message(role=r, content=[Part(text=t)]) for r, t in messages]
        )
        snapshot = SessionSnapshot(
            snapshot_id=f"{session_id}-0",
            session_id=session_id,
            created_at=_now(),
            status=SnapshotStatus.COMPLETED,
            state=state,
        )
        await self.store.save_snapshot(snapshot.snapshot_id, lambda _: snapshot)

    def prepare(self, user: str, model: str) -> Any:
        from genkit import Message, Part

        return Message(role="user", content=[Part(text=user)]), Message(role="model", content=[Part(text=model)])

    async def aturn(self, session_id: str, prepared: Any) -> None:
        leaf = await self.store.get_snapshot(session_id=session_id)
        state = self.state(session_id=session_id, messages=[*leaf.state.messages, *prepared])
        child = self.snapshot(
            snapshot_id=str(uuid.uuid4()),
            session_id=session_id,
            parent_id=leaf.snapshot_id,
            created_at=_now(),
            status=self.completed,
            state=state,
        )
        await self.store.save_snapshot(child.snapshot_id, lambda _: child)

    async def alookup(self, session_id: str) -> int:
        leaf = await self.store.get_snapshot(session_id=session_id)
        return len(leaf.state.messages)


class LangGraph:
    name = "langgraph"
    plain = False

    def __init__(self) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.base.id import uuid6
        from langgraph.checkpoint.memory import InMemorySaver

        self.saver = InMemorySaver()
        self.empty, self.uuid6 = empty_checkpoint, uuid6

    def _message(self, role: str, content: str) -> Any:
        if self.plain:
            return {"role": "user" if role == "user" else "assistant", "content": content}
        from langchain_core.messages import AIMessage, HumanMessage

        kind = HumanMessage if role == "user" else AIMessage
        return kind(content=content, id=str(uuid.uuid4()))

    def _put(self, config: Any, messages: list[Any], previous: Any) -> None:
        checkpoint = self.empty()
        checkpoint["id"] = str(self.uuid6())
        checkpoint["ts"] = datetime.now(timezone.utc).isoformat()
        version = self.saver.get_next_version(previous, None)
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": version}
        checkpoint["updated_channels"] = ["messages"]
        self.saver.put(config, checkpoint, {"source": "loop", "step": 1, "parents": {}}, {"messages": version})

    def fill(self, session_id: str, messages: list[tuple[str, str]]) -> None:
        config = {"configurable": {"thread_id": session_id, "checkpoint_ns": ""}}
        self._put(config, [self._message(r, t) for r, t in messages], None)

    def prepare(self, user: str, model: str) -> Any:
        return [self._message("user", user), self._message("model", model)]

    def turn(self, session_id: str, prepared: Any) -> None:
        found = self.saver.get_tuple({"configurable": {"thread_id": session_id, "checkpoint_ns": ""}})
        checkpoint = found.checkpoint
        self._put(
            found.config,
            [*checkpoint["channel_values"]["messages"], *prepared],
            checkpoint["channel_versions"]["messages"],
        )

    def lookup(self, session_id: str) -> int:
        found = self.saver.get_tuple({"configurable": {"thread_id": session_id, "checkpoint_ns": ""}})
        return len(found.checkpoint["channel_values"]["messages"])


class LangGraphDict(LangGraph):
    name = "langgraph-dict"
    plain = True


class Adk:
    name = "adk"
    is_async = True

    def __init__(self) -> None:
        from google.adk.features import FeatureName, override_feature_enabled
        from google.adk.sessions import InMemorySessionService

        override_feature_enabled(FeatureName.IN_MEMORY_SESSION_SERVICE_LIGHT_COPY, True)
        self.service = InMemorySessionService()

    def _event(self, role: str, content: str) -> Any:
        from google.adk.events import Event
        from google.genai import types

        return Event(
            author="user" if role == "user" else "agent",
            invocation_id="bench",
            content=types.Content(role=role, parts=[types.Part(text=content)]),
        )

    async def afill(self, session_id: str, messages: list[tuple[str, str]]) -> None:
        session = await self.service.create_session(app_name="bench", user_id="u", session_id=session_id)
        for role, content in messages:
            await self.service.append_event(session, self._event(role, content))

    def prepare(self, user: str, model: str) -> Any:
        return self._event("user", user), self._event("model", model)

    async def aturn(self, session_id: str, prepared: Any) -> None:
        session = await self.service.get_session(app_name="bench", user_id="u", session_id=session_id)
        for event in prepared:
            await self.service.append_event(session, event)

    async def alookup(self, session_id: str) -> int:
        session = await self.service.get_session(app_name="bench", user_id="u", session_id=session_id)
        return len(session.events)


class OpenAIAgents:
    name = "openai-agents"
    is_async = True
    max_timed = 500
    """Each open ``SQLiteSession`` holds its own connections (one a thread), so the timed calls go to 500
    sessions opened (and read once) before the timing, not to all of them."""

    def __init__(self) -> None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.path = os.path.join(base or "/tmp", f"bench-peers-{os.getpid()}.db")
        self.open: dict[str, Any] = {}
        self.pending: list[tuple[str, list[dict[str, str]]]] = []

    def _session(self, session_id: str) -> Any:
        found = self.open.get(session_id)
        if found is None:
            from agents import SQLiteSession

            found = self.open[session_id] = SQLiteSession(session_id, self.path)
        return found

    async def afill(self, session_id: str, messages: list[tuple[str, str]]) -> None:
        items = [{"role": "user" if r == "user" else "assistant", "content": t} for r, t in messages]
        self.pending.append((session_id, items))

    def flush(self) -> None:
        """Write the filled sessions as ``add_items`` writes them (the same rows, through the same schema,
        made by ``SQLiteSession`` itself), in one transaction: opening a session per fill would take minutes."""
        import sqlite3

        from agents import SQLiteSession

        SQLiteSession("schema", self.path).close()  # creates the tables and indexes
        with sqlite3.connect(self.path) as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", [(s,) for s, _ in self.pending]
            )
            conn.executemany(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                [(s, json.dumps(item)) for s, items in self.pending for item in items],
            )
        self.pending.clear()

    def prepare(self, user: str, model: str) -> Any:
        return [{"role": "user", "content": user}, {"role": "assistant", "content": model}]

    async def aturn(self, session_id: str, prepared: Any) -> None:
        session = self._session(session_id)
        await session.get_items()
        await session.add_items(prepared)

    async def alookup(self, session_id: str) -> int:
        return len(await self._session(session_id).get_items())

    def close(self) -> None:
        for session in self.open.values():
            session.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)


STORES: dict[str, Callable[[], Any]] = {
    "ours": Ours,
    "genkit": Genkit,
    "langgraph": LangGraph,
    "langgraph-dict": LangGraphDict,
    "adk": Adk,
    "openai-agents": OpenAIAgents,
}


# --- the worker: one store, driven over stdin/stdout -----------------------------------------------


class Worker:
    """Holds one store and answers the coordinator's commands (one JSON object a line)."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.store: Any = None
        self.loop = asyncio.new_event_loop()
        self.timed: list[str] = []
        self.all: list[str] = []

    def call(self, method: str, *args: Any) -> Any:
        if getattr(self.store, "is_async", False):
            return self.loop.run_until_complete(getattr(self.store, "a" + method)(*args))
        return getattr(self.store, method)(*args)

    def fill(self, sessions: int, long: int, length: int) -> dict[str, Any]:
        if self.store is not None and hasattr(self.store, "close"):
            self.store.close()
        self.store = None
        gc.collect()
        self.store = STORES[self.peer]()
        started = time.perf_counter()
        self.all = [f"chat-{i:06d}" for i in range(sessions)]
        self.timed = self.all[:: max(1, sessions // long)][:long] if length != 6 else self.all
        lengths = dict.fromkeys(self.timed, length)
        for session_id in self.all:
            self.call("fill", session_id, history(session_id, lengths.get(session_id, 6)))
        if hasattr(self.store, "flush"):
            self.store.flush()
        limit = getattr(self.store, "max_timed", None)
        if limit is not None:  # a store that holds a connection per open session: time a warm subset
            self.timed = self.timed[:limit]
            for session_id in self.timed:
                self.call("lookup", session_id)
        sample = random.Random(1).sample(self.timed, min(20, len(self.timed)))
        seen = [self.call("lookup", s) for s in sample]
        return {"fill_s": time.perf_counter() - started, "lengths": seen}

    def batch(self, op: str, reps: int, seed: int, seconds: float) -> dict[str, Any]:
        rng = random.Random(seed)
        samples: list[int] = []
        clock = time.perf_counter_ns
        deadline = clock() + int(seconds * 1e9)
        gc.collect()
        gc.disable()
        try:
            while len(samples) < reps and (len(samples) < 5 or clock() < deadline):
                session_id = rng.choice(self.timed).encode().decode()  # a new string, as parsed from a request
                if op == "turn":
                    prepared = self.store.prepare(text(rng), text(rng))
                    start = clock()
                    self.call("turn", session_id, prepared)
                else:
                    start = clock()
                    self.call("lookup", session_id)
                samples.append(clock() - start)
        finally:
            gc.enable()
        return {"samples": samples}

    def memory(self, turns: int) -> dict[str, Any]:
        """Our store after a ``turns``-turn chat, beyond the size of the chat's messages."""
        from genkit_sessions import AgentInit, InMemorySessionStore, Message, SessionResolver

        rng = random.Random(turns)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        pairs = [(Message.of_text("user", text(rng)), Message.of_text("model", text(rng))) for _ in range(turns)]
        gc.collect()
        messages = tracemalloc.get_traced_memory()[0] - before
        store = InMemorySessionStore()
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        for user, model in pairs:
            session = SessionResolver.resolve(store, True, AgentInit(session_id="long-chat")).session
            assert session is not None
            session.add_messages(user, model)
            session.save()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start
        tracemalloc.stop()
        leaf = store.get_snapshot(session_id="long-chat")
        assert leaf is not None and leaf.state is not None and len(leaf.state.message_list) == 2 * turns
        assert len(store.list_snapshots("long-chat")) == turns
        return {"messages_bytes": messages, "store_bytes": held}

    def serve(self) -> None:
        for line in sys.stdin:
            command = json.loads(line)
            kind = command.pop("cmd")
            if kind == "quit":
                break
            try:
                answer = getattr(self, kind)(**command)
            except Exception as exc:  # reported to the coordinator, which prints it
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        if self.store is not None and hasattr(self.store, "close"):
            self.store.close()


# --- the coordinator -----------------------------------------------------------------------------


class Remote:
    """A worker process for one peer."""

    def __init__(self, peer: str, python: str) -> None:
        self.peer = peer
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", peer],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            return {"error": f"the {self.peer} worker exited ({self.process.wait()})"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)


def available(peer: str, python: str) -> str | None:
    """Why ``peer`` cannot run under ``python`` (None when it can)."""
    modules = {
        "ours": "genkit_sessions",
        "genkit": "genkit.exp.agent",
        "langgraph": "langgraph.checkpoint.memory, langchain_core.messages",
        "langgraph-dict": "langgraph.checkpoint.memory",
        "adk": "google.adk.sessions",
        "openai-agents": "agents",
    }[peer]
    probe = subprocess.run([python, "-c", f"import {modules}"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"not installed for {python} ({modules})"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def run(args: argparse.Namespace) -> int:
    pythons = {peer: sys.executable for peer in PEERS}
    for item in args.python:
        peer, _, path = item.partition("=")
        pythons[peer] = path
    chosen = [p for p in PEERS if p in args.peers]
    print(f"bench_peers: python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores")
    print(f"load average at start: {load()}")
    print(
        f"{args.processes} fresh worker process(es) per store and configuration, {args.rounds} round(s) in each; "
        "medians over every batch of every process"
    )
    runnable: list[str] = []
    for peer in chosen:
        why = available(peer, pythons[peer])
        if why is not None:
            print(f"  {peer}: SKIPPED, {why}")
            continue
        runnable.append(peer)
        print(f"  {peer}: {pythons[peer]}")
    configs = [(int(n), 6) for n in args.sizes.split(",") if n] + [
        (int(n), int(h)) for n in args.long_sessions.split(",") if n for h in args.lengths.split(",") if h
    ]
    rows: list[tuple[str, str, dict[str, list[float]]]] = []
    for sessions, length in configs:
        label = f"{sessions:,} sessions of 6" if length == 6 else f"{sessions:,} sessions, {args.long} of {length:,}"
        peers = [p for p in runnable if not (p == "genkit" and sessions > args.genkit_max)]
        if len(peers) < len(runnable):
            print(f"  genkit: not filled beyond {args.genkit_max:,} sessions (its session lookup scans them all)")
        samples: dict[str, dict[str, list[int]]] = {op: {peer: [] for peer in peers} for op in OPS}
        medians: dict[str, dict[str, list[float]]] = {op: {peer: [] for peer in peers} for op in OPS}
        for process in range(args.processes):
            print(f"\n[{label}] process {process + 1} of {args.processes}: filling; load {load()}", flush=True)
            ready = _fill_workers(peers, pythons, sessions, length, args.long, first=process)
            try:
                for op in OPS:
                    _batches(ready, op, args, process, samples[op], medians[op])
                    print(f"  {op}: done; load {load()}", flush=True)
            finally:
                for remote in ready.values():
                    remote.close()
        for op in OPS:
            rows.append(
                (
                    label,
                    op,
                    {p: [statistics.median(s) / 1000, *medians[op][p]] for p, s in samples[op].items() if s},
                )
            )
    memory = None
    if "ours" in runnable and args.chat_turns:
        remote = Remote("ours", pythons["ours"])
        try:
            memory = remote.ask(cmd="memory", turns=args.chat_turns)
        finally:
            remote.close()
    print_table(rows)
    if memory is not None:
        if "error" in memory:
            print(f"\nmemory: {memory['error']}")
        else:
            beyond = memory["store_bytes"] / 1e6
            print(
                f"\n{args.chat_turns:,}-turn chat in our InMemorySessionStore (one session, resolve + add + save "
                "each turn): "
                f"the messages themselves {memory['messages_bytes'] / 1e6:.2f} MB; the store holds "
                f"{beyond:.2f} MB beyond them ({memory['store_bytes'] / args.chat_turns:,.0f} bytes a turn); "
                f"target under 2 MB: {'met' if beyond < 2 else 'NOT met'}"
            )
    print(f"load average at end: {load()}")
    return 0


def _fill_workers(
    peers: list[str], pythons: dict[str, str], sessions: int, length: int, long: int, first: int
) -> dict[str, Remote]:
    """A fresh worker per peer, each filled with the configuration's sessions (filling in rotating order,
    starting at ``first``); the ones whose fill failed are closed and left out."""
    ready: dict[str, Remote] = {}
    order = peers[first % len(peers) :] + peers[: first % len(peers)] if peers else []
    for peer in order:
        remote = Remote(peer, pythons[peer])
        answer = remote.ask(cmd="fill", sessions=sessions, long=long, length=length)
        if "error" in answer:
            print(f"  {peer}: fill failed: {answer['error']}")
            remote.close()
            continue
        assert set(answer["lengths"]) == {length}, (peer, answer["lengths"])
        print(f"  {peer}: filled in {answer['fill_s']:.1f} s", flush=True)
        ready[peer] = remote
    return {peer: ready[peer] for peer in peers if peer in ready}


def _batches(
    ready: dict[str, Remote],
    op: str,
    args: argparse.Namespace,
    process: int,
    samples: dict[str, list[int]],
    medians: dict[str, list[float]],
) -> None:
    """``args.rounds`` rounds of one batch of ``op`` per worker, in rotating order; each batch's samples
    and median are added to ``samples`` and ``medians``."""
    order = list(ready)
    for round_ in range(args.rounds):
        shift = (process + round_) % len(order)
        for peer in order[shift:] + order[:shift]:
            seed = (process * args.rounds + round_) * 7919 + len(peer)
            answer = ready[peer].ask(cmd="batch", op=op, reps=args.reps, seed=seed, seconds=args.seconds)
            if "error" in answer:
                print(f"  {peer} {op}: {answer['error']}")
                continue
            samples[peer].extend(answer["samples"])
            medians[peer].append(statistics.median(answer["samples"]) / 1000)


def print_table(rows: list[tuple[str, str, dict[str, list[float]]]]) -> None:
    peers = [p for p in PEERS if any(p in r[2] for r in rows)]
    print()
    header = f"{'workload':<34} {'op':<7}" + "".join(f" {p:>15}" for p in peers)
    print(header)
    print("-" * len(header))
    for label, op, found in rows:
        ours = found.get("ours", [None])[0]
        cells = []
        for peer in peers:
            if peer not in found:
                cells.append(f" {'-':>15}")
                continue
            median = found[peer][0]
            ratio = "" if peer == "ours" or ours is None else f" {median / ours:.2f}x"
            cells.append(f" {f'{median:,.1f}{ratio}':>15}")
        print(f"{label:<34} {op:<7}" + "".join(cells))
    print()
    print("Median µs per call over all batches; 'N.NNx' is the peer's median over ours (above 1: ours is faster).")
    print("Per-batch medians (rotating order), to show the spread:")
    for label, op, found in rows:
        spread = ", ".join(f"{p} {min(v[1:]):,.1f}-{max(v[1:]):,.1f}" for p, v in found.items() if len(v) > 1)
        print(f"  {label}, {op}: {spread}")
    behind = [
        f"{label} {op}: {p}"
        for label, op, found in rows
        if "ours" in found
        for p, v in found.items()
        if p != "ours" and v[0] <= found["ours"][0]
    ]
    print(
        "\nVerdict: ours faster than every peer in every row"
        if not behind
        else "\nVerdict: NOT met, ours is not faster in: " + "; ".join(behind)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ", ".join(PEERS))
    parser.add_argument("--python", action="append", default=[], metavar="PEER=PATH", help="the Python that has PEER")
    parser.add_argument("--sizes", default="10000,100000", help="session counts for the 6-message rows")
    parser.add_argument("--lengths", default="200,2000", help="history lengths for the long-history rows")
    parser.add_argument(
        "--long-sessions", default="10000,100000", help="session counts for the long-history rows (comma-separated)"
    )
    parser.add_argument("--long", type=int, default=200, help="how many of them hold the long history (and are timed)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of batches in each worker process")
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="fresh worker processes per store and configuration (default 3, 1 with --quick; a process's speed "
        "varies, see the module doc)",
    )
    parser.add_argument("--reps", type=int, default=2_000, help="timed calls per batch (at most)")
    parser.add_argument("--seconds", type=float, default=1.0, help="time budget per batch")
    parser.add_argument("--genkit-max", type=int, default=100_000, help="skip genkit above this many sessions")
    parser.add_argument("--chat-turns", type=int, default=2_000, help="turns of the memory chat (0: skip it)")
    parser.add_argument("--quick", action="store_true", help="one process, 3 rounds of at most 500 calls")
    args = parser.parse_args(argv)
    if args.worker:
        Worker(args.worker).serve()
        return 0
    args.peers = args.peers.split(",")
    if args.quick:
        args.rounds, args.reps, args.seconds = 3, 500, 0.5
    if args.processes is None:
        args.processes = 1 if args.quick else 3
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
