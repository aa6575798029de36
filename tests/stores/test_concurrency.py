"""Racing writers, from threads and from asyncio tasks: no update is lost, every child lands."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from genkit_sessions import GenkitError, Message, SessionSnapshot, SessionState

WRITERS = 6
WRITES_EACH = 8


def _append(text: str) -> Any:
    def mutate(current: SessionSnapshot | None) -> SessionSnapshot:
        if current is None:
            state = SessionState(session_id="s", messages=(Message.of_text("user", text),))
            return SessionSnapshot(snapshot_id="a", session_id="s", status="pending", state=state)
        assert current.state is not None
        return attrs.evolve(
            current,
            state=attrs.evolve(current.state, messages=(*current.state.message_list, Message.of_text("user", text))),
        )

    return mutate


def test_threads_racing_save_on_one_id_lose_no_update(store: Any) -> None:
    landed: list[str] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for i in range(WRITES_EACH):
            text = f"w{w}-{i}"
            try:
                store.save_snapshot("a", _append(text))
            except GenkitError as error:  # a durable store may give up under contention, and says so
                assert error.status == "ABORTED", error
                continue
            with lock:
                landed.append(text)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(writer, range(WRITERS)))
    stored = [m.text for m in store.get_snapshot(snapshot_id="a").state.message_list]
    assert sorted(stored) == sorted(landed)
    assert len(landed) >= WRITERS  # contention never starves every writer


def test_asyncio_tasks_racing_save_on_one_id_lose_no_update(store: Any) -> None:
    async def scenario() -> list[str]:
        landed: list[str] = []

        async def writer(w: int) -> None:
            for i in range(WRITES_EACH):
                text = f"w{w}-{i}"
                try:
                    await store.aio.save_snapshot("a", _append(text))
                except GenkitError as error:
                    assert error.status == "ABORTED", error
                    continue
                landed.append(text)

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        return landed

    landed = asyncio.run(scenario())
    stored = [m.text for m in store.get_snapshot(snapshot_id="a").state.message_list]
    assert sorted(stored) == sorted(landed)
    assert len(landed) >= WRITERS


def test_racing_children_of_one_parent_all_land_and_the_leaf_follows_the_commits(store: Any) -> None:
    root = SessionSnapshot(snapshot_id="root", session_id="s", state=SessionState(session_id="s"))
    store.save_snapshot("root", lambda _: root)
    children = [f"child-{i}" for i in range(12)]

    def write(child: str) -> SessionSnapshot:
        snapshot = SessionSnapshot(
            snapshot_id=child, session_id="s", parent_id="root", state=SessionState(session_id="s")
        )
        while True:
            try:
                return store.save_snapshot(child, lambda _: snapshot)
            except GenkitError as error:  # retry what a durable store refused under contention
                assert error.status == "ABORTED", error

    with ThreadPoolExecutor(4) as pool:
        saved = list(pool.map(write, children))
    listed = {s.snapshot_id for s in store.list_snapshots("s")}
    assert listed == {"root", *children}
    assert {s.snapshot_id for s in saved} == set(children)
    leaf = store.get_snapshot(session_id="s")
    assert leaf.snapshot_id in children  # one whose save succeeded (S8: the one committed last)
    assert store.get_session_record("s").version == 1 + len(children)
    assert all(store.get_snapshot(snapshot_id=c) is not None for c in children)
    write("child-after")  # the next save to land moves the leaf to itself, whatever its createdAt
    assert store.get_snapshot(session_id="s").snapshot_id == "child-after"
