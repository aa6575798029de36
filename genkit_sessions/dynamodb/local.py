"""A local DynamoDB as atomic as AWS, for tests and benchmarks: moto behind a loopback proxy.

:class:`LocalDynamoDB` runs a moto DynamoDB server (in this process, or with
``process=True`` in a subprocess, so that a benchmark's event loop does not
share its GIL) and puts an HTTP proxy of its own on 127.0.0.1 in front of it.
Point clients at :attr:`LocalDynamoDB.endpoint_url` (or take one from
:meth:`LocalDynamoDB.client`). The proxy makes moto behave like DynamoDB where
stock moto does not, and lets a test break the network on purpose:

- **It serialises requests to moto.** moto is not thread-safe: its
  TransactWriteItems deep-copies a table while another request writes to it.
  One request at a time reaches moto, so every conditional write and every
  transaction is atomic, as on DynamoDB. What a request waits for before it is
  forwarded (the latency below) is not serialised.
- **It honours TransactWriteItems' ``ClientRequestToken``** for 10 minutes
  (``idempotency_window``), as AWS does and moto does not: a repeat with the
  same token and the same parameters answers the original success without
  applying anything; the same token with other parameters is a 400
  ``IdempotentParameterMismatchException``. Only successful answers are kept.
  botocore fills the token in itself, so a transaction botocore resends after
  a lost answer applies once.
- **Latency**: ``latency`` seconds of round-trip delay before every request
  (outside the serialisation, so concurrent requests overlap as on a network).
- **Faults**: :meth:`~LocalDynamoDB.lose_answer` applies a request and closes
  the connection without answering (botocore sees a connection error and, in
  its retry modes, resends it: the lost-answer case); :meth:`~LocalDynamoDB.fail`
  answers an error without applying.
- **A log** of the operations it saw (:meth:`~LocalDynamoDB.operations`) and of
  the time moto spent on each request it forwarded (:meth:`~LocalDynamoDB.forwards`).

Why an asyncio server on its own thread rather than a ``ThreadingHTTPServer``:
a benchmark opens hundreds or thousands of keep-alive connections at once. On
one event loop each is a few kilobytes and each latency delay a timer, where a
threaded server needs a thread per connection (a thousand threads contending
for the GIL of the process under test, each sleeping on its own). The
serialisation is one :class:`asyncio.Lock` held only around the exchange with
moto, the parsing is a small HTTP/1.1 subset (``Content-Length`` and chunked
bodies, ``Expect: 100-continue``, keep-alive unless the client asks to close),
and the proxy's Python work is the only thing it adds to the calling process.

Needs the ``moto[server]`` extra (``pip install 'genkit-sessions[embedded]'``).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal, NamedTuple

__all__ = ["Forward", "LocalDynamoDB", "Predicate", "placeholder_client"]

Predicate = Callable[[dict[str, Any]], bool]
"""A test on the decoded JSON body of a request (``{"TableName": ..., "Item": ...}``)."""

_TARGET_PREFIX = "DynamoDB_20120810."
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_JSON = "application/x-amz-json-1.0"
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "expect",
    }
)
_HEAD_LIMIT = 1 << 20
_START_TIMEOUT = 60.0
_REASONS = {
    200: "OK",
    400: "Bad Request",
    413: "Payload Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class Forward(NamedTuple):
    """One request the proxy forwarded to moto: its operation, when (``time.perf_counter()``) and how long moto took."""

    operation: str
    started: float
    seconds: float


class _Headers:
    """HTTP header fields in their order, looked up without regard to case."""

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self.fields = fields

    def get(self, name: str, default: str | None = None) -> str | None:
        name = name.lower()
        for key, value in self.fields:
            if key.lower() == name:
                return value
        return default

    def forwardable(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.fields if k.lower() not in _HOP_BY_HOP]


class _Reply(NamedTuple):
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def encode(self, keep_alive: bool) -> bytes:
        lines = [f"HTTP/1.1 {self.status} {self.reason}"]
        lines += [f"{k}: {v}" for k, v in self.headers if k.lower() not in _HOP_BY_HOP]
        lines.append(f"Content-Length: {len(self.body)}")
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


def _error_reply(status: int, code: str, message: str) -> _Reply:
    body = json.dumps({"__type": _ERROR_PREFIX + code, "message": message}).encode()
    headers = [("Content-Type", _JSON), ("x-amzn-RequestId", uuid.uuid4().hex)]
    return _Reply(status, _REASONS.get(status, "Error"), headers, body)


class _BadRequest(Exception):
    pass


def _parse_head(head: bytes) -> tuple[str, _Headers]:
    lines = head.decode("latin-1").split("\r\n")
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(f"malformed header line {line!r}")
        fields.append((name, value.strip()))
    return lines[0], _Headers(fields)


async def _read_body(reader: asyncio.StreamReader, headers: _Headers, *, until_eof: bool) -> bytes:
    encoding = headers.get("transfer-encoding")
    if encoding is not None and "chunked" in encoding.lower():
        parts: list[bytes] = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = headers.get("content-length")
    if length is not None:
        count = int(length)
        if count < 0:
            raise _BadRequest(f"negative Content-Length {length}")
        return await reader.readexactly(count)
    return await reader.read() if until_eof else b""


def _wants_keep_alive(version: str, headers: _Headers) -> bool:
    connection = (headers.get("connection") or "").lower()
    if version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _operation_of(headers: _Headers) -> str:
    target = headers.get("x-amz-target") or ""
    return target.rpartition(".")[2] if target.startswith("DynamoDB_") else ""


def _normalise(operation: str) -> str:
    name = operation.removeprefix(_TARGET_PREFIX)
    if not name or not name.isidentifier():
        raise ValueError(f"an operation name such as 'PutItem' or 'DynamoDB_20120810.PutItem', got {operation!r}")
    return name


class _Rule:
    def __init__(self, kind: Literal["lose", "fail"], operation: str, times: int, when: Predicate | None) -> None:
        self.kind = kind
        self.operation = operation
        self.remaining = times
        self.when = when
        self.reply: _Reply | None = None


class _Token(NamedTuple):
    digest: str
    expires: float
    reply: _Reply


class _Upstream:
    """The proxy's connection to moto (used under the serialisation lock; reopened when moto closes it)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    def drop(self) -> None:
        if self.conn is not None:
            self.conn[1].close()
            self.conn = None

    async def exchange(self, start_line: str, headers: _Headers, body: bytes) -> _Reply:
        fields = headers.forwardable()
        lines = [start_line, *(f"{k}: {v}" for k, v in fields), f"Content-Length: {len(body)}"]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        for _attempt in range(2):
            reused = self.conn is not None
            if self.conn is None:
                self.conn = await asyncio.open_connection(self.host, self.port, limit=_HEAD_LIMIT)
            reader, writer = self.conn
            try:
                writer.write(request)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self.drop()
                nothing_came = not isinstance(exc, asyncio.IncompleteReadError) or not exc.partial
                if reused and nothing_came:
                    continue  # a kept-alive connection moto had closed before reading: once more, on a new one
                raise
            status_line, reply_headers = _parse_head(head)
            version, _, rest = status_line.partition(" ")
            code, _, reason = rest.partition(" ")
            reply_body = await _read_body(reader, reply_headers, until_eof=True)
            if not _wants_keep_alive(version, reply_headers) or (
                reply_headers.get("content-length") is None
                and "chunked" not in (reply_headers.get("transfer-encoding") or "").lower()
            ):
                self.drop()
            return _Reply(int(code), reason, reply_headers.forwardable(), reply_body)
        raise ConnectionError("moto closed the connection twice without answering")


