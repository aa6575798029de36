"""A Genkit agent turn on our in-memory store (through ``genkit_sessions.genkit``) against the same
turn on Genkit's own ``InMemorySessionStore``, with 1,000 and 100,000 sessions already stored.

Each turn resumes a stored session by session id (Genkit reads its leaf, the model answers, Genkit
saves the new snapshot), with a model defined as a Python function, so the figures are the agent
runtime plus the store. Run from ``.venv`` or ``.venv-bench``::

    python benchmarks/bench_genkit_adapter.py [--sessions 1000 100000] [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from typing import Any

from genkit import ActionRunContext, Message, ModelRequest, ModelResponse, Part, Role
from genkit.exp import Genkit
from genkit.exp.agent import InMemorySessionStore as GenkitInMemoryStore
from genkit.exp.agent import SessionSnapshot as GenkitSnapshot

from genkit_sessions import InMemorySessionStore, SessionSnapshot, from_wire
from genkit_sessions.genkit import GenkitSessionStore


async def echo(request: ModelRequest, ctx: ActionRunContext) -> ModelResponse:
    """The model: answers with the last user text."""
    return ModelResponse(message=Message(role=Role.MODEL, content=[Part(text=f"echo {request.messages[-1].text}")]))


def session_wire(index: int) -> dict[str, Any]:
    """A stored session: one completed snapshot holding a short exchange."""
    session_id = f"session-{index}"
    return {
        "snapshotId": f"snap-{index}",
        "sessionId": session_id,
        "parentId": "",
        "createdAt": f"2026-01-01T00:00:00.{index % 1000000:06d}Z",
        "status": "completed",
        "state": {
            "sessionId": session_id,
            "messages": [
                {"role": "user", "content": [{"text": f"hello {index}"}]},
                {"role": "model", "content": [{"text": f"echo hello {index}"}]},
            ],
            "artifacts": [],
        },
    }


def genkit_store(sessions: int) -> Any:
    store = GenkitInMemoryStore()
    for i in range(sessions):
        store.snapshots[f"snap-{i}"] = GenkitSnapshot.model_validate(session_wire(i))
    return store


def our_store(sessions: int) -> Any:
    store = InMemorySessionStore()
    store.restore_snapshots(from_wire(SessionSnapshot, session_wire(i)) for i in range(sessions))
    return GenkitSessionStore(store.aio)


async def turns(store: Any, sessions: int, count: int, seed: int) -> list[float]:
    ai = Genkit()
    ai.define_model(name="echo", fn=echo)
    agent = ai.define_agent(name="chat", model="echo", store=store)
    await agent.chat(session_id="session-0").send("warm up")
    pick = random.Random(seed)
    seconds = []
    for _ in range(count):
        session_id = f"session-{pick.randrange(1, sessions)}"
        start = time.perf_counter()
        reply = await agent.chat(session_id=session_id).send("next")
        seconds.append(time.perf_counter() - start)
        assert reply.text == "echo next"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--turns", type=int, default=200, help="measured turns per store and size")
    args = parser.parse_args()

    rows = []
    for sessions in args.sessions:
        count = args.turns if sessions <= 10_000 else max(20, args.turns // 5)
        theirs = asyncio.run(turns(genkit_store(sessions), sessions, count, seed=sessions))
        ours = asyncio.run(turns(our_store(sessions), sessions, count, seed=sessions))
        rows.append((sessions, count, statistics.median(theirs) * 1e3, statistics.median(ours) * 1e3))

    print("A Genkit 0.12.0 agent turn resumed by session id (median of the measured turns)\n")
    print("| stored sessions | turns | Genkit InMemorySessionStore | ours through the adapter | ours / Genkit |")
    print("|---:|---:|---:|---:|---:|")
    for sessions, count, theirs_ms, ours_ms in rows:
        print(f"| {sessions:,} | {count} | {theirs_ms:.2f} ms | {ours_ms:.2f} ms | {ours_ms / theirs_ms:.2f}x |")


if __name__ == "__main__":
    main()
