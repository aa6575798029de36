"""The one call path: every DynamoDB request the store makes, and the two drivers that send them.

The store's logic is written once, free of I/O, as generators ("steps") that
yield the requests they need and are sent the answers (the sans-I/O style of
``h11``): a :class:`Call` is one DynamoDB operation, a :class:`Sleep` a
backoff, a :class:`Pause` a turn for the event loop between slices of the
store's own work (a long history's decoding), an :class:`Inflate` a long
history's blobs inflated on a second core while the steps parse.
:func:`run_sync` drives steps with a boto3 client (blocking) and
:func:`run_async` with an aiobotocore client (non-blocking), so no rule and no
request is written twice. A failed call is thrown back into the steps at the
``yield``, where :func:`call` maps it to a :class:`GenkitError` once (S12).
When the caller's task is cancelled, :func:`run_async` throws :class:`Abandoned`
into the steps where they wait, so a write that must not be left half-done (a
staged write) takes its own steps back before the cancellation goes on.

The helpers here hold the request shapes every other module shares: single
calls, batched reads and writes that resend unprocessed keys, and the
transaction whose refusal is told apart from a failure.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import zlib
from collections.abc import Generator, Sequence
from typing import Any, TypeVar

import attrs
from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, cancellation_codes, error_code, map_error

__all__ = [
    "MAX_BATCH_GET",
    "MAX_BATCH_WRITE",
    "Abandoned",
    "PAUSE",
    "Call",
    "Cancelled",
    "Inflate",
    "Inflating",
    "Pause",
    "Sleep",
    "Steps",
    "batch_get",
    "batch_write",
    "call",
    "run_async",
    "run_pure",
    "run_sync",
    "transact",
    "write_one",
]

T = TypeVar("T")

MAX_BATCH_WRITE = 25
MAX_BATCH_GET = 100

_REFUSALS_THAT_ARE_FAILURES = ("ThrottlingError", "ProvisionedThroughputExceeded", "ValidationError")


@attrs.frozen
class Call:
    """One DynamoDB operation (``"GetItem"``, ...) with its parameters, table name included."""

    operation: str
    params: dict[str, Any]


@attrs.frozen
class Sleep:
    """Wait before the next request (a backoff)."""

    seconds: float


@attrs.frozen
class Pause:
    """Give the event loop a turn before the steps go on: yielded between slices of work that would
    otherwise hold it for long (inflating, parsing and building a long history). The blocking driver
    goes straight on."""


PAUSE = Pause()


@attrs.frozen(eq=False)
class Inflate:
    """Start inflating these zlib streams, in order, beside the steps: a long history's blobs inflate on a
    second core while the steps parse the ones already inflated (zlib lets go of the interpreter lock
    while it inflates). The blocking driver answers with an :class:`Inflating`; the async driver and
    :func:`run_pure` answer None, and the steps inflate a slice at a time between turns of the loop."""

    streams: tuple[bytes, ...]


class Inflating:
    """Streams inflated in order on a thread of their own; :meth:`result` waits for one of them."""

    def __init__(self, streams: tuple[bytes, ...]) -> None:
        self._streams = streams
        self._done: list[bytes | Exception | None] = [None] * len(streams)
        self._ready = [threading.Event() for _ in streams]
        threading.Thread(target=self._inflate_all, name="genkit-sessions-inflate", daemon=True).start()

    def _inflate_all(self) -> None:
        for index, stream in enumerate(self._streams):
            try:
                # An output buffer as large as a page usually inflates to, so zlib runs in one call that
                # never takes the interpreter lock back to grow its buffer.
                self._done[index] = zlib.decompress(stream, bufsize=max(len(stream) * _RATIO, 1024))
            except Exception as exc:  # zlib.error for a damaged stream; raised again by result()
                self._done[index] = exc
            self._ready[index].set()

    def result(self, index: int) -> bytes:
        """The inflated stream ``index``; raises what inflating it raised (``zlib.error`` for one that
        does not inflate)."""
        self._ready[index].wait()
        done = self._done[index]
        if isinstance(done, Exception):
            raise done
        assert done is not None
        return done


_RATIO = 4
"""About how many times larger a page of a chat is once inflated (its prose compresses about 3:1)."""

Request = Call | Sleep | Pause | Inflate
Steps = Generator[Request, Any, T]
"""Store logic: yields requests, is sent each answer (a dict, or None after a sleep), returns a result."""


class Cancelled(Exception):
    """A conditional write the backend refused (a lost race), with the per-action reason codes."""

    def __init__(self, codes: Sequence[str]) -> None:
        super().__init__(", ".join(codes))
        self.codes = list(codes)
        self.after_lost_answer = False
        """Set when a resend with the same token, after an answer was lost, was refused: the first send may
        have landed."""

    def failed(self, index: int) -> bool:
        """Whether action ``index`` of the transaction failed its condition."""
        return index < len(self.codes) and self.codes[index] == "ConditionalCheckFailed"


class Abandoned(BaseException):
    """Thrown into the steps when the caller's task was cancelled: the request they wait on may or may
    not have been applied (it was in flight), or was never sent (``sent`` False).

    A BaseException, like the cancellation it stands for, so no ``except Exception`` in the steps takes
    it for a failure to retry. Steps that catch it to take a half-done write back make their requests
    (the driver sends them) and raise it again; the caller then gets its ``CancelledError``."""

    def __init__(self, sent: bool) -> None:
        super().__init__("the caller's task was cancelled" + ("" if sent else " before the request was sent"))
        self.sent = sent


def _method_name(operation: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")


def _advance(steps: Steps[T], answer: Any, failure: BaseException | None) -> tuple[bool, Any]:
    """Send the last answer (or throw its failure) into ``steps``: ``(True, result)`` when they finished,
    else ``(False, next request)``."""
    try:
        return False, (steps.throw(failure) if failure is not None else steps.send(answer))
    except StopIteration as done:
        return True, done.value


def run_pure(steps: Steps[T]) -> T:
    """Run steps that make no request (pure work that only pauses, or inflates) to their result at once."""
    while True:
        try:
            request = next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if not isinstance(request, (Pause, Inflate)):  # each answered None: an Inflate is left to the steps
            steps.close()
            raise TypeError(f"pure steps made a request: {request!r}")


def run_sync(steps: Steps[T], client: Any) -> T:
    """Drive ``steps`` with a blocking boto3 client."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        finished, request = _advance(steps, answer, failure)
        if finished:
            return request  # type: ignore[no-any-return]
        answer, failure = None, None
        if isinstance(request, Pause):
            continue
        if isinstance(request, Inflate):
            try:
                answer = Inflating(request.streams)
            except RuntimeError:  # no thread to be had: the steps inflate the streams themselves
                answer = None
            continue
        if isinstance(request, Sleep):
            time.sleep(request.seconds)
            continue
        try:
            answer = getattr(client, _method_name(request.operation))(**request.params)
        except BACKEND_ERRORS as exc:
            failure = exc


