"""Helpers for the DynamoDB tests: prose-like states, saving, table scans, cold stores, second writers."""

from __future__ import annotations

import functools
import json
import random
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import boto3

from genkit_sessions import Message, SessionSnapshot, SessionState
from genkit_sessions.dynamodb import DynamoDBSessionStore

_VOCABULARY = (
    "the a session turn agent model user reply tool state snapshot branch leaf store table item write read "
    "context tenant message answer question weather city forecast rain sun travel plan budget hotel flight "
    "because which while after before into over under about would could should might their there where "
    "summary detail number value result error retry timeout network region partition key sort index"
)
_WORDS = _VOCABULARY.split()


def prose(rng: random.Random, size: int) -> str:
    """About ``size`` characters of text that compresses like prose (not a repeated phrase)."""
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS) if rng.random() < 0.8 else "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=6))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def noise(rng: random.Random, size: int) -> str:
    """Text that barely compresses (random letters and digits)."""
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", k=size))


def state_of(session_id: str, texts: list[str], custom: Any = None) -> SessionState:
    """A state whose messages alternate user / model with the given texts."""
    messages = tuple(Message.of_text("user" if i % 2 == 0 else "model", t) for i, t in enumerate(texts))
    return SessionState(session_id=session_id, messages=messages, custom=custom)


@functools.lru_cache(maxsize=1)
def _six_megabyte_texts() -> tuple[str, ...]:
    rng = random.Random(5)
    return tuple(noise(rng, 250_000) for _ in range(24))


def six_megabytes(session_id: str = "s") -> SessionState:
    """A state of 6 MB that barely compresses: more than one transaction holds, so its write is staged."""
    return state_of(session_id, list(_six_megabyte_texts()))


def save_new(
    store: DynamoDBSessionStore,
    snapshot_id: str,
    state: SessionState,
    parent_id: str | None = None,
    **fields: Any,
) -> SessionSnapshot:
    """Save a new snapshot and return it as stored."""
    saved = store.save_snapshot(
        snapshot_id,
        lambda _: SessionSnapshot(snapshot_id=snapshot_id, parent_id=parent_id, state=state, **fields),
    )
    assert saved is not None
    return saved


