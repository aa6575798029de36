"""Moving session trees between stores: JSON Lines of Genkit wire snapshots out, and back in.

An export is one line per snapshot, each the snapshot's Genkit wire JSON
(:func:`~genkit_sessions.model.wire.to_wire`, compact, keys in the converter's
order), sessions one after another, each session's snapshots in creation order
(``list_snapshots``: by createdAt, the leaf last, so an import, which restores them in the order
given, keeps each session's leaf). Reading one session at a time keeps memory bounded by the
largest session, whatever the export's size.

An import reads such a file, or a directory Genkit's own ``FileSessionStore``
wrote (one ``<snapshotId>.json`` per snapshot), in two passes: the first decodes
and checks every snapshot and writes nothing, so a bad line refuses the whole
import; the second writes through ``restore_snapshots`` in batches, skipping
snapshots the store already holds exactly as given, so a second run of the same
import writes nothing. Both passes stream: a file is read twice rather than held.

Session records' metadata (a principal, say) and time to live are not part of
Genkit's wire snapshots, so they are neither exported nor imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Protocol, TextIO, runtime_checkable

import attrs

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model.frozen_json import strict_equal
from genkit_sessions.model.ids import validate_id
from genkit_sessions.model.types import SessionSnapshot
from genkit_sessions.model.wire import from_wire, to_wire
from genkit_sessions.stores.protocol import Context, SessionStore, SupportsList, SupportsRestore
from genkit_sessions.stores.write_rules import restorable

__all__ = [
    "ExportCounts",
    "ImportCounts",
    "ImportTarget",
    "check_source",
    "export_sessions",
    "import_snapshots",
    "read_source",
    "snapshot_line",
]

Progress = Callable[[int], None]
"""Told how many snapshots were handled since it was last called."""


@runtime_checkable
class ImportTarget(SessionStore, SupportsRestore, Protocol):
    """What an import writes to: a store that reads snapshots by id and restores them verbatim."""


@attrs.frozen
class ExportCounts:
    """What an export wrote: sessions and snapshots (lines)."""

    sessions: int
    snapshots: int


@attrs.frozen
class ImportCounts:
    """What an import found and did: snapshots and sessions read, snapshots written, and those already
    stored exactly as given (left alone)."""

    snapshots: int
    sessions: int
    written: int
    unchanged: int


_LINE_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def snapshot_line(snapshot: SessionSnapshot) -> str:
    """One export line: the snapshot's wire JSON, compact, with no newline. Non-ASCII text is kept as is,
    except the characters some readers split lines on (U+0085, U+2028, U+2029), which are escaped."""
    return json.dumps(to_wire(snapshot), ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)


def export_sessions(
    store: SupportsList,
    session_ids: Iterable[str],
    out: TextIO,
    *,
    context: Context = None,
    progress: Progress | None = None,
) -> ExportCounts:
    """Write every snapshot of each session in ``session_ids`` to ``out`` as JSON Lines; sessions with no
    snapshots (deleted meanwhile, or never written to) are skipped."""
    sessions = snapshots = 0
    for session_id in session_ids:
        tree = store.list_snapshots(session_id, context=context)
        if not tree:
            continue
        for snapshot in tree:
            out.write(snapshot_line(snapshot))
            out.write("\n")
        sessions += 1
        snapshots += len(tree)
        if progress is not None:
            progress(len(tree))
    return ExportCounts(sessions, snapshots)


def _decode(text: str, where: str) -> SessionSnapshot:
    try:
        snapshot, session_id = restorable(from_wire(SessionSnapshot, text))
        validate_id(snapshot.snapshot_id, "snapshotId", Reason.INVALID_SNAPSHOT_ID)
        validate_id(session_id, "sessionId", Reason.INVALID_SESSION_ID)
    except GenkitError as error:
        raise GenkitError(
            error.status,
            f"{where}: {error.message}; nothing was imported: fix it (or remove it) and run the import again",
            details=error.details,
            reason=error.reason,
        ) from None
    return snapshot


def read_source(source: Path) -> Iterator[SessionSnapshot]:
    """The snapshots of a JSON Lines export (blank lines skipped, in the file's order: each session's
    snapshots by createdAt, the leaf last) or of a ``FileSessionStore`` directory (its ``*.json`` files, by
    createdAt, then name), each decoded and checked as an import needs it (sessionId filled
    from the state when only that names it). INVALID_ARGUMENT names the line or file at fault (JSON that
    is not a snapshot, text that is not UTF-8); FAILED_PRECONDITION names a source that cannot be read."""
    for _, snapshot in _located(source):
        yield snapshot


def _located(source: Path) -> Iterator[tuple[str, SessionSnapshot]]:
    """:func:`read_source`'s snapshots, each with where it was read (``line 3 of x.jsonl``, a file's path)."""
    try:
        is_dir = source.is_dir()
    except OSError as exc:
        raise _unreadable(source, exc) from None
    if is_dir:
        # A FileSessionStore directory keeps no order: createdAt is the only evidence of the order its
        # snapshots were written in, and a restore commits new snapshots in the order given (S8).
        try:
            paths = list(source.glob("*.json"))
        except OSError as exc:
            raise _unreadable(source, exc) from None
        stamped = sorted((_decode(_file_text(path), f"{path}").created_at, path.name, path) for path in paths)
        for _, _, path in stamped:
            yield f"{path}", _decode(_file_text(path), f"{path}")
        return
    if not source.exists():
        raise GenkitError(
            Status.NOT_FOUND, f"{source} does not exist; name a JSON Lines export or a FileSessionStore directory"
        )
    try:
        with source.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                where = f"line {number} of {source}"
                text = _utf8(line, where)
                if text.strip():
                    yield where, _decode(text, where)
    except OSError as exc:
        raise _unreadable(source, exc) from None


def _unreadable(source: Path, exc: OSError) -> GenkitError:
    return GenkitError(
        Status.FAILED_PRECONDITION,
        f"cannot read {source}: {exc.strerror or exc}; nothing was imported: check the path and its permissions, "
        "then run the import again",
        details={"path": str(source)},
    )


def _file_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return _utf8(data, f"{path}")


def _utf8(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text; INVALID_ARGUMENT naming ``where`` and the first bad byte when it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = exc.reason == "unexpected end of data"
        problem = (
            f"ends inside a multi-byte UTF-8 character (byte {exc.start}): the file looks cut short"
            if cut
            else f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start} of the line)"
        )
        advice = (
            "export it again or copy it whole"
            if cut
            else "exports are UTF-8: convert it (e.g. iconv -f latin1 -t utf-8) or export it again"
        )
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"{where} {problem}; nothing was imported: {advice}, and run the import again",
            details={"where": where, "offset": exc.start},
            reason=Reason.INVALID_INPUT,
        ) from None


def check_source(source: Path, *, progress: Progress | None = None) -> tuple[int, int]:
    """Decode and check every snapshot of ``source`` without writing; ``(snapshots, sessions)``.

    A snapshot id given twice refuses the whole source (INVALID_ARGUMENT naming both places): an import
    restores each id once. Memory holds the ids seen (snapshots and sessions), not the snapshots.
    """
    sessions: set[str] = set()
    seen: dict[str, str] = {}
    for where, snapshot in _located(source):
        first = seen.get(snapshot.snapshot_id)
        if first is not None:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"{where} repeats snapshot id {snapshot.snapshot_id!r} of {first}; nothing was imported: an import "
                "restores each snapshot once, so keep one of the two (or give the other its own id) and run the "
                "import again",
                details={"snapshotId": snapshot.snapshot_id, "first": first, "again": where},
                reason=Reason.INVALID_INPUT,
            )
        seen[snapshot.snapshot_id] = where
        sessions.add(snapshot.session_id or "")
        if progress is not None:
            progress(1)
    return len(seen), len(sessions)


def _same(stored: SessionSnapshot | None, given: SessionSnapshot) -> bool:
    """Whether the store holds ``given`` exactly: the same JSON, so ``1`` and ``1.0`` (or ``True``) differ."""
    return stored is not None and strict_equal(to_wire(stored), to_wire(given))


def import_snapshots(
    store: ImportTarget,
    source: Path,
    *,
    context: Context = None,
    batch_size: int = 100,
    progress: Progress | None = None,
    dry_run: bool = False,
    checked: tuple[int, int] | None = None,
) -> ImportCounts:
    """Check every snapshot of ``source`` (see :func:`read_source`), then, unless ``dry_run``, restore
    them into ``store`` in batches of ``batch_size``, leaving alone those it already holds as given.

    ``checked`` is what :func:`check_source` answered for ``source``, when the caller ran it already."""
    if not 1 <= batch_size <= 1000:
        raise GenkitError(Status.INVALID_ARGUMENT, f"batch_size must be between 1 and 1000, got {batch_size}")
    total, sessions = checked if checked is not None else check_source(source)
    if dry_run:
        return ImportCounts(total, sessions, 0, 0)
    written = unchanged = 0
    batch: list[SessionSnapshot] = []
    places: list[str] = []

    def held(snapshots: list[SessionSnapshot]) -> dict[str, SessionSnapshot | None]:
        """What the store holds of ``snapshots``: a list of each of their sessions when the store can list
        (one read per session, not per snapshot), else a read per snapshot."""
        if isinstance(store, SupportsList):
            found: dict[str, SessionSnapshot | None] = {}
            for session_id in dict.fromkeys(s.session_id for s in snapshots):
                found.update((s.snapshot_id, s) for s in store.list_snapshots(session_id or "", context=context))
            return found
        return {s.snapshot_id: store.get_snapshot(snapshot_id=s.snapshot_id, context=context) for s in snapshots}

    def flush() -> None:
        nonlocal written, unchanged
        stored = held(batch)
        fresh = [s for s in batch if not _same(stored.get(s.snapshot_id), s)]
        if fresh:
            try:
                _restore_in_parts(store, fresh, context)
            except GenkitError as error:
                raise _refused(error, batch, places, fresh, written) from error
        written += len(fresh)
        unchanged += len(batch) - len(fresh)
        if progress is not None:
            progress(len(batch))
        batch.clear()
        places.clear()

    for where, snapshot in _located(source):
        batch.append(snapshot)
        places.append(where)
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return ImportCounts(total, sessions, written, unchanged)


def _restore_in_parts(store: ImportTarget, snapshots: list[SessionSnapshot], context: Context) -> None:
    """``restore_snapshots`` of ``snapshots``; a batch more than the store lands at once (RESTORE_TOO_LARGE:
    too many sessions, or too many snapshots over stored ones, for one DynamoDB transaction) goes in two
    halves, each cut again as needed."""
    try:
        store.restore_snapshots(snapshots, context=context)
    except GenkitError as error:
        if error.reason != Reason.RESTORE_TOO_LARGE.value or len(snapshots) < 2:
            raise
        half = len(snapshots) // 2
        _restore_in_parts(store, snapshots[:half], context)
        _restore_in_parts(store, snapshots[half:], context)


def _refused(
    error: GenkitError, batch: list[SessionSnapshot], places: list[str], fresh: list[SessionSnapshot], written: int
) -> GenkitError:
    """The store's refusal of a batch, naming the line (or file) it is about: the snapshot the store
    named (in its details, or quoted in its message), or the only one the batch wrote; else the batch's
    first and last. It says what was already written."""
    details = error.details if isinstance(error.details, Mapping) else {}
    named = details.get("snapshotId")
    if named is None:
        quoted = [s.snapshot_id for s in fresh if repr(s.snapshot_id) in error.message]
        named = fresh[0].snapshot_id if len(fresh) == 1 else quoted[0] if len(quoted) == 1 else None
    where = next((p for s, p in zip(batch, places, strict=True) if s.snapshot_id == named), None)
    if where is None:
        where = places[0] if len(places) == 1 else f"one of the snapshots from {places[0]} to {places[-1]}"
    return GenkitError(
        error.status,
        f"{where}: the store refused it: {error.message}; the {written} snapshot(s) before this batch were "
        "written and stay; fix the line (or remove it) and run the import again: what is already stored as "
        "given is left alone",
        details={"where": where, "written": written, "store": error.details},
        reason=error.reason,
    )
