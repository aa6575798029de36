"""Round trips of the DynamoDB store's pure helpers: compression, chunking, JSON diffs, state plans."""

from __future__ import annotations

import random
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genkit_sessions import Message, SessionState, to_wire
from genkit_sessions.dynamodb._calls import run_pure
from genkit_sessions.dynamodb._codec import (
    PAGES_EVERY,
    CorruptData,
    Recipe,
    apply_patch,
    compress,
    decompress,
    diff,
    fold,
    join_parts,
    open_hint,
    open_record,
    pack_record,
    pack_refs,
    plan_state,
    seal,
    sealed_hint,
    sealed_record,
    split_parts,
    stored_list,
    stored_messages,
    strict_equal,
    unpack_record,
    unpack_refs,
    wire_message,
)
from genkit_sessions.model.wire import from_wire
from tests.dynamodb import layout

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)


@given(json_values)
def test_compress_round_trips_any_json(value: Any) -> None:
    assert strict_equal(decompress(compress(value)), value)


@given(st.binary(max_size=5000), st.integers(1, 700))
def test_split_parts_round_trip_and_respect_the_size(data: bytes, size: int) -> None:
    parts = split_parts(data, size)
    assert join_parts(parts) == data
    assert all(len(p) <= size for p in parts)
    assert len(parts) == max(1, -(-len(data) // size))


@given(json_values, json_values)
def test_apply_patch_of_diff_rebuilds_the_new_value(old: Any, new: Any) -> None:
    assert strict_equal(apply_patch(old, diff(old, new)), new)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=6), st.lists(json_values, max_size=4))
def test_growing_a_list_is_patched_as_an_append_of_the_new_items_only(doc: dict[str, Any], extra: list[Any]) -> None:
    old = {**doc, "log": [1, 2]}
    new = {**doc, "log": [1, 2, *extra]}
    ops = diff(old, new)
    assert strict_equal(apply_patch(old, ops), new)
    if extra:
        assert ops == [["+", ["log"], extra]]


def test_strict_equal_tells_numbers_and_booleans_apart() -> None:
    assert not strict_equal(1, True)
    assert not strict_equal(1, 1.0)
    assert not strict_equal({"a": [0]}, {"a": [False]})
    assert strict_equal({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})


def test_decompress_refuses_bytes_it_did_not_write() -> None:
    for bad in (b"", b"\x02abc", b"\x01not zlib"):
        with pytest.raises(CorruptData):
            decompress(bad)


def test_apply_patch_refuses_a_patch_that_does_not_fit() -> None:
    with pytest.raises(CorruptData):
        apply_patch({"a": 1}, [["d", ["b"]]])
    with pytest.raises(CorruptData):
        apply_patch([1], [["s", ["x", "y"], 2]])


# --- state plans: a chain of states stored as blobs and rebuilt --------------------------------

texts = st.text(alphabet="abcdefgh ", min_size=0, max_size=12)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(texts, min_size=0, max_size=3)),
        st.tuples(st.just("custom"), json_values),
        st.tuples(st.just("rewrite"), st.lists(texts, max_size=3)),
        st.tuples(st.just("none"), st.none()),
        st.tuples(st.just("no-messages-key"), st.none()),
    ),
    min_size=1,
    max_size=30,
)


def _next_state(state: SessionState | None, step: tuple[str, Any]) -> SessionState | None:
    kind, arg = step
    base = state or SessionState(session_id="s")
    if kind == "append":
        added = tuple(Message.of_text("user", t) for t in arg)
        return attrs.evolve(base, messages=base.message_list + added)
    if kind == "custom":
        return attrs.evolve(base, custom=arg)
    if kind == "rewrite":
        return attrs.evolve(base, messages=tuple(Message.of_text("model", t) for t in arg))
    if kind == "no-messages-key":
        return attrs.evolve(base, messages=None)
    return None


