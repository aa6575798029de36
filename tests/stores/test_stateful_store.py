"""A stateful property test: random sequences of store operations in several tenants with overlapping
ids, checked against a simple model after every step, on every store backend.

Operations: save (new snapshots, updates, rule-breaking writes), abort, heartbeat, get (by id and by
session), list, delete, restore (snapshots held, and new ones stamped by writers whose clocks
disagree), each sometimes with a bad id or a bad context. Every call may only ever end in a correct
result or a ``GenkitError`` the model predicts; a raw exception, or an error the model did not
predict, fails the test.

``GENKIT_STATEFUL_EXAMPLES`` (default 15) sets how many sequences run per backend;
``GENKIT_FUZZ_REPORT`` prints the counts (sequences, steps, GenkitErrors by status, raw exceptions).
"""

from __future__ import annotations

import collections
import os
from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from genkit_sessions import GenkitError, Message, SessionSnapshot, SessionState, SnapshotStatus
from tests.stores.machines import run_machine

EXAMPLES = int(os.environ.get("GENKIT_STATEFUL_EXAMPLES", "15"))
TENANTS = (None, "acme", "globex")
SNAPSHOT_IDS = ("a", "b", "c", "d")
RESTORE_IDS = ("r1", "r2", "r3")
SESSION_IDS = ("s1", "s2")
STATUSES = ("pending", "aborting", "completed", "failed", "aborted")
TERMINAL = {"completed", "failed", "aborted"}
BAD_IDS = ("", "  ", "x\x00y", "z" * 600)


@attrs.define
class Held:
    """What the model knows of one stored snapshot."""

    session: str
    parent: str | None
    status: str
    text: str


@attrs.define
class Tenant:
    snapshots: dict[str, Held] = attrs.Factory(dict)
    order: dict[str, list[str]] = attrs.Factory(dict)
    """Each session's snapshot ids in commit order."""
    versions: dict[str, int] = attrs.Factory(dict)
    """Each session's version (V8), kept across a deletion."""

    def leaf(self, session: str) -> str | None:
        ids = self.order.get(session, [])
        parents = {self.snapshots[i].parent for i in ids}
        return next((i for i in reversed(ids) if i not in parents), None)

    def bump(self, session: str, by: int = 1) -> None:
        self.versions[session] = self.versions.get(session, 0) + by


class Counts:
    def __init__(self) -> None:
        self.sequences = 0
        self.steps = 0
        self.errors: collections.Counter[str] = collections.Counter()


COUNTS: dict[str, Counts] = collections.defaultdict(Counts)


def context(tenant: str | None) -> Any:
    return None if tenant is None else {"tenant": tenant}


def snapshot(snapshot_id: str, session: str, parent: str | None, status: str, text: str) -> SessionSnapshot:
    state = SessionState(session_id=session, messages=(Message.of_text("user", text),))
    return SessionSnapshot(snapshot_id=snapshot_id, session_id=session, parent_id=parent, status=status, state=state)


