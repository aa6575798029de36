"""Shared fixtures: every store test runs against every store factory registered here."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from genkit_sessions import InMemorySessionStore

StoreFactory = Callable[..., Any]


def _memory(**options: Any) -> InMemorySessionStore:
    return InMemorySessionStore(**options)


# name -> (pytest marks, fixture that yields a factory). DynamoDB factories are added by tests/dynamodb_backends.py.
STORE_BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Iterator[StoreFactory]]] = {}


def _memory_backend(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    yield _memory


STORE_BACKENDS["memory"] = _memory_backend

if importlib.util.find_spec("tests.dynamodb_backends") is not None:
    # The DynamoDB backends register themselves in STORE_BACKENDS on import.
    importlib.import_module("tests.dynamodb_backends")


@pytest.fixture(params=sorted(STORE_BACKENDS))
def make_store(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """A factory of fresh, empty stores (sync face), once per backend.

    Call it with store options such as ``tenant_of=`` or ``clock=``; every
    backend accepts those two.
    """
    yield from STORE_BACKENDS[request.param](request)


@pytest.fixture
def store(make_store: StoreFactory) -> Any:
    """A fresh, empty store of each backend."""
    return make_store()


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The cyclic garbage collector off for the test (after one collection), so an object the test lets
    go is freed only if nothing cyclic holds it."""
    import gc

    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
