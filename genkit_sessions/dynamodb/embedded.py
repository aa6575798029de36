"""An embedded DynamoDB for demos and tests: a moto server on a free 127.0.0.1 port.

Needs the ``moto[server]`` extra; no AWS account is involved.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

from genkit_sessions.dynamodb.store import DynamoDBSessionStore, build_client
from genkit_sessions.dynamodb.table import create_table
from genkit_sessions.errors import GenkitError, Status

__all__ = ["demo_store", "free_port", "moto_server"]

_FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_session_token": "testing"}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Run a moto server on a free loopback port; yields its endpoint URL and stops it on exit."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            "the embedded DynamoDB needs moto's server: pip install 'genkit-sessions[embedded]', "
            "or pass an endpoint URL of a running DynamoDB",
        ) from exc
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request log lines in the demo's output
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def local_client(endpoint_url: str, **options: Any) -> Any:
    """A client for a local endpoint (moto, DynamoDB Local), with placeholder credentials unless real ones are set."""
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return build_client(None, endpoint_url, **options)
    return build_client(None, endpoint_url, client_options=_FAKE_CREDENTIALS, **options)


@contextlib.contextmanager
def demo_store(endpoint_url: str | None, *, client: Any = None) -> Iterator[DynamoDBSessionStore]:
    """A store on a fresh table: at ``endpoint_url`` (through ``client`` when given), or on an embedded
    moto server started (and stopped) here when it is None."""
    with contextlib.ExitStack() as stack:
        if endpoint_url is None:
            endpoint_url = stack.enter_context(moto_server())
            client = local_client(endpoint_url)
        elif client is None:
            client = build_client(endpoint_url=endpoint_url)
        table = f"genkit-sessions-demo-{uuid.uuid4().hex[:8]}"
        create_table(client, table)
        store = stack.enter_context(DynamoDBSessionStore(table, client))
        yield store
