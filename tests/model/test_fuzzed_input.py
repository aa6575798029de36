"""Property tests: the wire decoder fed arbitrary JSON, the public constructors fed arbitrary Python
values. Each may only ever see a GenkitError or a correct result (one that encodes to JSON a store can
keep and decodes back equal); a raw exception is a bug.

``GENKIT_FUZZ_EXAMPLES`` raises the number of examples; with ``GENKIT_FUZZ_REPORT`` set, each test
prints its counts (examples run, GenkitErrors by status, raw exceptions).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
import os
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genkit_sessions import GenkitError, from_wire, to_wire
from genkit_sessions.model import types
from genkit_sessions.model.frozen_json import json_problem

EXAMPLES = int(os.environ.get("GENKIT_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

WIRE_CLASSES: list[type] = [
    types.AgentInit,
    types.SessionSnapshot,
    types.SessionState,
    types.Message,
    types.Artifact,
    types.ErrorInfo,
    types.TextPart,
    types.MediaPart,
    types.ToolRequestPart,
    types.ToolResponsePart,
    types.DataPart,
    types.CustomPart,
    types.ReasoningPart,
    types.ResourcePart,
    types.Media,
    types.ToolRequest,
    types.ToolResponse,
    types.Resource,
]

KEYS = st.sampled_from(
    [
        "snapshotId",
        "sessionId",
        "parentId",
        "createdAt",
        "updatedAt",
        "heartbeatAt",
        "status",
        "finishReason",
        "error",
        "state",
        "messages",
        "custom",
        "artifacts",
        "role",
        "content",
        "metadata",
        "text",
        "media",
        "url",
        "contentType",
        "toolRequest",
        "toolResponse",
        "name",
        "ref",
        "input",
        "output",
        "partial",
        "data",
        "reasoning",
        "resource",
        "uri",
        "parts",
        "message",
        "details",
    ]
) | st.text(max_size=6)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(
        ["", " ", "user", "model", "completed", "pending", "failed", "stop", "2026-01-01T00:00:00Z", "a\x00", "\ud83d"]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=30,
)
PYTHON_VALUES = st.recursive(
    SCALARS
    | st.binary(max_size=4)
    | st.sets(st.integers(), max_size=2)
    | st.datetimes()
    | st.just(object())
    | st.builds(dt.timedelta, seconds=st.integers(0, 100)),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(st.text(max_size=4) | st.integers() | st.none(), inner, max_size=3)
    ),
    max_leaves=10,
)


class Tally:
    """Counts of one property test's outcomes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.examples = 0
        self.statuses: collections.Counter[str] = collections.Counter()
        self.ok = 0

    def report(self) -> None:
        if os.environ.get("GENKIT_FUZZ_REPORT"):
            print(
                f"\n{self.name}: {self.examples} examples, {self.ok} decoded, "
                f"GenkitError by status {dict(self.statuses)}, raw exceptions 0"
            )


def run(tally: Tally, call: Callable[[], Any]) -> Any:
    """Call it; a GenkitError is counted, a raw exception fails the test (by propagating)."""
    tally.examples += 1
    try:
        result = call()
    except GenkitError as error:
        tally.statuses[error.status.value] += 1
        assert error.message, "every GenkitError says what was wrong"
        return None
    tally.ok += 1
    return result


def assert_correct(obj: Any) -> None:
    """A correct result: encodes to JSON a store can keep, serialises, and decodes back equal; a
    snapshot not yet saved (no createdAt until a store stamps it) encodes without createdAt and that
    JSON is refused, naming the key."""
    wire = to_wire(obj)
    assert json_problem(wire, check_text=True, max_depth=10_000) is None
    json.dumps(wire, allow_nan=False).encode("utf-8")
    if isinstance(obj, types.SessionSnapshot) and obj.created_at == "":
        assert "createdAt" not in wire
        with pytest.raises(GenkitError, match="createdAt") as refused:
            from_wire(type(obj), wire)
        assert refused.value.status.value == "INVALID_ARGUMENT"
        return
    assert from_wire(type(obj), wire) == obj


def test_an_unsaved_snapshot_encodes_without_created_at_and_its_json_is_refused_until_a_store_stamps_it() -> None:
    unsaved = types.SessionSnapshot("s-1", session_id="chat")
    assert to_wire(unsaved) == {"snapshotId": "s-1", "sessionId": "chat"}
    with pytest.raises(GenkitError, match="requires the key 'createdAt'"):
        from_wire(types.SessionSnapshot, to_wire(unsaved))
    stamped = attrs.evolve(unsaved, created_at="2026-12-02T00:00:00.000Z")
    assert from_wire(types.SessionSnapshot, to_wire(stamped)) == stamped


