"""How the async face's driver treats a cancellation of the caller's task, at each point it can come.

The store's steps are written once and driven by ``run_sync`` or ``run_async``; these tests drive small
steps with ``run_async`` and a scripted client (an object with async DynamoDB methods), so that the
cancellation lands exactly where each test wants it: while a request waits, just after an answer,
before a request is sent, and a second time while the steps take their write back. The whole store
under cancellation, through aiobotocore and a real server, is ``test_cancellation``; the points
tested here cannot be reached there on purpose (an answer and a cancellation arrive together), so
this one test file drives the internal driver.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from genkit_sessions.dynamodb._calls import Abandoned, Call, Steps, run_async


class Client:
    """Answers ``get_item`` and ``delete_item`` at once, or (``hold``) when the test says so."""

    def __init__(self, hold: set[str] | None = None, on_call: Any = None) -> None:
        self.sent: list[str] = []
        self.hold = hold or set()
        self.on_call = on_call
        self.waiting: asyncio.Future[None] | None = None

    async def _answer(self, name: str, key: str) -> dict[str, Any]:
        self.sent.append(f"{name} {key}")
        if self.on_call is not None:
            self.on_call(name, key)
        if key in self.hold:
            self.waiting = asyncio.get_running_loop().create_future()
            await self.waiting
        return {"Item": {"k": {"S": key}}}

    async def get_item(self, Key: str) -> dict[str, Any]:
        return await self._answer("GetItem", Key)

    async def delete_item(self, Key: str) -> dict[str, Any]:
        return await self._answer("DeleteItem", Key)


def steps(log: list[str], cancel_after_first: bool = False) -> Steps[str]:
    """Read ``a`` then ``b``; when abandoned, log it, delete ``undo`` and raise again."""
    try:
        first = yield Call("GetItem", {"Key": "a"})
        log.append(f"answer {first['Item']['k']['S']}")
        if cancel_after_first:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
        second = yield Call("GetItem", {"Key": "b"})
        log.append(f"answer {second['Item']['k']['S']}")
    except Abandoned as abandoned:
        log.append(f"abandoned, sent={abandoned.sent}")
        yield Call("DeleteItem", {"Key": "undo"})
        log.append("undone")
        raise
    return "done"


async def _cancel_when_waiting(client: Client, task: asyncio.Task[Any]) -> None:
    while client.waiting is None:
        await asyncio.sleep(0)
    task.cancel()


def test_a_cancellation_while_a_request_waits_is_thrown_into_the_steps_whose_undo_is_sent() -> None:
    log: list[str] = []
    client = Client(hold={"b"})

    async def main() -> None:
        task = asyncio.ensure_future(run_async(steps(log), client))
        await _cancel_when_waiting(client, task)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert client.sent == ["GetItem a", "GetItem b", "DeleteItem undo"]
    assert log == ["answer a", "abandoned, sent=True", "undone"]


def test_a_cancellation_just_after_an_answer_delivers_the_answer_and_sends_no_next_request() -> None:
    log: list[str] = []
    tasks: list[asyncio.Task[Any]] = []

    def cancel_on_first(name: str, key: str) -> None:
        if key == "a":
            tasks[0].cancel()  # the method returns without waiting: the cancellation lands after the answer

    client = Client(on_call=cancel_on_first)

    async def main() -> None:
        tasks.append(asyncio.ensure_future(run_async(steps(log), client)))
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]

    asyncio.run(main())
    assert client.sent == ["GetItem a", "DeleteItem undo"]
    assert log == ["answer a", "abandoned, sent=False", "undone"]


def test_a_cancellation_before_a_request_is_sent_throws_at_that_request_unsent() -> None:
    log: list[str] = []
    client = Client()

    async def main() -> None:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.ensure_future(run_async(steps(log, cancel_after_first=True), client))

    asyncio.run(main())
    assert client.sent == ["GetItem a", "DeleteItem undo"]
    assert log == ["answer a", "abandoned, sent=False", "undone"]


def test_a_cancellation_while_waiting_for_a_place_at_the_gate_throws_unsent_and_takes_no_place() -> None:
    """A request waits for a place at the gate (one per connection) before it is built: cancelled there, it
    was never sent, and the place it never took is not given back (the gate ends as it began)."""
    log: list[str] = []
    client = Client()

    async def main() -> None:
        gate = asyncio.Semaphore(1)
        await gate.acquire()  # another request holds the only place
        task = asyncio.ensure_future(run_async(steps(log), client, gate))
        for _ in range(3):
            await asyncio.sleep(0)
        assert client.sent == []  # waiting at the gate, not in the client
        task.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        assert log == ["abandoned, sent=False"]  # its undo now waits for the place
        gate.release()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not gate.locked()
        await gate.acquire()
        assert gate.locked()  # exactly one place, as before

    asyncio.run(main())
    assert client.sent == ["DeleteItem undo"]
    assert log == ["abandoned, sent=False", "undone"]


def test_a_second_cancellation_while_the_steps_take_their_write_back_stops_at_once() -> None:
    log: list[str] = []
    client = Client(hold={"b", "undo"})

    async def main() -> None:
        task = asyncio.ensure_future(run_async(steps(log), client))
        await _cancel_when_waiting(client, task)
        client.waiting = None
        await _cancel_when_waiting(client, task)  # now the undo waits
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert client.sent == ["GetItem a", "GetItem b", "DeleteItem undo"]
    assert log == ["answer a", "abandoned, sent=True"]


def test_steps_that_do_not_catch_the_cancellation_end_with_the_callers_cancelled_error() -> None:
    def plain() -> Steps[str]:
        yield Call("GetItem", {"Key": "b"})
        return "done"

    client = Client(hold={"b"})

    async def main() -> None:
        task = asyncio.ensure_future(run_async(plain(), client))
        await _cancel_when_waiting(client, task)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert client.sent == ["GetItem b"]


def test_an_uncancelled_run_yields_to_the_loop_around_each_request() -> None:
    """Another task runs between the steps' work and each request, and between each answer and the
    steps' next work (so one callback never holds the loop for both)."""
    order: list[str] = []
    client = Client(on_call=lambda name, key: order.append(f"send {key}"))

    def traced() -> Steps[str]:
        order.append("steps start")
        yield Call("GetItem", {"Key": "a"})
        order.append("steps got a")
        yield Call("GetItem", {"Key": "b"})
        order.append("steps got b")
        return "done"

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            order.append("tick")
            await asyncio.sleep(0)

    async def main() -> str:
        stop = asyncio.Event()
        ticking = asyncio.ensure_future(ticker(stop))
        await asyncio.sleep(0)
        result = await run_async(traced(), client)
        stop.set()
        await ticking
        return result

    assert asyncio.run(main()) == "done"
    events = [e for i, e in enumerate(order) if e != "tick" or order[i - 1] != "tick"]  # runs of ticks as one
    start, end = events.index("steps start"), events.index("steps got b")
    assert events[start : end + 1] == [
        "steps start",
        "tick",
        "send a",
        "tick",
        "steps got a",
        "tick",
        "send b",
        "tick",
        "steps got b",
    ]
