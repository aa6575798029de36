"""The moto server :class:`~genkit_sessions.dynamodb.local.LocalDynamoDB` runs in a subprocess.

``python -m genkit_sessions.dynamodb._local_moto [--rollback stock|keyed]`` serves
moto's WSGI application (what ``python -m moto.server`` serves) on a free
127.0.0.1 port, prints the port on one line of stdout, and serves until its
stdin reaches end of file (the parent closed it, or died), so no server
outlives the process that started it.

The HTTP front is an HTTP/1.1 ``ThreadingHTTPServer`` that keeps connections
alive, where werkzeug's development server (moto's own) closes every
connection after one answer: the proxy then reuses one connection instead of
paying a TCP handshake and a new server thread per request, which is about
half of what a small request costs moto's server.

``--rollback keyed`` replaces what makes moto's TransactWriteItems slow on a
big table: moto deep-copies every table a transaction touches, once per
action, so that it can put the copy back when an action fails. Keyed, a
transaction saves a deep copy of just the items its actions name and, when it
fails, puts those items back (removing the ones that did not exist), so a
failed transaction still changes nothing, at a cost that does not grow with
the table. A transaction the undo log cannot describe (an unknown table, an
action without its key) runs moto's own deep copy. Stream records of a failed
transaction are not taken back (the stock copy would take them back).

More patches, always installed, change no answer, only what an answer
costs: for every Query of a table (not of an index), moto sorts every item of
the table and then keeps the ones under the asked partition key, so each Query
costs the whole table's size; patched, it starts from the asked partition's own
items (what DynamoDB reads), and moto's sorting, conditions, limits, paging and
filters run on them unchanged. Every page of a Scan sorts the whole table, and
moto's key objects compute both sides' values on each comparison; patched, the
same sort computes each item's key values once (a Scan of a 220,000-item table
took about 7 s a page). And moto searches every response body with a
regular expression for an XML ``<RequestId>`` to fill in, which for a JSON body
(every DynamoDB answer) finds nothing after scanning it character by character,
about half of what a 400 KB item costs to serve; patched, a body without the
tag is left alone at once. moto's JSON serializer writes each item attribute
value by walking its ten-member shape through an attribute picker that tries
two spellings of each member name (serializing the answer of a BatchGetItem
of 12 items, 660 KB, took 4.8 ms, where patched it takes 2.1 ms): a value
of the plain shapes (S, N, B, SS, NS, BS, M, L, NULL, BOOL) is written
directly, and anything else still goes through moto's serializer.
"""

from __future__ import annotations

import argparse
import copy
import http.server
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["fast_attribute_serializer", "install_answer_preserving_patches", "install_keyed_rollback", "main"]


class _Guard(threading.local):
    active = False
    partition: tuple[Any, Any] | None = None  # (table, hash value) of the Query running on this thread


_guard = _Guard()


