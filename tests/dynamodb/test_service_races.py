"""Processes racing on one DynamoDB session through the session service lose nothing and show nothing half-done.

Two writer processes add interactions, one through the blocking service and one through the async
service on aiobotocore, some with messages large enough to be stored as blob parts. Two more compact
whenever the active view grows (keeping 3 and 5 messages), and a fifth keeps reading: the full history as
a stream, the active history, a window, and a fork of whatever snapshot is the leaf. Each view is checked
as it is read (contract rules V9, V11-V13, H1-H4): every interaction whole (its user message, then its
model message; a summary may stand between them), each writer's interactions in the order it wrote
them, and every full history an extension of the one read before it. At the end, every interaction a
writer was told landed is in the history exactly once, no refused one is, and the version counts every
write.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import re
import uuid
from collections.abc import Sequence
from typing import Any

from genkit_sessions import AsyncSessionService, Message, SessionService
from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
from genkit_sessions.errors import GenkitError
from genkit_sessions.service.compaction import KeepLastStrategy, MessageCountTrigger
from tests.dynamodb.helpers import noise, prose
from tests.dynamodb_backends import CREDENTIALS, make_client, server_endpoint

SESSION = "shared"
WRITERS = 2
TURNS = 20
COMPACTORS = 2
WRITER_TEXT = re.compile(r"^w(\d+) ([um]) (\d+)\b")


def _service(endpoint: str, table: str) -> SessionService:
    return SessionService(DynamoDBSessionStore(table, make_client(endpoint)))


def _text(writer: int, kind: str, turn: int, rng: random.Random) -> str:
    big = rng.random() < 0.1  # about one message in ten is stored as blob parts (noise barely compresses)
    return f"w{writer} {kind} {turn} " + (noise(rng, 150_000) if big else prose(rng, rng.randint(10, 2_000)))


def _interaction(writer: int, turn: int, rng: random.Random) -> tuple[Message, Message]:
    return Message.of_text("user", _text(writer, "u", turn, rng)), Message.of_text(
        "model", _text(writer, "m", turn, rng)
    )


def _writer(endpoint: str, table: str, writer: int, start: Any, results: Any) -> None:
    """Writer 0 writes through the blocking service; writer 1 through the async one on aiobotocore."""
    rng = random.Random(writer)
    landed: list[int] = []
    refused: list[tuple[int, str]] = []
    if writer == 0:
        service = _service(endpoint, table)
        start.wait()
        for turn in range(TURNS):
            user, model = _interaction(writer, turn, rng)
            try:
                service.add_interaction(SESSION, user, [model])
                landed.append(turn)
            except GenkitError as error:  # every append lost to the others: refused, so it must not be there
                refused.append((turn, error.status.name))
    else:
        for name, value in CREDENTIALS.items():
            os.environ[name.upper()] = value
        store = DynamoDBSessionStore(table, region_name="us-east-1", endpoint_url=endpoint)
        start.wait()

        async def write() -> None:
            service = AsyncSessionService(store.aio)
            for turn in range(TURNS):
                user, model = _interaction(writer, turn, rng)
                try:
                    await service.add_interaction(SESSION, user, [model])
                    landed.append(turn)
                except GenkitError as error:
                    refused.append((turn, error.status.name))

        asyncio.run(write())
    results.put(("writer", writer, landed, refused))


def _compactor(endpoint: str, table: str, keep: int, start: Any, done: Any, results: Any) -> None:
    service = _service(endpoint, table)
    start.wait()
    compactions, refusals = 0, []
    strategy = KeepLastStrategy(keep=keep, summarize=lambda covered: f"summary of {len(covered)}")
    while not done.is_set():
        try:
            if service.compact(SESSION, MessageCountTrigger(keep + 2), strategy).changed:
                compactions += 1
        except GenkitError as error:
            refusals.append(error.status.name)
        done.wait(0.02)
    results.put(("compactor", keep, compactions, refusals))


def _pairs(messages: Sequence[Message], *, active: bool = False) -> list[tuple[int, int]]:
    """The (writer, turn) of each interaction in ``messages``, in order; AssertionError unless each is whole:
    its user message, then (a compaction's summary may stand at a boundary between them) its model message.
    ``active``: the view may open, after its summaries, on the model message of an interaction whose user
    message a compaction covered."""
    pairs: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    opening = active
    for message in messages:
        found = WRITER_TEXT.match(message.text)
        if found is None:
            assert message.text.startswith("summary of "), message.text[:60]
            continue
        writer, kind, turn = int(found[1]), found[2], int(found[3])
        if kind == "u":
            assert pending is None, f"interaction {pending} has no model message"
            pending = (writer, turn)
        elif pending is None and opening:
            pairs.append((writer, turn))
        else:
            assert pending == (writer, turn), f"model message of {(writer, turn)} after {pending}"
            pairs.append(pending)
            pending = None
        opening = False
    assert pending is None, f"interaction {pending} has no model message"
    return pairs


def _in_order(pairs: list[tuple[int, int]], *, contiguous: bool) -> None:
    """Each writer's interactions in the order it wrote them (no turn twice); ``contiguous``: no turn missing
    between two seen (a writer only ever skips a turn that was refused, which the final check covers)."""
    last: dict[int, int] = {}
    for writer, turn in pairs:
        assert turn > last.get(writer, -1), f"writer {writer}: turn {turn} after turn {last.get(writer)}"
        last[writer] = turn
    assert not contiguous or len(pairs) == len(set(pairs))


def _reader(endpoint: str, table: str, start: Any, done: Any, results: Any) -> None:
    service = _service(endpoint, table)
    start.wait()
    store = service.store
    reads = forks = 0
    problems: list[str] = []
    previous: list[tuple[int, int]] = []
    while not done.is_set() or reads == 0:
        try:
            streamed = [m for chunk in service.iter_history(SESSION, full=True, chunk_messages=5) for m in chunk]
            full = _pairs(streamed)
            _in_order(full, contiguous=True)
            assert full[: len(previous)] == previous, "a full history that does not extend the one read before"
            previous = full
            _in_order(_pairs(service.get_history(SESSION), active=True), contiguous=True)
            window = service.read_window(SESSION, max_messages=4)
            assert len(window.messages) <= 4
            leaf = store.get_snapshot(session_id=SESSION)
            if leaf is not None and reads % 3 == 0:
                fork = service.fork(leaf.snapshot_id, new_session_id=f"fork-{reads}")
                source = [m for chunk in service.iter_history(snapshot_id=leaf.snapshot_id, full=True) for m in chunk]
                forked = service.get_messages(fork.id)
                assert [m.text for m in forked] == [m.text for m in source], "a fork whose history is not its source's"
                forks += 1
            reads += 1
        except GenkitError as error:  # a read may lose a race and say so; it must never hand out half a write
            if error.status.name not in ("ABORTED", "NOT_FOUND"):
                problems.append(f"{error.status.name}: {error}")
        except AssertionError as failure:
            problems.append(str(failure))
            break
    results.put(("reader", reads, forks, problems))


def test_writers_a_compactor_and_a_reader_in_separate_processes_lose_nothing_and_see_nothing_half_done() -> None:
    endpoint = server_endpoint()
    client = make_client(endpoint)
    table = f"svc-race-{uuid.uuid4().hex[:10]}"
    create_table(client, table)
    service = SessionService(DynamoDBSessionStore(table, client))
    service.find_or_create(SESSION)
    context = multiprocessing.get_context("spawn")
    results, done, start = context.Queue(), context.Event(), context.Barrier(WRITERS + COMPACTORS + 1)
    writers = [context.Process(target=_writer, args=(endpoint, table, n, start, results)) for n in range(WRITERS)]
    others = [
        context.Process(target=_compactor, args=(endpoint, table, 3 + 2 * n, start, done, results))
        for n in range(COMPACTORS)
    ]
    others.append(context.Process(target=_reader, args=(endpoint, table, start, done, results)))
    for process in writers + others:
        process.start()
    answers = [results.get(timeout=300) for _ in writers]
    done.set()
    answers += [results.get(timeout=300) for _ in others]
    for process in writers + others:
        process.join(timeout=60)
        assert process.exitcode == 0
    by_role = {answer[0] + str(answer[1]): answer for answer in answers if answer[0] != "reader"}
    by_role["reader"] = next(answer for answer in answers if answer[0] == "reader")
    compactions = sum(by_role[f"compactor{3 + 2 * n}"][2] for n in range(COMPACTORS))
    compaction_refusals = [status for n in range(COMPACTORS) for status in by_role[f"compactor{3 + 2 * n}"][3]]
    _, reads, forks, problems = by_role["reader"]
    assert problems == [], problems
    assert reads > 0 and forks > 0 and compactions > 0, (reads, forks, compactions)
    assert set(compaction_refusals) <= {"ABORTED"}, compaction_refusals

    landed = sorted((w, t) for w in range(WRITERS) for t in by_role[f"writer{w}"][2])
    assert all(status == "ABORTED" for w in range(WRITERS) for _, status in by_role[f"writer{w}"][3])
    full = _pairs(service.get_messages(SESSION))
    assert sorted(full) == landed  # V9: every interaction told it landed is there once; no refused one is
    _in_order(full, contiguous=True)
    active = _pairs(service.get_active_messages(SESSION), active=True)
    assert active == full[len(full) - len(active) :]  # V12: the active view is the newest of the full history
    assert service.version(SESSION) == len(landed) + compactions  # V8: every write counted, none twice
    summaries = [m for m in service.get_messages(SESSION) if m.text.startswith("summary of ")]
    assert len(summaries) == compactions  # V11: each compaction's summary at its boundary, once