def scan(store: DynamoDBSessionStore, attributes: str | None = None) -> list[dict[str, Any]]:
    """Every item of the store's table (with just the named ``attributes``, such as ``"pk, sk"``, when given)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table_name, "ConsistentRead": True}
    if attributes is not None:
        kwargs["ProjectionExpression"] = attributes
    while True:
        page = store.client.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def cold(store: DynamoDBSessionStore, **options: Any) -> DynamoDBSessionStore:
    """Another store on the same table and client, with nothing cached."""
    return DynamoDBSessionStore(store.table_name, store.client, **options)


def left_behind(store: DynamoDBSessionStore) -> list[dict[str, Any]]:
    """Every item of the table but the bare tombstones deleted sessions leave (a head that only keeps the
    session's version, so a recreated session never reuses a version number)."""
    return [i for i in scan(store) if not (i["sk"]["S"] == "h" and "dead" in i and "del" not in i and "ids" not in i)]


def twin(store: DynamoDBSessionStore, **options: Any) -> DynamoDBSessionStore:
    """Another store on the same table, through a guarded client of its own on the same backend.

    For a second writer that runs inside a guard fault of ``store``: a fault runs while the first
    client's call holds the lock that makes moto see one request at a time, so a second call through
    that client would wait for it forever. The first call is blocked in the fault meanwhile, so moto
    still sees one request at a time.
    """
    from botocore.config import Config

    from tests.dynamodb_backends import CREDENTIALS, Guard

    client = boto3.client(
        "dynamodb",
        region_name=store.client.meta.region_name,
        endpoint_url=store.client.meta.endpoint_url,
        config=Config(retries={"mode": "standard", "total_max_attempts": 3}),
        **CREDENTIALS,
    )
    Guard().attach(client)
    return DynamoDBSessionStore(store.table_name, client, **options)


PART_PREFIX = "b\x1f"
"""How a blob part's sort key starts; it names its snapshot next: ``b␟<snapshotId>␟<tag>␟<part>``
(docs/dynamodb.md, ``␟`` is U+001F, which no valid id holds)."""


def readable_ids(store: DynamoDBSessionStore, session_ids: Iterable[str]) -> set[str]:
    """The ids of every snapshot of the sessions, as a cold store lists them; raises unless every one
    reads (``list_snapshots`` rebuilds every state, so every part they reference is there and reads)."""
    reader = cold(store)
    return {s.snapshot_id for session_id in session_ids for s in reader.list_snapshots(session_id)}


MARKER_PREFIX = "g\x1f"
"""How a staging marker's sort key starts; it names the blob whose parts it stages next:
``g␟<snapshotId>␟<tag>`` (docs/dynamodb.md)."""


def parts_left_forever(store: DynamoDBSessionStore, live: Iterable[str], *, marked_ok: bool = False) -> list[str]:
    """Sort keys of blob parts that no committed snapshot references and that will never expire.

    ``live`` are the ids of the snapshots that read (see :func:`readable_ids`). The criterion, without
    the store's codec: a part counts as referenced when its sort key names a live snapshot. That
    over-counts (a part of a failed update of a live snapshot counts as referenced) and never
    under-counts, so every part reported is unreferenced for sure. Such a part must carry an expiry
    (``exp``), or be gone; with ``marked_ok``, a part whose blob a staging marker still names (or that
    a listing create's marker lists) counts as found too (``sweep_staged`` and ``delete_session``
    remove it), for a store that held such parts before the operation.
    """
    live = set(live)
    items = scan(store, "pk, sk, exp, ks")
    marked = {item["sk"]["S"][len(MARKER_PREFIX) :] for item in items if item["sk"]["S"].startswith(MARKER_PREFIX)}
    listed = {sk for item in items for sk in listing(item)["parts"]}
    left = []
    for item in items:
        sk = item["sk"]["S"]
        if not sk.startswith(PART_PREFIX) or "exp" in item:
            continue
        snapshot_id, tag = sk.split("\x1f")[1:3]
        if snapshot_id in live or (marked_ok and (f"{snapshot_id}\x1f{tag}" in marked or sk in listed)):
            continue
        left.append(sk)
    return left


def listing(item: dict[str, Any]) -> dict[str, Any]:
    """What a listing create's marker lists (``ks``: a format byte, then zlib-compressed JSON naming the
    create ``w``, its snapshot ids and its parts' sort keys; docs/dynamodb.md); nothing for other items."""
    if "ks" not in item:
        return {"w": None, "ids": [], "parts": []}
    found: dict[str, Any] = json.loads(zlib.decompress(item["ks"]["B"][1:]))
    return found


def hidden_items_unlisted(store: DynamoDBSessionStore) -> list[str]:
    """Ids of snapshot items a listing write (a create or a restore) wrote ahead of a commit that never
    landed (no head names their ``cw``: a string, or a set of them) that no marker lists any more, so
    that nothing but a write reusing the id would ever take them back. A reader never sees them; still,
    there must be none."""
    items = scan(store, "pk, sk, cw, ks")
    listed = {i for item in items for i in listing(item)["ids"]}
    heads = {item["pk"]["S"]: item.get("cw") for item in items if item["sk"]["S"] == "h"}
    left = []
    for item in items:
        if item["sk"]["S"] != "s" or "cw" not in item:
            continue
        snapshot_id = item["pk"]["S"].partition("\x1fn\x1f")[2]
        name = item["cw"]["S"]
        created_in_session = [pk for pk, cw in heads.items() if cw is not None and name in cw.get("SS", [cw.get("S")])]
        if not created_in_session and snapshot_id not in listed:
            left.append(snapshot_id)
    return left


def inject_fault(store: DynamoDBSessionStore, index: int, kind: str) -> list[str]:
    """Make the DynamoDB call at ``index`` (counted from now) of the store's client fail; returns the
        operations seen, in order. ``throttled`` and ``internal-error`` fail it before DynamoDB applies
        anything; ``answer-lost`` lets it through and then raises a read timeout, and ``applied-500`` lets it
        through and then answers InternalServerError (HTTP 500, which AWS documents as an outcome unknown to
        the caller): either way it was applied but the caller does not know. ``outage`` fails that call and every
    call after it, as a network that goes away, or a process that dies, does: nothing the caller tries
    afterwards (taking a write back included) reaches the table."""
    from botocore.exceptions import ReadTimeoutError

    from tests.dynamodb_backends import client_error, guard_of

    guard = guard_of(store)
    seen: list[str] = []
    lost = [False]

    def before(operation: str, params: dict[str, Any]) -> None:
        seen.append(operation)
        if kind == "outage" and len(seen) > index:
            raise client_error("InternalServerError", "Internal server error", operation, http_status=500)
        if len(seen) != index + 1:
            return
        if kind == "throttled":
            raise client_error("ThrottlingException", "Rate of requests exceeds the allowed throughput.", operation)
        if kind == "internal-error":
            raise client_error("InternalServerError", "Internal server error", operation, http_status=500)
        lost[0] = True

    def after(operation: str, params: dict[str, Any]) -> None:
        if lost[0]:
            lost[0] = False
            if kind == "applied-500":
                raise client_error("InternalServerError", "Internal server error", operation, http_status=500)
            raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")

    guard.faults.append(before)
    guard.after_faults.append(after)
    return seen


class Answering:
    """An async DynamoDB client (what the store's ``aio_client=`` takes) that answers at once from a boto3
    client (in-process moto), logging each call in ``log``: the async face without a network, so the
    only turns its event loop gets are the ones the store gives."""

    def __init__(self, client: Any, log: list[str]) -> None:
        self._client = client
        self._log = log

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)

        async def call(**params: Any) -> Any:
            self._log.append(f"call {name}")
            return method(**params)

        return call