class _CopyShim:
    """Stands in for the ``copy`` module inside moto's DynamoDB backend.

    While a keyed undo log guards the running transaction, the deep copy of a
    table that moto takes for its rollback is the table itself (so moto's
    rollback puts the same table back: a no-op); everything else is a real copy.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        from moto.dynamodb.models.table import Table

        if _guard.active and isinstance(value, Table):
            return value
        return copy.deepcopy(value, memo)


_Entry = tuple[Any, Any, Any, Any]  # (table, hash value, range value or None, saved item or None)


def _undo_log(backend: Any, transact_items: list[dict[str, Any]]) -> list[_Entry] | None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    entries: list[_Entry] = []
    try:
        for action in transact_items:
            if len(action) != 1:
                return None
            kind, body = next(iter(action.items()))
            table = backend.tables.get(body.get("TableName"))
            if table is None:
                return None
            key = body.get("Item") if kind == "Put" else body.get("Key")
            if not isinstance(key, dict) or table.hash_key_attr not in key:
                return None
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = None
            if table.range_key_attr is not None:
                if table.range_key_attr not in key:
                    return None
                range_value = DynamoType(key[table.range_key_attr])
                bucket = table.items.get(hash_value)
                current = bucket.get(range_value) if bucket is not None else None
            else:
                current = table.items.get(hash_value)
            entries.append((table, hash_value, range_value, copy.deepcopy(current)))
    except Exception:
        return None
    return entries


def _restore(entries: list[_Entry]) -> None:
    for table, hash_value, range_value, saved in reversed(entries):  # the first saved copy of a key wins
        if range_value is None:
            if saved is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = saved
        else:
            bucket = table.items[hash_value]
            if saved is None:
                bucket.pop(range_value, None)
            else:
                bucket[range_value] = saved


def install_keyed_rollback() -> None:
    """Patch moto's DynamoDB backend (in this process) to roll transactions back by key (see the module doc)."""
    import moto.dynamodb.models as models

    backend_class: Any = models.DynamoDBBackend
    if getattr(backend_class.transact_write_items, "_keyed_rollback", False):
        return
    stock = backend_class.transact_write_items
    setattr(models, "copy", _CopyShim())  # noqa: B010 (a module attribute mypy would type as a module)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        entries = _undo_log(self, transact_items)
        if entries is None:
            stock(self, transact_items)
            return
        _guard.active = True
        try:
            stock(self, transact_items)
        except BaseException:
            _restore(entries)
            raise
        finally:
            _guard.active = False

    transact_write_items._keyed_rollback = True  # type: ignore[attr-defined]
    backend_class.transact_write_items = transact_write_items


def install_answer_preserving_patches() -> None:
    """Patch moto (in this process) so that a Query of a table reads just the asked partition's items
    instead of sorting the whole table first, a Scan sorts the table on key values computed once an
    item, a response body without an XML ``<RequestId>`` is not searched for one, and DynamoDB's item
    attribute values are serialized directly (see the module doc). Every answer stays the same."""
    from moto.core.responses import BaseResponse
    from moto.dynamodb.models.table import Table

    stock_enrich = BaseResponse._enrich_response

    def enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
        if isinstance(body, str) and "<RequestId>" not in body:
            return stock_enrich(headers, "")[0], body  # the headers exactly as moto sets them
        return stock_enrich(headers, body)

    if not getattr(BaseResponse._enrich_response, "_answer_preserving", False):
        enrich_response._answer_preserving = True  # type: ignore[attr-defined]
        BaseResponse._enrich_response = staticmethod(enrich_response)  # type: ignore[method-assign]

    _install_fast_attribute_serializer()
    table_class: Any = Table
    if getattr(table_class.query, "_answer_preserving", False):
        return
    stock_query = table_class.query

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        if index_name or hash_key is None or self.range_key_attr is None:
            return stock_query(self, hash_key, *args, **kwargs)
        _guard.partition = (self, hash_key)
        try:
            return stock_query(self, hash_key, *args, **kwargs)
        finally:
            _guard.partition = None

    def all_items(self: Any) -> Any:
        partition = _guard.partition
        if partition is None or partition[0] is not self:
            return _sorted_by_key_values(self)
        _guard.partition = None  # once: anything else this Query asks for is the whole table, as before
        return list(self.items.get(partition[1], {}).values())

    query._answer_preserving = True  # type: ignore[attr-defined]
    table_class.query, table_class.all_items = query, all_items


class _Unusual(Exception):
    """An attribute value the fast serializer leaves to moto's own (anything but the plain shapes)."""


_SCALARS = frozenset({"S", "N"})
_STRING_SETS = frozenset({"SS", "NS"})


def _attribute_json(base64: Callable[[Any], str], value: Any) -> dict[str, Any]:
    """An ``AttributeValue`` as moto's JSON serializer writes it: members that are None left out, blobs
    in base64, maps and lists converted member by member; :class:`_Unusual` for anything else."""
    if type(value) is not dict:
        raise _Unusual
    out: dict[str, Any] = {}
    for name, member in value.items():
        if member is None:
            continue
        kind = type(member)
        if name in _SCALARS and kind is str:
            out[name] = member
        elif name == "B" and kind in (bytes, str):
            out[name] = base64(member)
        elif name in _STRING_SETS and kind is list and all(type(x) is str for x in member):
            out[name] = list(member)
        elif name == "BS" and kind is list and all(type(x) in (bytes, str) for x in member):
            out[name] = [base64(x) for x in member]
        elif name == "M" and kind is dict:
            out[name] = {k: _attribute_json(base64, v) for k, v in member.items() if v is not None}
        elif name == "L" and kind is list:
            out[name] = [_attribute_json(base64, v) for v in member]
        elif name in ("NULL", "BOOL") and kind is bool:
            out[name] = member
        else:
            raise _Unusual
    return out