def _rebuild(recipe: Recipe, blobs: dict[str, Any]) -> SessionState | None:
    payloads = [decompress(blobs[name]) for name, _ in recipe.refs]
    return fold(payloads, lambda _, wire: tuple(from_wire(Message, wire_message(m)) for m in wire))


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(1, 5))
def test_every_state_of_a_chain_rebuilds_exactly_from_its_recipe(plan_steps: list[Any], every: int) -> None:
    blobs: dict[str, Any] = {}
    state: SessionState | None = None
    recipe: Recipe | None = None
    for index, step in enumerate(plan_steps):
        new_state = _next_state(state, step)
        plan = plan_state(state, recipe, new_state, every, max_pages=3)
        name = f"b{index}"
        blobs[name] = compress(plan.payload)
        recipe = plan.recipe(name, 1, len(blobs[name]))
        rebuilt = _rebuild(recipe, blobs)
        assert (to_wire(rebuilt) if rebuilt else None) == (to_wire(new_state) if new_state else None)
        assert list(recipe.levels) == sorted(recipe.levels, reverse=True)  # pages first, highest level first
        assert recipe.levels.count(0) < max(every, 2) and recipe.levels.count(1) < PAGES_EVERY
        assert recipe.levels.count(2) < 16
        state = new_state


@settings(deadline=None)
@given(st.integers(1, 400), st.integers(2, 10), st.integers(0, 3))
def test_appended_messages_are_written_at_most_four_times_and_recipes_stay_short(
    turns: int, every: int, kb: int
) -> None:
    state: SessionState | None = None
    recipe: Recipe | None = None
    written: dict[str, int] = {}
    for turn in range(turns):
        new_state = _next_state(state, ("append", [f"message {turn} " + "x" * (1000 * kb)]))
        plan = plan_state(state, recipe, new_state, every, top_bytes=4096, top_count=6)
        for message in plan.payload.get("a", []) + plan.payload.get("m", []):
            text = wire_message(message)["content"][0]["text"]
            written[text] = written.get(text, 0) + 1
        recipe = plan.recipe(f"b{turn}", 1, len(compress(plan.payload)))
        state = new_state
    assert max(written.values()) <= 4
    assert recipe is not None
    below_top = [recipe.levels.count(level) for level in (0, 1, 2)]
    assert below_top[0] < every and below_top[1] < PAGES_EVERY and below_top[2] < 6
    top = recipe.levels.count(3)
    assert top <= turns // (every * PAGES_EVERY) // 2 + 1  # a top page folds at least two pages of level 2


@settings(deadline=None)
@given(st.integers(2, 8), st.integers(0, 2))
def test_every_run_of_turns_as_long_as_a_level_two_page_writes_the_same_pages_unless_a_top_page_closes(
    every: int, kb: int
) -> None:
    span = every * PAGES_EVERY  # the turns a page of level 2 holds
    state: SessionState | None = None
    recipe: Recipe | None = None
    paged: list[int] = []  # messages each turn wrote into pages
    top_turns: set[int] = set()
    for turn in range(34 * every):  # past the turn where 16 pages of level 2 become a top page
        new_state = _next_state(state, ("append", [f"u{turn} " + "x" * (1000 * kb), f"m{turn}"]))
        plan = plan_state(state, recipe, new_state, every)
        messages = len(plan.payload.get("a", []) + plan.payload.get("m", []))
        paged.append(messages if plan.is_page else 0)
        if plan.level == 3:
            top_turns.add(turn)
        assert plan.level == 3 or not plan.is_page or messages <= 2 * span  # two messages a turn
        recipe = plan.recipe(f"b{turn}", 1, len(compress(plan.payload)))
        state = new_state
    assert top_turns, "the chat reached a top page"
    for start in range(len(paged) - span + 1):
        if top_turns.isdisjoint(range(start, start + span)):
            # one page of level 1 (every turns) and one of level 2 (span turns), two messages a turn
            assert sum(paged[start : start + span]) == 2 * (every + span), start