class StoreMachine(RuleBasedStateMachine):
    make: Any = None
    backend = ""

    def __init__(self) -> None:
        super().__init__()
        self.store = type(self).make()
        self.model = {tenant: Tenant() for tenant in TENANTS}
        self.counts = COUNTS[self.backend]
        self.counts.sequences += 1
        self.clock_minute = 0

    # --- calling the store -----------------------------------------------------------------

    def call(self, expected_error: str | None, action: Any) -> Any:
        """Run ``action``; it must raise a GenkitError of ``expected_error`` (None: must not raise)."""
        self.counts.steps += 1
        try:
            result = action()
        except GenkitError as error:
            self.counts.errors[error.status.value] += 1
            assert expected_error is not None, f"unexpected {error.status.value}: {error.message}"
            assert error.status.value == expected_error, f"{error.status.value} ({error.message}), not {expected_error}"
            assert error.message
            return None
        assert expected_error is None, f"expected {expected_error}, got {result!r}"
        return result

    def check_snapshot(self, tenant: str | None, snapshot_id: str, found: SessionSnapshot | None) -> None:
        held = self.model[tenant].snapshots.get(snapshot_id)
        if held is None:
            assert found is None, f"{snapshot_id} should be absent in tenant {tenant}"
            return
        assert found is not None, f"{snapshot_id} missing in tenant {tenant}"
        assert found.snapshot_id == snapshot_id
        assert (found.session_id, found.parent_id, found.effective_status.value) == (
            held.session,
            held.parent,
            held.status,
        )
        assert found.state is not None and found.state.messages[0].content[0].text == held.text  # type: ignore[union-attr]

    # --- rules -----------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        pass

    @rule(
        tenant=st.sampled_from(TENANTS),
        snapshot_id=st.sampled_from(SNAPSHOT_IDS),
        session=st.sampled_from(SESSION_IDS),
        parent=st.none() | st.sampled_from(SNAPSHOT_IDS),
        status=st.sampled_from(STATUSES),
        text=st.sampled_from(("hi", "there")),
    )
    def save(
        self, tenant: str | None, snapshot_id: str, session: str, parent: str | None, status: str, text: str
    ) -> None:
        model = self.model[tenant]
        held = model.snapshots.get(snapshot_id)
        expected: str | None = None
        if held is not None:
            if session != held.session or parent != held.parent or (held.status in TERMINAL and status != held.status):
                expected = "FAILED_PRECONDITION"
        elif parent is not None:
            owner = model.snapshots.get(parent)
            if owner is None or owner.session != session:
                expected = "INVALID_ARGUMENT"
        new = snapshot(snapshot_id, session, parent, status, text)
        saved = self.call(
            expected, lambda: self.store.save_snapshot(snapshot_id, lambda _: new, context=context(tenant))
        )
        if expected is not None:
            return
        assert saved is not None and saved.snapshot_id == snapshot_id
        if held is None:
            model.snapshots[snapshot_id] = Held(session, parent, status, text)
            model.order.setdefault(session, []).append(snapshot_id)
            model.bump(session)
        else:
            if held.status != status or held.text != text:
                model.bump(session)
            held.status, held.text = status, text

    @rule(tenant=st.sampled_from(TENANTS), snapshot_id=st.sampled_from(SNAPSHOT_IDS + RESTORE_IDS))
    def abort(self, tenant: str | None, snapshot_id: str) -> None:
        held = self.model[tenant].snapshots.get(snapshot_id)
        before = self.call(None, lambda: self.store.abort_snapshot(snapshot_id, context=context(tenant)))
        if held is None:
            assert before is None
            return
        assert before is not None and SnapshotStatus(before).value == held.status
        if held.status not in TERMINAL:
            held.status = "aborted"
            self.model[tenant].bump(held.session)

    @rule(tenant=st.sampled_from(TENANTS), snapshot_id=st.sampled_from(SNAPSHOT_IDS + RESTORE_IDS))
    def heartbeat(self, tenant: str | None, snapshot_id: str) -> None:
        held = self.model[tenant].snapshots.get(snapshot_id)
        expected = "NOT_FOUND" if held is None else ("FAILED_PRECONDITION" if held.status in TERMINAL else None)
        beat = self.call(expected, lambda: self.store.heartbeat(snapshot_id, context=context(tenant)))
        if beat is not None:
            assert beat.heartbeat_at is not None and beat.effective_status.value == held.status  # type: ignore[union-attr]

    @rule(tenant=st.sampled_from(TENANTS), snapshot_id=st.sampled_from(SNAPSHOT_IDS + RESTORE_IDS))
    def get_by_id(self, tenant: str | None, snapshot_id: str) -> None:
        found = self.call(None, lambda: self.store.get_snapshot(snapshot_id=snapshot_id, context=context(tenant)))
        self.check_snapshot(tenant, snapshot_id, found)

    @rule(tenant=st.sampled_from(TENANTS), session=st.sampled_from(SESSION_IDS))
    def get_leaf_and_list(self, tenant: str | None, session: str) -> None:
        model = self.model[tenant]
        leaf = self.call(None, lambda: self.store.get_snapshot(session_id=session, context=context(tenant)))
        expected_leaf = model.leaf(session)
        assert (leaf.snapshot_id if leaf is not None else None) == expected_leaf
        listed = self.call(None, lambda: self.store.list_snapshots(session, context=context(tenant)))
        assert sorted(s.snapshot_id for s in listed) == sorted(model.order.get(session, []))
        for found in listed:
            self.check_snapshot(tenant, found.snapshot_id, found)
        record = self.call(None, lambda: self.store.get_session_record(session, context=context(tenant)))
        if model.order.get(session):
            assert record is not None and record.leaf_id == expected_leaf
            assert record.version == model.versions[session]
        else:
            assert record is None

    @rule(tenant=st.sampled_from(TENANTS), session=st.sampled_from(SESSION_IDS))
    def delete(self, tenant: str | None, session: str) -> None:
        model = self.model[tenant]
        count = self.call(None, lambda: self.store.delete_session(session, context=context(tenant)))
        ids = model.order.pop(session, [])
        assert count == len(ids)
        for snapshot_id in ids:
            del model.snapshots[snapshot_id]

    @rule(
        tenant=st.sampled_from(TENANTS),
        picks=st.lists(st.sampled_from(SNAPSHOT_IDS + RESTORE_IDS), min_size=1, max_size=3, unique=True),
        session=st.sampled_from(SESSION_IDS),
        status=st.sampled_from(STATUSES),
        minutes=st.lists(st.integers(0, 59), min_size=3, max_size=3),
    )
    def restore(self, tenant: str | None, picks: list[str], session: str, status: str, minutes: list[int]) -> None:
        """Restore held snapshots as they are (their status maybe changed), and new ones (children of
        the session's leaf, or roots) stamped by a clock that runs anywhere in an hour."""
        model = self.model[tenant]
        batch: list[SessionSnapshot] = []
        planned: list[tuple[str, Held, bool]] = []
        parent = model.leaf(session)
        for snapshot_id, minute in zip(picks, minutes, strict=False):
            held = model.snapshots.get(snapshot_id)
            if held is not None:
                restored = Held(held.session, held.parent, status, held.text)
                planned.append((snapshot_id, restored, False))
            else:
                restored = Held(session, parent, status, "restored")
                planned.append((snapshot_id, restored, True))
                parent = snapshot_id
            stamp = f"2026-01-01T00:{minute:02d}:00.000000Z"
            batch.append(
                attrs.evolve(
                    snapshot(snapshot_id, restored.session, restored.parent, restored.status, restored.text),
                    created_at=stamp,
                )
            )
        count = self.call(None, lambda: self.store.restore_snapshots(batch, context=context(tenant)))
        assert count == len(batch)
        for snapshot_id, restored, new in planned:
            model.snapshots[snapshot_id] = restored
            if new:
                model.order.setdefault(restored.session, []).append(snapshot_id)
            model.bump(restored.session)

    @rule(
        bad=st.sampled_from(BAD_IDS),
        which=st.sampled_from(("save", "get", "get-session", "list", "delete", "abort", "heartbeat", "restore")),
    )
    def bad_id(self, bad: str, which: str) -> None:
        store = self.store
        calls = {
            "save": lambda: store.save_snapshot(bad, lambda _: snapshot("a", "s1", None, "completed", "x")),
            "get": lambda: store.get_snapshot(snapshot_id=bad),
            "get-session": lambda: store.get_snapshot(session_id=bad),
            "list": lambda: store.list_snapshots(bad),
            "delete": lambda: store.delete_session(bad),
            "abort": lambda: store.abort_snapshot(bad),
            "heartbeat": lambda: store.heartbeat(bad),
            "restore": lambda: store.restore_snapshots(
                [
                    attrs.evolve(
                        snapshot("a", "s1", None, "completed", "x"), snapshot_id=bad, created_at="2026-01-01T00:00:00Z"
                    )
                ]
            ),
        }
        self.call("INVALID_ARGUMENT", calls[which])

    @rule(bad=st.sampled_from(("acme", 1, {"tenant": 1}, {"tenantId": "acme"}, ["tenant"])))
    def bad_context(self, bad: Any) -> None:
        self.call("INVALID_ARGUMENT", lambda: self.store.get_snapshot(snapshot_id="a", context=bad))

    @invariant()
    def tenants_are_isolated(self) -> None:
        for tenant in TENANTS:
            for session in SESSION_IDS:
                for snapshot_id in self.model[tenant].order.get(session, []):
                    assert self.model[tenant].snapshots[snapshot_id].session == session


@pytest.mark.parametrize("backend", ["memory", "dynamodb-inprocess"])
def test_random_store_operations_in_several_tenants_match_a_simple_model(
    backend: str, request: pytest.FixtureRequest
) -> None:
    run_machine(StoreMachine, backend, request, examples=EXAMPLES, steps=25, backend=backend)
    if os.environ.get("GENKIT_FUZZ_REPORT"):
        counts = COUNTS[backend]
        print(
            f"\nstateful store test on {backend}: {counts.sequences} sequences, {counts.steps} steps, "
            f"GenkitError by status {dict(sorted(counts.errors.items()))}, raw exceptions 0"
        )