async def run_async(steps: Steps[T], client: Any, gate: asyncio.Semaphore | None = None) -> T:
    """Drive ``steps`` with a non-blocking aiobotocore client, on the running event loop.

    The loop gets a turn between the store's own work and the client's: before each request is
    built and signed, and after each answer is parsed, so no one callback holds the loop for both
    (with many turns in flight, a save's encoding and its request building were the longest step).

    ``gate`` (one per client and loop, as many places as the client has connections) is held while a
    request is built, sent and answered: with more turns in flight than connections, the others wait
    before building theirs, not with a built and signed request queued for a connection (about 170
    objects of the client's each, which every full collection of the garbage collector visits).

    A cancellation of the caller's task is thrown into the steps as :class:`Abandoned` at the request
    it interrupted (or, when it came just after an answer, at the next request, with the answer
    delivered first); the requests the steps then make to take their write back are sent, and the
    ``CancelledError`` is raised when they end. A second cancellation stops at once."""
    answer: Any = None
    failure: BaseException | None = None
    cancelled: asyncio.CancelledError | None = None
    abandon_next = False
    while True:
        try:
            finished, request = _advance(steps, answer, failure)
        except Abandoned:
            assert cancelled is not None
            raise cancelled from None
        if finished:
            if cancelled is not None:
                raise cancelled
            return request  # type: ignore[no-any-return]
        answer, failure = None, None
        if abandon_next:  # cancelled after the last answer: this request is not sent
            abandon_next, failure = False, Abandoned(sent=False)
            continue
        sent = held = False
        try:
            if isinstance(request, Inflate):
                continue  # answered None: the steps inflate a slice at a time, the loop turning between
            if isinstance(request, (Sleep, Pause)):
                await asyncio.sleep(request.seconds if isinstance(request, Sleep) else 0)
                continue
            await asyncio.sleep(0)
            if gate is not None:
                await gate.acquire()
                held = True
            sent = True
            answer = await getattr(client, _method_name(request.operation))(**request.params)
        except BACKEND_ERRORS as exc:
            failure = exc
        except asyncio.CancelledError as exc:
            if cancelled is not None:
                raise
            cancelled, failure = exc, Abandoned(sent=sent)
            continue
        finally:
            if held and gate is not None:
                gate.release()
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError as exc:
            if cancelled is not None:
                raise
            cancelled, abandon_next = exc, True


def call(operation: str, table: str, **params: Any) -> Steps[dict[str, Any]]:
    """One request; a backend failure becomes a status-carrying GenkitError naming the operation."""
    if operation not in ("BatchGetItem", "BatchWriteItem", "TransactWriteItems"):
        params["TableName"] = table
    try:
        answer: dict[str, Any] = yield Call(operation, params)
    except BACKEND_ERRORS as exc:
        raise map_error(exc, operation, table) from exc
    return answer