def _chain(turns: int, every: int, **options: Any) -> tuple[SessionState | None, Recipe | None, dict[str, Any]]:
    state: SessionState | None = None
    recipe: Recipe | None = None
    blobs: dict[str, Any] = {}
    for turn in range(turns):
        new_state = _next_state(state, ("append", [f"message {turn}"]))
        plan = plan_state(state, recipe, new_state, every, **options)
        blobs[f"b{turn}"] = compress(plan.payload)
        recipe = plan.recipe(f"b{turn}", 1, len(blobs[f"b{turn}"]))
        state = new_state
    return state, recipe, blobs


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(2, 6), st.lists(st.sampled_from(["append", "custom"]), max_size=6))
def test_a_child_of_a_changed_snapshot_folds_its_update_blob_and_never_names_it(
    turns: int, every: int, changes: list[str]
) -> None:
    state, recipe, blobs = _chain(turns, every)
    assert state is not None and recipe is not None
    for index, change in enumerate(changes):  # the snapshot changes in place: each update blob replaces the last
        changed = _next_state(state, (change, [f"progress {index}"] if change == "append" else {"n": index}))
        plan = plan_state(state, recipe, changed, every)
        name = f"t\x1fu{index}"
        blobs[name] = compress(plan.payload)
        recipe = plan.recipe(name, 1, len(blobs[name]))
        assert sum(1 for ref, _ in recipe.refs if ref.rpartition("\x1f")[2].startswith("u")) == 1
        rebuilt = _rebuild(recipe, blobs)
        assert rebuilt is not None and to_wire(rebuilt) == to_wire(changed)
        state = changed
    child_state = _next_state(state, ("append", ["child"]))
    plan = plan_state(state, recipe, child_state, every)
    blobs["child"] = compress(plan.payload)
    child = plan.recipe("child", 1, len(blobs["child"]))
    assert not any(ref.rpartition("\x1f")[2].startswith("u") for ref, _ in child.refs)
    rebuilt = _rebuild(child, blobs)
    assert rebuilt is not None and to_wire(rebuilt) == to_wire(child_state)


def test_a_recipe_written_before_sizes_existed_reads_with_sizes_of_zero() -> None:
    recipe = Recipe.from_json([[["a\x1fd1", 0], ["b\x1fd2", 2]], [1, 0], [4, 6]])
    assert recipe.sizes == (0, 0)
    assert Recipe.from_json(recipe.to_json()) == recipe


def test_a_long_chat_recipe_holds_few_blobs() -> None:
    # 1,000 turns with the defaults: pages of the top level hold about 256 KB each, so a recipe names
    # a handful of blobs, where pages of 25 turns named more than 40.
    _, recipe, _ = _chain(1000, 5, top_bytes=256 * 1024 // 50)
    assert recipe is not None and len(recipe.refs) <= 24


@given(st.binary(max_size=300), st.text(alphabet="abcdef0123456789", max_size=20), st.binary(max_size=300))
def test_a_packed_record_unpacks_to_what_was_packed(body: bytes, tag: str, blob: bytes) -> None:
    record = b"\x01" + body
    assert unpack_record(pack_record(record, tag, blob)) == (record, tag, blob)
    assert unpack_record(record) == (record, None, None)


@given(st.binary(max_size=40))
def test_unpacking_bytes_that_are_no_record_raises_corrupt_data(data: bytes) -> None:
    try:
        record, tag, blob = unpack_record(data)
    except CorruptData:
        return
    if data[:1] in (b"\x01", b"\x03"):  # a record alone: compressed, or sealed
        assert (record, tag, blob) == (data, None, None)
    else:  # a well-formed packing, whatever it holds
        assert pack_record(record, tag or "", blob or b"") == data


_wire_parts = st.one_of(
    st.fixed_dictionaries({"text": st.text(max_size=20)}),
    st.fixed_dictionaries(
        {"text": st.text(max_size=5)},
        optional={"metadata": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)},
    ),
    st.fixed_dictionaries({"media": st.fixed_dictionaries({"url": st.text(max_size=10)})}),
    st.just({"text": 3}),
)
_wire_messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "model", "tool", "system", "narrator"]),
        "content": st.lists(_wire_parts, max_size=3),
    },
    optional={"metadata": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2)},
)


