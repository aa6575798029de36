"""The suite on one real table: a context-manager factory hands each case a namespace of a single
DynamoDB table and deletes what the case wrote, instead of creating a table per case."""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

import genkit_sessions_conformance as conformance
from genkit_sessions.stores.protocol import Context
from genkit_sessions.stores.write_rules import default_tenant

try:
    from genkit_sessions.dynamodb import DynamoDBSessionStore, create_table
    from genkit_sessions.dynamodb.scan import scan_session_ids
    from tests.dynamodb_backends import make_client
except ImportError as exc:  # the DynamoDB store or its test backends are not there
    pytest.skip(f"genkit_sessions.dynamodb is not importable: {exc}", allow_module_level=True)

TABLE = "conformance-shared"


def _session_ids(client: Any, tenant: str) -> list[str]:
    ids: list[str] = []
    token: str | None = None
    while True:
        page = scan_session_ids(client, TABLE, tenant, limit=1000, page_token=token)
        ids += page.session_ids
        token = page.next_page_token
        if token is None:
            return ids


def test_every_case_runs_in_a_namespace_of_one_table_and_leaves_it_empty() -> None:
    from moto import mock_aws

    with mock_aws(), concurrent.futures.ThreadPoolExecutor(4) as pool:  # in-process moto: watch offloads
        client = make_client()
        create_table(client, TABLE)
        numbers = itertools.count()
        used: dict[str, Context] = {}  # namespaced tenant -> a context that names it

        @contextlib.contextmanager
        def namespaced_store() -> Iterator[DynamoDBSessionStore]:
            prefix = f"case{next(numbers)}"

            def tenant_of(context: Context) -> str:
                tenant = f"{prefix}.{default_tenant(context) or 'default'}"
                used[tenant] = context
                return tenant

            with DynamoDBSessionStore(
                TABLE, client, tenant_of=tenant_of, watch_interval=0.01, watch_max_interval=0.05, executor=pool
            ) as store:
                yield store
                for tenant, context in list(used.items()):
                    if tenant.startswith(f"{prefix}."):
                        for session_id in _session_ids(client, tenant):
                            store.delete_session(session_id, context=context)

        report = conformance.run_suite(namespaced_store, areas=["store"], store_name="one shared table")
        assert [f"{r.case.id}: {r.message}" for r in report.failures if r.case.level == "must"] == []
        assert report.count("passed") > 100
        assert client.list_tables()["TableNames"] == [TABLE]
        # What a delete leaves (a tombstone head, until DynamoDB's TTL removes it) reads as nothing.
        with DynamoDBSessionStore(TABLE, client, tenant_of=lambda context: str(context and context["t"])) as reader:
            left = {
                (tenant, session_id): (
                    reader.get_session_record(session_id, context={"t": tenant}),
                    reader.list_snapshots(session_id, context={"t": tenant}),
                )
                for tenant in used
                for session_id in _session_ids(client, tenant)
            }
        assert len(used) > 100 and all(found == (None, []) for found in left.values()), left
