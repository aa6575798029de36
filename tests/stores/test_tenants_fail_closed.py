"""Tenants fail closed (issue 13): a context that is not a mapping, a tenant that is not a non-empty
string, or a misspelt tenant key is INVALID_ARGUMENT, never the default tenant; a store made with
``require_tenant=True`` refuses a context naming no tenant; a store made with defaults stays usable
without any context (single-tenant use)."""

from __future__ import annotations

from typing import Any

import pytest

from genkit_sessions import AgentInit, GenkitError, SessionResolver, SessionSnapshot, SessionState, SessionStoreOptions


def write(store: Any, snapshot_id: str = "a", context: Any = None) -> Any:
    snapshot = SessionSnapshot(snapshot_id, state=SessionState(session_id="s"))
    return store.save_snapshot(snapshot_id, lambda _: snapshot, context=context)


def refused(call: Any, fragment: str) -> None:
    with pytest.raises(GenkitError) as caught:
        call()
    assert caught.value.status == "INVALID_ARGUMENT" and fragment in caught.value.message, caught.value


@pytest.mark.parametrize("context", ["acme", ["tenant", "acme"], 7, b"acme"])
def test_a_context_that_is_not_a_mapping_is_invalid_argument_on_every_method(store: Any, context: Any) -> None:
    refused(lambda: write(store, context=context), "context must be a mapping")
    refused(lambda: store.get_snapshot(snapshot_id="a", context=context), "context must be a mapping")
    refused(lambda: store.list_snapshots("s", context=context), "context must be a mapping")
    refused(lambda: store.delete_session("s", context=context), "context must be a mapping")
    assert store.get_snapshot(snapshot_id="a") is None


@pytest.mark.parametrize("tenant", [1, True, 1.5, ["acme"], ""])
def test_a_tenant_that_is_not_a_non_empty_string_is_invalid_argument(store: Any, tenant: Any) -> None:
    refused(lambda: write(store, context={"tenant": tenant}), "must be a non-empty string")


def test_tenant_values_never_collide_after_str(store: Any) -> None:
    write(store, context={"tenant": "1"})
    refused(lambda: store.get_snapshot(snapshot_id="a", context={"tenant": 1}), "non-empty string")
    refused(lambda: store.get_snapshot(snapshot_id="a", context={"tenant": True}), "non-empty string")
    assert store.get_snapshot(snapshot_id="a", context={"tenant": "True"}) is None


@pytest.mark.parametrize("key", ["tenantId", "Tenant", "tenant_id", "TENANT-ID"])
def test_a_misspelt_tenant_key_is_invalid_argument_not_the_default_tenant(store: Any, key: str) -> None:
    refused(lambda: write(store, context={key: "acme"}), "the tenant goes under 'tenant'")
    assert store.get_snapshot(snapshot_id="a") is None


def test_data_of_a_named_tenant_is_not_readable_without_a_context(store: Any) -> None:
    write(store, context={"tenant": "acme"})
    assert store.get_snapshot(snapshot_id="a") is None
    assert store.get_snapshot(snapshot_id="a", context={"tenant": "acme"}) is not None


def test_a_store_made_with_defaults_is_usable_without_any_context(store: Any) -> None:
    write(store)
    assert store.get_snapshot(session_id="s") is not None
    assert store.get_snapshot(snapshot_id="a", context={"request": "other data"}) is not None


def test_a_store_that_requires_a_tenant_refuses_a_context_naming_none(make_store: Any) -> None:
    store = make_store(require_tenant=True)
    for context in (None, {}, {"user": "u1"}):
        refused(lambda context=context: write(store, context=context), "requires a tenant")
        refused(lambda context=context: store.get_snapshot(snapshot_id="a", context=context), "requires a tenant")
    write(store, context={"tenant": "acme"})
    assert store.get_snapshot(snapshot_id="a", context={"tenant": "acme"}) is not None


def test_resuming_a_tenants_session_without_a_context_is_refused_when_tenants_are_required(make_store: Any) -> None:
    store = make_store(require_tenant=True)
    acme = SessionStoreOptions(context={"tenant": "acme"})
    first = SessionResolver.resolve(store, True, AgentInit(), acme)
    assert first.session is not None
    first.session.save()
    with pytest.raises(GenkitError) as anonymous:  # the caller's mistake: raised, not a graceful failure
        SessionResolver.resolve(store, True, AgentInit(session_id=first.session.id))
    assert anonymous.value.status == "INVALID_ARGUMENT"
    assert "requires a tenant" in anonymous.value.message
    again = SessionResolver.resolve(store, True, AgentInit(session_id=first.session.id), acme)
    assert again.ok and again.snapshot is not None