def _builds_what_the_wire_decoder_makes(wire: list[Any], build: Any) -> None:
    """``build()`` makes exactly the messages ``messages_from_wire(wire)`` does, or raises the same error."""
    from genkit_sessions.model.wire import messages_from_wire

    try:
        expected = messages_from_wire(wire)
    except Exception as exc:  # the same error, whichever path
        with pytest.raises(type(exc)):
            build()
        return
    made = build()
    assert made == expected
    assert [to_wire(m) for m in made] == [to_wire(m) for m in expected]
    assert hash(made) == hash(expected)


@settings(deadline=None)
@given(st.lists(_wire_messages, max_size=6))
def test_stored_messages_are_exactly_what_the_wire_decoder_makes(wire: list[Any]) -> None:
    _builds_what_the_wire_decoder_makes(wire, lambda: stored_messages(wire, True))


@settings(deadline=None)
@given(st.lists(_wire_messages, max_size=6), st.booleans())
def test_a_stored_message_list_decodes_as_its_wire_json_does_on_every_path(wire: list[Any], plain: bool) -> None:
    """A blob's message list in its stored form (a plain text message as a string) turns back into exactly
    the wire JSON it was made of, and builds the same messages, or fails the same way, on the fast path
    and the wire decoder's; through JSON as a blob stores it."""
    import json

    stored = json.loads(json.dumps(stored_list(wire), ensure_ascii=False))
    assert [wire_message(value) for value in stored] == wire
    _builds_what_the_wire_decoder_makes(wire, lambda: stored_messages(stored, plain))


def test_only_a_known_role_with_one_text_part_and_nothing_else_is_stored_as_a_string() -> None:
    plain = [{"role": role, "content": [{"text": "hi"}]} for role in ("user", "model", "system", "tool")]
    kept = [
        {"role": "narrator", "content": [{"text": "hi"}]},  # a role Genkit does not define
        {"role": "user", "content": [{"text": "a"}, {"text": "b"}]},
        {"role": "user", "content": []},
        {"role": "user", "content": [{"text": "hi", "metadata": {"k": 1}}]},
        {"role": "user", "content": [{"text": "hi"}], "metadata": {"k": 1}},
        {"role": "user", "content": [{"media": {"url": "u"}}]},
    ]
    assert stored_list(plain) == ["uhi", "mhi", "shi", "thi"]
    assert stored_list(kept) == kept
    assert stored_list([{"role": "model", "content": [{"text": ""}]}]) == ["m"]  # an empty text keeps its role


def test_a_stored_string_without_a_known_role_letter_is_refused_as_a_message() -> None:
    from genkit_sessions import GenkitError

    for plain in (True, False):
        for bad in ("xhello", ""):
            with pytest.raises(GenkitError):
                stored_messages([bad], plain)


@given(st.lists(st.sampled_from(["a", "\\ud800", "\\uDC01", "\\u00e9", "\\\\ud800", "é", "\\n"]), max_size=8))
def test_text_said_plain_holds_no_lone_surrogate(pieces: list[str]) -> None:
    import json
    import zlib

    from genkit_sessions.dynamodb._codec import decompress_text

    document = '["' + "".join(pieces) + '"]'
    value, plain = decompress_text(b"\x01" + zlib.compress(document.encode("utf-8")))
    assert value == json.loads(document)
    if plain:
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in value[0])


# --- the same work in slices (the async face gives its event loop a turn between them) ------------


_long_lists = st.lists(json_scalars, min_size=200, max_size=700)
_payloads = st.dictionaries(st.sampled_from(["a", "m", "r", "p", "h"]), json_values | _long_lists, max_size=5)


@settings(deadline=None, max_examples=60)
@given(json_values | _long_lists | _payloads)
def test_compress_in_slices_writes_the_bytes_compress_writes(value: Any) -> None:
    import json
    import zlib

    from genkit_sessions.dynamodb._codec import compress_steps

    assert run_pure(compress_steps(value)) == compress(value)
    at_once = zlib.compress(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), 6)
    assert compress(value) == b"\x01" + at_once  # the format every reader of the table knows