def write_one(table: str, action: dict[str, Any], **extra: Any) -> Steps[dict[str, Any]]:
    """A transaction action sent as a single conditional write (with ``extra`` request parameters, such as
    ``ReturnValues``); returns the answer. A refused condition is :class:`Cancelled`."""
    kind, request = next(iter(action.items()))
    operation = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}[kind]
    try:
        answer: dict[str, Any] = yield Call(operation, {**request, **extra})
        return answer
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            raise Cancelled(["ConditionalCheckFailed"]) from exc
        raise map_error(exc, operation, table) from exc
    except BACKEND_ERRORS as exc:
        raise map_error(exc, operation, table) from exc


def transact(table: str, actions: list[dict[str, Any]], token: str | None = None) -> Steps[None]:
    """One TransactWriteItems. A refusal (a condition failed, a conflict) is :class:`Cancelled`; anything
    else, throttling and validation inside the cancellation included, is a GenkitError.

    ``token`` is the ClientRequestToken: DynamoDB answers a resend with the same token within 10 minutes
    with the first answer, so a retry after a lost answer recognises its own success."""
    params: dict[str, Any] = {"TransactItems": actions}
    if token is not None:
        params["ClientRequestToken"] = token
    try:
        yield Call("TransactWriteItems", params)
    except ClientError as exc:
        code = error_code(exc)
        if code == "TransactionCanceledException":
            codes = cancellation_codes(exc)
            if any(c in _REFUSALS_THAT_ARE_FAILURES or c == "ItemCollectionSizeLimitExceeded" for c in codes):
                raise map_error(exc, "TransactWriteItems", table) from exc
            raise Cancelled(codes) from exc
        if code in ("TransactionConflictException", "TransactionInProgressException"):
            raise Cancelled([]) from exc
        raise map_error(exc, "TransactWriteItems", table) from exc
    except BACKEND_ERRORS as exc:
        raise map_error(exc, "TransactWriteItems", table) from exc


def batch_get(
    table: str, keys: Sequence[dict[str, Any]], projection: str | None = None
) -> Steps[dict[tuple[str, str], dict[str, Any]]]:
    """Strongly consistent BatchGetItems of ``keys`` (100 per call), resending unprocessed keys with backoff."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    pending = list({(k["pk"]["S"], k["sk"]["S"]): k for k in keys}.values())
    delay = 0.02
    while pending:
        batch, pending = pending[:MAX_BATCH_GET], pending[MAX_BATCH_GET:]
        request: dict[str, Any] = {"Keys": batch, "ConsistentRead": True}
        if projection:
            request["ProjectionExpression"] = projection
        answer = yield from call("BatchGetItem", table, RequestItems={table: request})
        for item in answer.get("Responses", {}).get(table, []):
            found[(item["pk"]["S"], item["sk"]["S"])] = item
        unprocessed = answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
        if unprocessed:
            pending = list(unprocessed) + pending
            yield Sleep(random.uniform(0, delay))
            delay = min(delay * 2, 1.0)
    return found


def batch_write(table: str, requests: Sequence[dict[str, Any]]) -> Steps[None]:
    """BatchWriteItems of Put and Delete requests (25 per call), resending unprocessed ones with backoff."""
    delay = 0.02
    pending = list(requests)
    while pending:
        batch, pending = pending[:MAX_BATCH_WRITE], pending[MAX_BATCH_WRITE:]
        answer = yield from call("BatchWriteItem", table, RequestItems={table: batch})
        unprocessed = answer.get("UnprocessedItems", {}).get(table, [])
        if unprocessed:
            pending = list(unprocessed) + pending
            yield Sleep(random.uniform(0, delay))
            delay = min(delay * 2, 1.0)


def get_item(table: str, key: dict[str, Any], projection: str | None = None) -> Steps[dict[str, Any] | None]:
    """A strongly consistent GetItem; None when there is no such item."""
    params: dict[str, Any] = {"Key": key, "ConsistentRead": True}
    if projection:
        params["ProjectionExpression"] = projection
    answer = yield from call("GetItem", table, **params)
    item: dict[str, Any] | None = answer.get("Item")
    return item


def query_partition(
    table: str, pk: dict[str, Any], projection: str | None = None, names: dict[str, str] | None = None
) -> Steps[list[dict[str, Any]]]:
    """Every item of one partition: a strongly consistent Query, following its pages."""
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": pk},
        "ConsistentRead": True,
    }
    if projection:
        params["ProjectionExpression"] = projection
    if names:
        params["ExpressionAttributeNames"] = names
    while True:
        page = yield from call("Query", table, **dict(params))
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