@pytest.fixture(scope="module")
def tallies() -> Any:
    found: dict[str, Tally] = {}
    yield found
    for tally in found.values():
        tally.report()


@pytest.mark.parametrize("cls", WIRE_CLASSES, ids=lambda c: c.__name__)
def test_the_wire_decoder_fed_arbitrary_json_returns_a_correct_object_or_a_genkit_error(
    cls: type, tallies: dict[str, Tally]
) -> None:
    tally = tallies.setdefault(f"from_wire({cls.__name__})", Tally(f"from_wire({cls.__name__})"))

    @fuzz
    @given(JSON)
    def decode(data: Any) -> None:
        obj = run(tally, lambda: from_wire(cls, data))
        if obj is not None:
            assert_correct(obj)

    decode()


@fuzz
@given(st.integers(1, 6000), st.sampled_from(["[", '{"a":']))
def test_the_wire_decoder_fed_json_text_of_any_depth_returns_or_refuses(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = '{"custom":' + opener * depth + "1" * (opener == '{"a":') + closer * depth + "}"
    if opener == "[":
        text = '{"custom":' + "[" * depth + "]" * depth + "}"
    try:
        state = from_wire(types.SessionState, text)
    except GenkitError as error:
        assert error.status == "INVALID_ARGUMENT" and "levels" in error.message
    else:
        assert_correct(state)


CONSTRUCTORS: list[tuple[type, int]] = [
    (types.Media, 2),
    (types.ToolRequest, 4),
    (types.ToolResponse, 4),
    (types.Resource, 1),
    (types.TextPart, 3),
    (types.MediaPart, 3),
    (types.ToolRequestPart, 3),
    (types.ToolResponsePart, 3),
    (types.DataPart, 3),
    (types.CustomPart, 2),
    (types.ReasoningPart, 3),
    (types.ResourcePart, 3),
    (types.UnknownPart, 1),
    (types.Message, 3),
    (types.Artifact, 3),
    (types.SessionState, 4),
    (types.SessionSnapshot, 10),
    (types.AgentInit, 3),
]


def model_values() -> st.SearchStrategy[Any]:
    """Arbitrary Python values, and now and then a valid model object of some kind."""
    parts = st.builds(types.TextPart, st.text(max_size=4)) | st.builds(
        types.DataPart, st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    )
    return (
        PYTHON_VALUES
        | parts
        | st.lists(parts, max_size=2)
        | st.builds(types.Message, st.sampled_from(["user", "model"]), st.lists(parts, max_size=2))
        | st.lists(st.builds(types.Message, st.just("user"), st.lists(parts, max_size=1)), max_size=2)
        | st.builds(types.SessionState, st.none() | st.text(max_size=3))
        | st.builds(types.ErrorInfo, message=st.text(max_size=3))
        | st.builds(types.Media, st.text(max_size=3))
        | st.builds(types.ToolRequest, st.text(max_size=3))
        | st.builds(types.ToolResponse, st.text(max_size=3))
        | st.builds(types.Resource, st.text(max_size=3))
    )


@pytest.mark.parametrize(("cls", "arity"), CONSTRUCTORS, ids=lambda c: getattr(c, "__name__", str(c)))
def test_public_constructors_fed_arbitrary_values_build_a_correct_object_or_raise_a_genkit_error(
    cls: type, arity: int, tallies: dict[str, Tally]
) -> None:
    tally = tallies.setdefault(f"{cls.__name__}(...)", Tally(f"{cls.__name__}(...)"))
    positional = [f for f in attrs.fields(cls) if not f.kw_only]
    required = sum(1 for f in positional if f.default is attrs.NOTHING)
    assert len(positional) == arity

    @fuzz
    @given(st.lists(model_values(), min_size=required, max_size=arity), model_values() | st.none())
    def build(args: list[Any], extra: Any) -> None:
        keywords = {"extra": extra} if any(f.name == "extra" for f in attrs.fields(cls)) else {}
        obj = run(tally, lambda: cls(*args, **keywords))
        if obj is not None:
            assert_correct(obj)

    build()


def test_error_info_fed_arbitrary_values_builds_a_correct_object_or_raises_a_genkit_error(
    tallies: dict[str, Tally],
) -> None:
    tally = tallies.setdefault("ErrorInfo(...)", Tally("ErrorInfo(...)"))

    @fuzz
    @given(model_values(), model_values(), model_values())
    def build(status: Any, message: Any, details: Any) -> None:
        obj = run(tally, lambda: types.ErrorInfo(status, message=message, details=details))
        if obj is not None:
            assert_correct(obj)

    build()


def test_floats_that_json_cannot_hold_are_refused() -> None:
    for value in (math.inf, -math.inf, math.nan):
        with pytest.raises(GenkitError):
            types.DataPart(data={"x": value})