def test_compress_in_slices_pauses_within_a_long_list_and_a_long_text() -> None:
    from genkit_sessions.dynamodb._calls import PAUSE
    from genkit_sessions.dynamodb._codec import compress_steps

    pauses = sum(1 for step in compress_steps({"a": list(range(1000)), "r": {"t": "x" * 100_000}}) if step is PAUSE)
    assert pauses >= 3 + 2  # three more slices of 256 items; 100 KB of text deflated 32 KB at a time


@settings(deadline=None, max_examples=60)
@given(json_values | _long_lists | _payloads, st.integers(0, 2**20), st.binary(max_size=8))
def test_inflating_in_slices_reads_or_refuses_exactly_what_inflating_at_once_does(
    value: Any, cut: int, tail: bytes
) -> None:
    import json
    import zlib

    from genkit_sessions.dynamodb._codec import decompress_text, decompress_text_steps

    def at_once(blob: bytes) -> tuple[Any, bool]:  # one zlib call and one decode, as readers always did
        if blob[:1] != b"\x01":
            raise ValueError("tag")
        text = zlib.decompress(blob[1:]).decode("utf-8")
        return json.loads(text), "\\ud" not in text.lower()

    data = compress(value)
    for blob in (data, data[:cut] + tail, data + tail):
        try:
            expected = decompress_text(blob)
        except CorruptData:
            with pytest.raises(CorruptData):
                run_pure(decompress_text_steps(blob))
            with pytest.raises((ValueError, zlib.error)):  # UnicodeDecodeError and JSON errors are ValueErrors
                at_once(blob)
            continue
        assert run_pure(decompress_text_steps(blob)) == expected
        value_read, _ = at_once(blob)
        assert strict_equal(value_read, expected[0])


def test_inflating_in_slices_pauses_every_64_kb_of_a_large_blob() -> None:
    import os

    from genkit_sessions.dynamodb._calls import PAUSE
    from genkit_sessions.dynamodb._codec import decompress_text_steps

    blob = compress({"r": os.urandom(150_000).hex()})  # 300 KB of hex digits: about 150 KB deflated
    steps = list(decompress_text_steps(blob))
    assert steps and all(step is PAUSE for step in steps) and len(steps) >= len(blob) // 65_536


@settings(deadline=None, max_examples=40)
@given(st.lists(_wire_messages, max_size=6), st.integers(0, 700))
def test_building_messages_in_slices_makes_or_refuses_what_building_at_once_does(wire: list[Any], copies: int) -> None:
    from genkit_sessions.dynamodb._codec import stored_messages, stored_messages_steps

    long = (wire * copies)[:700] if wire else []
    for plain in (True, False):
        try:
            expected = stored_messages(long, plain)
        except Exception as exc:
            with pytest.raises(type(exc)):
                run_pure(stored_messages_steps(long, plain))
            continue
        assert run_pure(stored_messages_steps(long, plain)) == expected


def test_pure_steps_that_make_a_request_are_refused() -> None:
    from genkit_sessions.dynamodb._calls import Call

    def asks() -> Any:
        yield Call("GetItem", {})
        return 1

    with pytest.raises(TypeError, match="made a request"):
        run_pure(asks())


@settings(deadline=None, max_examples=40)
@given(st.lists(_wire_messages, max_size=4), st.integers(0, 700))
def test_message_bytes_counted_in_slices_are_what_one_count_gives(wire: list[Any], copies: int) -> None:
    from genkit_sessions.dynamodb._codec import _list_bytes, _list_bytes_steps

    long = (wire * copies)[:700] if wire else []
    assert run_pure(_list_bytes_steps(long)) == _list_bytes(long)