class LocalDynamoDB:
    """An embedded moto DynamoDB behind a loopback proxy that serialises, deduplicates, delays and breaks requests.

    ``process=True`` runs moto in a subprocess (its own GIL); otherwise it runs
    on threads of this process. ``latency`` (seconds, settable at any time) is
    added to every request before it is forwarded. ``rollback="keyed"`` (with
    ``process=True`` only) makes moto's TransactWriteItems roll back by the
    items it names instead of deep-copying every table it touches per action,
    so transactions on a big table stay fast and still atomic, and makes a
    Query of the table read just its partition where moto sorts the whole table
    first, with the same answers (see ``genkit_sessions.dynamodb._local_moto``). ``idempotency_window`` is how
    long a TransactWriteItems ``ClientRequestToken`` is remembered (AWS: 10
    minutes).

    ``start()`` (or ``with LocalDynamoDB() as ddb:``) starts it; ``stop()`` is
    idempotent and also runs at interpreter exit. Fault and log methods are
    thread-safe and take effect on the next request.
    """

    _moto_lock: asyncio.Lock  # made on the proxy's loop
    _upstream: _Upstream

    def __init__(
        self,
        *,
        process: bool = False,
        latency: float = 0.0,
        rollback: Literal["stock", "keyed"] = "stock",
        idempotency_window: float = 600.0,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be at least 0 seconds, got {latency}")
        if rollback not in ("stock", "keyed"):
            raise ValueError(f"rollback is 'stock' or 'keyed', got {rollback!r}")
        if rollback == "keyed" and not process:
            raise ValueError("rollback='keyed' patches moto, so it needs process=True (moto in its own process)")
        self.process = process
        self.latency = latency
        self.rollback = rollback
        self.idempotency_window = idempotency_window
        self._state = threading.RLock()
        self._lifecycle = threading.Lock()
        self._rules: list[_Rule] = []
        self._log: list[str] = []
        self._forwards: list[Forward] = []
        self._tokens: collections.OrderedDict[str, _Token] = collections.OrderedDict()
        self._moto_host = ""
        self._moto_port = 0
        self._moto_thread_server: Any = None
        self._moto_process: subprocess.Popen[bytes] | None = None
        self._moto_stderr: IO[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self._started = False

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> LocalDynamoDB:
        """Start moto and the proxy (a no-op when running); returns ``self``."""
        with self._lifecycle:
            if self._started:
                return self
            try:
                self._start_moto()
                self._start_proxy()
            except BaseException:
                self._shutdown()
                raise
            self._started = True
            atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stop the proxy and moto (a no-op when stopped). Everything moto held is gone."""
        with self._lifecycle:
            if not self._started:
                return
            self._started = False
            atexit.unregister(self.stop)
            self._shutdown()

    def __enter__(self) -> LocalDynamoDB:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint_url(self) -> str:
        """The proxy's URL (``http://127.0.0.1:PORT``): what clients should use."""
        if not self._started:
            raise RuntimeError("LocalDynamoDB is not running: call start() or use it as a context manager")
        return f"http://127.0.0.1:{self._port}"

    @property
    def moto_url(self) -> str:
        """moto's own URL, bypassing the proxy (no serialisation, tokens, latency or faults): to compare."""
        if not self._started:
            raise RuntimeError("LocalDynamoDB is not running: call start() or use it as a context manager")
        return f"http://{self._moto_host}:{self._moto_port}"

    def client(self, **config_overrides: Any) -> Any:
        """A boto3 DynamoDB client on the proxy: placeholder credentials, ``us-east-1``, botocore ``standard``
        retries. ``config_overrides`` are :class:`botocore.config.Config` options (``retries=...``,
        ``max_pool_connections=...``, ``read_timeout=...``) and win over those defaults."""
        return placeholder_client(self.endpoint_url, **config_overrides)

    # --- faults ---------------------------------------------------------------------------------

    def lose_answer(self, operation: str, times: int = 1, when: Predicate | None = None) -> None:
        """Apply the next ``times`` requests of ``operation`` (matching ``when``, if given), then close
        their connections without answering: the write happened, the client sees a connection error."""
        self._add_rule(_Rule("lose", _normalise(operation), _times(times), when))

    def fail(
        self,
        operation: str,
        times: int = 1,
        status: int = 500,
        code: str = "InternalServerError",
        message: str = "injected by LocalDynamoDB",
        when: Predicate | None = None,
    ) -> None:
        """Answer the next ``times`` requests of ``operation`` (matching ``when``, if given) with the error
        ``code`` and HTTP ``status``, without applying them."""
        if not 400 <= status <= 599:
            raise ValueError(f"status must be an HTTP error status (400-599), got {status}")
        rule = _Rule("fail", _normalise(operation), _times(times), when)
        rule.reply = _error_reply(status, code, message)
        self._add_rule(rule)

    def clear_faults(self) -> None:
        """Forget every fault not yet used up."""
        with self._state:
            self._rules.clear()

    def _add_rule(self, rule: _Rule) -> None:
        with self._state:
            self._rules.append(rule)

    # --- log ------------------------------------------------------------------------------------

    def operations(self) -> list[str]:
        """The DynamoDB operations of the requests the proxy received, in order (resends included)."""
        with self._state:
            return list(self._log)

    def forwards(self) -> list[Forward]:
        """The requests the proxy forwarded to moto, in order, with moto's time for each."""
        with self._state:
            return list(self._forwards)

    def reset_log(self) -> None:
        """Empty :meth:`operations` and :meth:`forwards`."""
        with self._state:
            self._log.clear()
            self._forwards.clear()

    def proxy_cpu_seconds(self) -> float:
        """CPU time the proxy's thread has used so far (its share of this process)."""
        loop = self._loop
        if loop is None or not self._started:
            raise RuntimeError("LocalDynamoDB is not running")

        async def measure() -> float:
            return time.thread_time()

        return asyncio.run_coroutine_threadsafe(measure(), loop).result(timeout=10)

    # --- moto -----------------------------------------------------------------------------------

    def _start_moto(self) -> None:
        if not self.process:
            import logging

            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            self._moto_thread_server = server
            self._moto_host, self._moto_port = server.get_host_and_port()
            return
        root = str(Path(__file__).resolve().parents[2])  # so the launcher imports whatever sys.path found here
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._moto_stderr = tempfile.TemporaryFile()  # noqa: SIM115 (open while moto runs; closed by stop)
        command = [sys.executable, "-m", "genkit_sessions.dynamodb._local_moto", "--rollback", self.rollback]
        self._moto_process = process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._moto_stderr, env=env
        )
        stdout = process.stdout
        assert stdout is not None
        port_line: list[bytes] = []
        reader = threading.Thread(target=lambda: port_line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(_START_TIMEOUT)
        line = port_line[0].strip() if port_line else b""
        if not line.isdigit():
            process.kill()
            process.wait()
            self._moto_stderr.seek(0)
            error = self._moto_stderr.read().decode(errors="replace").strip()[-2000:]
            raise RuntimeError(f"the moto subprocess did not start ({' '.join(command)}): {error or 'no output'}")
        self._moto_host, self._moto_port = "127.0.0.1", int(line)

    def _stop_moto(self) -> None:
        server, self._moto_thread_server = self._moto_thread_server, None
        if server is not None:
            server.stop()
        process, self._moto_process = self._moto_process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()  # the launcher exits when its stdin closes
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        stderr, self._moto_stderr = self._moto_stderr, None
        if stderr is not None:
            stderr.close()

    # --- proxy ----------------------------------------------------------------------------------

    def _start_proxy(self) -> None:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                server = loop.run_until_complete(self._open(loop))
            except BaseException as exc:
                failure.append(exc)
                loop.close()
                ready.set()
                return
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                server.close()
                tasks = asyncio.all_tasks(loop)
                for task in tasks:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                self._upstream.drop()
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="local-dynamodb-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]

    async def _open(self, loop: asyncio.AbstractEventLoop) -> asyncio.Server:
        self._moto_lock = asyncio.Lock()
        self._upstream = _Upstream(self._moto_host, self._moto_port)
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=4096, limit=_HEAD_LIMIT)
        self._port = server.sockets[0].getsockname()[1]
        return server

    def _stop_proxy(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)

    def _shutdown(self) -> None:
        try:
            self._stop_proxy()
        finally:
            self._stop_moto()
            with self._state:
                self._tokens.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed its connection between requests
                start_line, headers = _parse_head(head)
                parts = start_line.split(" ")
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    raise _BadRequest(f"malformed request line {start_line!r}")
                if (headers.get("expect") or "").lower() == "100-continue":
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = await _read_body(reader, headers, until_eof=False)
                keep_alive = _wants_keep_alive(parts[2], headers)
                reply = await self._handle(f"{parts[0]} {parts[1]} HTTP/1.1", headers, body)
                if reply is None:
                    return  # the answer is lost: close without a word
                writer.write(reply.encode(keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except (_BadRequest, ValueError, asyncio.LimitOverrunError):
            writer.write(_Reply(400, "Bad Request", [], b"").encode(keep_alive=False))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # stop() cancels the connections still open; ending quietly keeps asyncio from logging each
        finally:
            writer.close()

    async def _handle(self, start_line: str, headers: _Headers, body: bytes) -> _Reply | None:
        operation = _operation_of(headers)
        if operation:
            with self._state:
                self._log.append(operation)
        latency = self.latency
        if latency > 0:
            await asyncio.sleep(latency)
        decoded: list[dict[str, Any]] = []

        def request() -> dict[str, Any]:
            if not decoded:
                value = json.loads(body) if body else {}
                decoded.append(value if isinstance(value, dict) else {})
            return decoded[0]

        try:
            rule = self._take_rule(operation, request) if operation else None
        except Exception as exc:
            return _error_reply(500, "InternalServerError", f"LocalDynamoDB: a fault's `when` raised {exc!r}")
        if rule is not None and rule.reply is not None:
            return rule.reply
        async with self._moto_lock:
            try:
                reply = await self._apply(operation, start_line, headers, body, request)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                reply = _error_reply(502, "InternalServerError", f"LocalDynamoDB: moto did not answer: {exc!r}")
        return None if rule is not None else reply

    def _take_rule(self, operation: str, request: Callable[[], dict[str, Any]]) -> _Rule | None:
        with self._state:
            for rule in self._rules:
                if rule.operation == operation and (rule.when is None or rule.when(request())):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                    return rule
        return None

    async def _apply(
        self, operation: str, start_line: str, headers: _Headers, body: bytes, request: Callable[[], dict[str, Any]]
    ) -> _Reply:
        token: str | None = None
        digest = ""
        if operation == "TransactWriteItems":
            try:
                found = request().get("ClientRequestToken")
            except ValueError:
                found = None  # not JSON: moto answers it
            if isinstance(found, str) and found:
                token = found
                digest = hashlib.sha256(json.dumps(request(), sort_keys=True).encode()).hexdigest()
                remembered = self._remembered(token)
                if remembered is not None:
                    if remembered.digest != digest:
                        return _error_reply(
                            400,
                            "IdempotentParameterMismatchException",
                            "The request uses the same client token as a previous, but non-identical request.",
                        )
                    return remembered.reply._replace(
                        headers=[(k, v) for k, v in remembered.reply.headers if k.lower() != "x-amzn-requestid"]
                        + [("x-amzn-RequestId", uuid.uuid4().hex)]
                    )
        started = time.perf_counter()
        reply = await self._upstream.exchange(start_line, headers, body)
        seconds = time.perf_counter() - started
        with self._state:
            if operation:
                self._forwards.append(Forward(operation, started, seconds))
            if token is not None and 200 <= reply.status < 300:
                self._tokens[token] = _Token(digest, time.monotonic() + self.idempotency_window, reply)
                self._tokens.move_to_end(token)
        return reply

    def _remembered(self, token: str) -> _Token | None:
        now = time.monotonic()
        with self._state:
            while self._tokens:
                oldest = next(iter(self._tokens.values()))
                if oldest.expires > now:
                    break
                self._tokens.popitem(last=False)
            remembered = self._tokens.get(token)
            if remembered is not None and remembered.expires <= now:  # the window was shortened since
                del self._tokens[token]
                return None
            return remembered


def placeholder_client(endpoint_url: str, **config_overrides: Any) -> Any:
    """A boto3 DynamoDB client on a local endpoint with placeholder credentials (whatever the environment
    holds), ``us-east-1`` and botocore ``standard`` retries: what :meth:`LocalDynamoDB.client` returns."""
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    config = Config(retries={"mode": "standard"})
    if config_overrides:
        config = config.merge(Config(**config_overrides))
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        config=config,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        aws_session_token="testing",
    )


def _times(times: int) -> int:
    if times < 1:
        raise ValueError(f"times must be at least 1, got {times}")
    return times
