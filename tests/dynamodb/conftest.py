"""Fixtures for the DynamoDB-only tests: both moto backends, or the moto server alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import STORE_BACKENDS, StoreFactory

DYNAMO_BACKENDS = ["dynamodb-inprocess", "dynamodb-server"]


@pytest.fixture(params=DYNAMO_BACKENDS)
def make_dynamo(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """A factory of fresh DynamoDB stores, once per moto backend."""
    yield from STORE_BACKENDS[request.param](request)


@pytest.fixture
def make_server_dynamo(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """A factory of fresh stores on the moto server only (for the few large-state tests)."""
    yield from STORE_BACKENDS["dynamodb-server"](request)