_OWNER = "0f3c1a2e-7d5b-4c9e-8a61-2b4d6f8e0a13"
_snapshot_parts = st.one_of(
    st.just(_OWNER),
    st.uuids().map(str),
    st.text(min_size=1, max_size=12).filter(lambda text: "\x1f" not in text),
)
_tags = st.one_of(
    st.tuples(st.sampled_from("cdu"), st.binary(min_size=6, max_size=6)).map(lambda t: t[0] + t[1].hex()),
    st.text(max_size=14).filter(lambda text: "\x1f" not in text),
)
_sealable_refs = st.lists(
    st.tuples(st.tuples(_snapshot_parts, _tags).map("\x1f".join), st.integers(0, 2**40)), max_size=30
).map(tuple)


@given(_sealable_refs)
def test_blob_references_packed_as_bytes_unpack_to_what_was_packed(refs: tuple[tuple[str, int], ...]) -> None:
    assert unpack_refs(pack_refs(refs, _OWNER), _OWNER) == refs


@given(st.binary(max_size=80))
def test_bytes_that_are_no_packed_references_raise_corrupt_data_or_read_back_stably(data: bytes) -> None:
    try:
        refs = unpack_refs(data, _OWNER)
    except CorruptData:
        return
    assert unpack_refs(pack_refs(refs, _OWNER), _OWNER) == refs


def _recipe_of(refs: tuple[tuple[str, int], ...], grown_from: str = "") -> Recipe:
    count = len(refs)
    return Recipe(
        refs,
        tuple(sorted(range(count), reverse=True)),
        tuple(range(2, 2 * count + 2, 2)),
        tuple(range(100, 100 + count)),
        tuple(range(7, 7 + count)),
        grown_from,
    )


@given(_sealable_refs, st.sampled_from(["", "x\x1fu1"]))
def test_a_sealed_record_and_read_hint_open_to_their_recipe_and_read_as_the_layout_documents(
    refs: tuple[tuple[str, int], ...], grown_from: str
) -> None:
    recipe = _recipe_of(refs, grown_from)
    envelope = {"snapshotId": _OWNER, "createdAt": "2026-12-07T00:00:00Z"}
    record = sealed_record(envelope, recipe)
    opened_envelope, opened = open_record(record)
    assert opened_envelope == envelope and opened.to_json() == recipe.to_json()
    assert layout.open_value(record)["r"] == recipe.to_json()  # the layout as docs/dynamodb.md spells it out
    hint = sealed_hint(recipe, _OWNER)
    assert open_hint(hint, _OWNER).hint_json() == recipe.hint_json()
    assert layout.open_value(hint, _OWNER) == recipe.hint_json()


def test_records_and_read_hints_written_before_seals_still_open() -> None:
    recipe = _recipe_of((("a\x1fd1", 0), ("b\x1fc2", 3)))
    envelope = {"snapshotId": "b"}
    assert open_record(compress({"e": envelope, "r": recipe.to_json()})) == (envelope, recipe)
    assert open_hint(compress(recipe.hint_json()), "b") == recipe


def test_a_sealed_value_cut_short_or_miscounting_its_references_is_corrupt_data() -> None:
    recipe = _recipe_of(((f"{_OWNER}\x1fd0123456789ab", 0), ("b\x1fc2", 3)))
    record = sealed_record({"snapshotId": _OWNER}, recipe)
    for damaged in (record[:3], record[:20], record[:-4]):
        with pytest.raises(CorruptData):
            open_record(damaged)
    miscounted = seal(
        {"e": {"snapshotId": _OWNER}, "r": _recipe_of(recipe.refs[:1]).to_json(sealed=True)}, recipe, _OWNER
    )
    with pytest.raises(CorruptData):
        open_record(miscounted)


def test_a_sealed_read_hint_of_a_long_chat_takes_fewer_bytes_than_its_json() -> None:
    rng = random.Random(20)
    refs = tuple(
        (f"{uuid.UUID(int=rng.getrandbits(128), version=4)}\x1fc{rng.randbytes(6).hex()}", 0) for _ in range(20)
    )
    recipe = _recipe_of(refs)
    leaf = refs[-1][0].partition("\x1f")[0]
    assert len(sealed_hint(recipe, leaf)) <= len(compress(recipe.hint_json())) - 20 * 6