def fast_attribute_serializer(stock: type[Any]) -> type[Any]:
    """A subclass of moto's JSON response serializer ``stock`` that writes each item attribute value
    directly instead of walking its ten-member shape through moto's attribute picker, which tries two
    spellings of every member name; any value but the plain shapes goes through ``stock``. The body
    parses to the same JSON."""

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and shape.name == "AttributeValue":
            try:
                serialized[self.get_serialized_name(shape, key)] = _attribute_json(self._base64, value)
                return
            except _Unusual:
                pass
        stock._serialize_type_structure(self, serialized, value, shape, key)

    return type(f"Fast{stock.__name__}", (stock,), {"_serialize_type_structure": serialize_structure})


def _install_fast_attribute_serializer() -> None:
    import moto.core.responses

    responses: Any = moto.core.responses
    stock_lookup = getattr(responses, "get_serializer_class", None)
    if stock_lookup is None or getattr(stock_lookup, "_answer_preserving", False):
        return  # a moto without the generic serializer (before 5.1), or already patched
    fast: dict[type[Any], type[Any]] = {}

    def get_serializer_class(service_name: str, protocol: str) -> type[Any]:
        stock: type[Any] = stock_lookup(service_name, protocol)
        if service_name != "dynamodb":
            return stock
        if stock not in fast:
            fast[stock] = fast_attribute_serializer(stock)
        return fast[stock]

    get_serializer_class._answer_preserving = True  # type: ignore[attr-defined]
    responses.get_serializer_class = get_serializer_class


def _sorted_by_key_values(table: Any) -> list[Any]:
    """Every item of ``table`` in moto's own order: sorted by hash key, then range key.

    moto sorts with its key objects, whose comparisons compute the Python value of both sides on each
    of the n log n comparisons; here each item's key values are computed once. A table's key types are
    fixed by its schema, so equal values mean equal keys and the order is the same."""
    items: list[Any] = []
    for bucket in table.items.values():
        if table.range_key_attr:
            items.extend(bucket.values())
        else:
            items.append(bucket)
    return sorted(
        items,
        key=lambda x: (x.hash_key.cast_value, x.range_key.cast_value) if x.range_key else x.hash_key.cast_value,
    )


class _Front(http.server.BaseHTTPRequestHandler):
    """One keep-alive connection: each request becomes a WSGI environ for moto's application."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    app: Any = None

    def _serve(self) -> None:
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        builder = EnvironBuilder(
            path=self.path,
            method=self.command,
            headers=list(self.headers.items()),
            data=body,
            environ_overrides={"REMOTE_ADDR": self.client_address[0], "SERVER_PROTOCOL": "HTTP/1.1"},
        )
        try:
            environ = builder.get_environ()
        finally:
            builder.close()
        app_iter, status, headers = run_wsgi_app(self.app, environ, buffered=True)
        try:
            payload = b"".join(app_iter)
        finally:
            close = getattr(app_iter, "close", None)
            if close is not None:
                close()
        code, _, reason = status.partition(" ")
        self.send_response(int(code), reason)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _exit_when_stdin_closes() -> None:
    try:
        while sys.stdin.buffer.read(65536):
            pass
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> None:
    """Serve moto on 127.0.0.1; print the bound port; exit when stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rollback", choices=("stock", "keyed"), default="stock")
    args = parser.parse_args(argv)

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    install_answer_preserving_patches()
    if args.rollback == "keyed":
        install_keyed_rollback()
    _Front.app = DomainDispatcherApplication(create_backend_app)
    server = http.server.ThreadingHTTPServer((args.host, args.port), _Front)
    server.daemon_threads = True
    threading.Thread(target=_exit_when_stdin_closes, name="stdin-watch", daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
