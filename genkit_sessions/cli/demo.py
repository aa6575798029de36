"""``genkit-sessions demo``: a scripted multi-turn conversation, narrated step by step.

It shows what the resolver decides at the start of each turn (fresh, resumed by
session id, resumed by snapshot id, hydrated from client state), a failed turn
and the FAILED_PRECONDITION that follows it, a fork, one example of each misuse
error, the session's snapshot tree, and then the session service: a session
created for a principal, looked up, a stale append refused, a compaction with
its full and active histories, and a fork.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from genkit_sessions.cli._command import add_command, check_connection_options, dynamodb_client
from genkit_sessions.cli.render import render_text as render_tree
from genkit_sessions.errors import GenkitError
from genkit_sessions.model.types import AgentInit, Message, SessionSnapshot, SessionState
from genkit_sessions.resolver.options import ResumePolicy, SessionStoreOptions
from genkit_sessions.resolver.resolver import Resolution, SessionResolver
from genkit_sessions.resolver.session import Session
from genkit_sessions.service import KeepLastStrategy, MessageCountTrigger, SessionService
from genkit_sessions.stores.memory import InMemorySessionStore
from genkit_sessions.stores.protocol import SessionStore, SupportsList, SupportsSessions

__all__ = ["register", "render_tree", "run_demo"]


def register(subparsers: Any) -> None:
    """Add the ``demo`` command."""
    parser = add_command(
        subparsers,
        "demo",
        help="play a scripted conversation and narrate the resolver's decisions",
        description="Play a scripted multi-turn conversation against a store and narrate what the resolver "
        "decides at each turn, the misuse errors, the session's tree and the session service.",
        example="genkit-sessions demo --store dynamodb | head -20",
    )
    parser.add_argument(
        "--store",
        choices=("memory", "dynamodb"),
        default="memory",
        help="where sessions live (dynamodb starts an embedded moto server unless --endpoint-url is given)",
    )
    parser.add_argument(
        "--endpoint-url",
        default=None,
        help="DynamoDB endpoint (with --store dynamodb); placeholder credentials are used if none are set",
    )
    parser.add_argument("--region", default=None, help="AWS region (with --endpoint-url)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    check_connection_options(args)
    with _open_store(args) as store:
        run_demo(store, sys.stdout, store_name=args.store)
    return 0


@contextlib.contextmanager
def _open_store(args: argparse.Namespace) -> Iterator[SessionStore]:
    if args.store == "memory":
        yield InMemorySessionStore()
        return
    from genkit_sessions.dynamodb.embedded import demo_store

    client = dynamodb_client(args) if args.endpoint_url is not None else None
    with demo_store(args.endpoint_url, client=client) as store:
        yield store


class _Narrator:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.step = 0

    def heading(self, text: str) -> None:
        self.step += 1
        print(f"\n{self.step}. {text}", file=self.out)

    def say(self, text: str) -> None:
        print(f"   {text}", file=self.out)

    def resolution(self, resolution: Resolution) -> None:
        if resolution.ok:
            assert resolution.session is not None
            origin = resolution.snapshot.snapshot_id[:8] if resolution.snapshot else "none"
            self.say(
                f"resolver: {resolution.rule} -> {resolution.source} session {resolution.session.id[:8]} "
                f"(from snapshot {origin}, {len(resolution.session.messages)} messages)"
            )
        else:
            assert resolution.error is not None
            self.say(
                f"resolver: {resolution.rule} -> failed turn: {resolution.error.status}: {resolution.error.message}"
            )

    def raised(self, action: Callable[[], object]) -> None:
        try:
            action()
        except GenkitError as error:
            rule = error.details.get("rule") if isinstance(error.details, dict) else None
            self.say(f"raised{f' ({rule})' if rule else ''}: {error}")
        else:  # pragma: no cover - the script only calls this for misuse
            raise AssertionError("expected a GenkitError")


def _turn(session: Session, user: str, model: str) -> None:
    session.add_messages(Message.of_text("user", user), Message.of_text("model", model))


def run_demo(store: SessionStore, out: TextIO, *, store_name: str = "memory") -> list[SessionSnapshot]:
    """Play the script against ``store`` and write the narration to ``out``.

    Returns the session's snapshots (its tree), oldest first.
    """
    say = _Narrator(out)
    resolve = SessionResolver.resolve
    print(f"genkit-sessions demo on the {store_name} store", file=out)

    say.heading("A client starts a chat with nothing: a fresh session")
    first = resolve(store, True, AgentInit())
    say.resolution(first)
    session = first.session
    assert session is not None
    _turn(session, "Plan a weekend in Lisbon.", "Day one: Alfama and the castle; day two: Belem.")
    s1 = session.save(finish_reason="stop")
    say.say(f"turn saved as snapshot {s1.snapshot_id[:8]} ({s1.status})")

    say.heading("The next turn sends only the session id: resumed from the leaf")
    second = resolve(store, True, AgentInit(session_id=session.id))
    say.resolution(second)
    assert second.session is not None
    _turn(second.session, "Add a day trip.", "Sintra: Pena Palace and Quinta da Regaleira.")
    s2 = second.session.save(finish_reason="stop")
    say.say(f"turn saved as snapshot {s2.snapshot_id[:8]} (child of {s1.snapshot_id[:8]})")

    say.heading("A turn fails halfway (the model call times out)")
    third = resolve(store, True, AgentInit(session_id=session.id))
    say.resolution(third)
    assert third.session is not None
    third.session.add_messages(Message.of_text("user", "Now book the trains."))
    s3 = third.session.save(
        "failed", finish_reason="failed", error=GenkitError("DEADLINE_EXCEEDED", "the model did not answer in 30 s")
    )
    say.say(f"turn saved as snapshot {s3.snapshot_id[:8]} ({s3.status}, error {s3.error and s3.error.status})")

    say.heading("Resuming by session id now meets a failed leaf: FAILED_PRECONDITION (R13)")
    say.raised(lambda: resolve(store, True, AgentInit(session_id=session.id)))
    walked = resolve(
        store, True, AgentInit(session_id=session.id), SessionStoreOptions(resume_policy=ResumePolicy.WALK_BACK)
    )
    say.say("with the opt-in walk-back policy instead:")
    say.resolution(walked)

    say.heading("The client resumes the last good snapshot by id: a fork")
    fork = resolve(store, True, AgentInit(snapshot_id=s2.snapshot_id, session_id=session.id))
    say.resolution(fork)
    assert fork.session is not None
    _turn(fork.session, "Book the trains, please.", "Done: the 9:11 to Sintra, back at 18:40.")
    s4 = fork.session.save(finish_reason="stop")
    say.say(f"turn saved as snapshot {s4.snapshot_id[:8]}: a sibling of the failed {s3.snapshot_id[:8]}")
    leaf = store.get_snapshot(session_id=session.id)
    say.say(f"the session's leaf is now {leaf.snapshot_id[:8] if leaf else None} (the most recently created)")

    say.heading("A client-managed agent hydrates from the state the client sent back")
    client_state = SessionState(session_id="client-chat-1", messages=(Message.of_text("user", "Hi again"),))
    hydrated = resolve(None, False, AgentInit(state=client_state))
    say.resolution(hydrated)
    assert hydrated.session is not None
    hydrated.session.add_messages(Message.of_text("model", "Welcome back."))
    final = hydrated.session.final_state()
    say.say(f"the turn returns its state to the client: {len(final.message_list)} messages, no store write")

    say.heading("Misuse raises instead of failing the turn")
    say.say("a store given to a client-managed agent (R1):")
    say.raised(lambda: resolve(store, False, AgentInit()))
    say.say("a snapshot id sent to a client-managed agent (R2):")
    say.raised(lambda: resolve(None, False, AgentInit(snapshot_id=s1.snapshot_id)))
    say.say("client state sent to a server-managed agent (R5):")
    say.raised(lambda: resolve(store, True, AgentInit(state=client_state)))
    say.say("a whitespace-only session id (R6):")
    say.raised(lambda: resolve(store, True, AgentInit(session_id="   ")))
    say.say("a snapshot id the store has never seen (R7):")
    say.raised(lambda: resolve(store, True, AgentInit(snapshot_id="no-such-snapshot")))
    say.say("a snapshot id with a session id it does not belong to (R8):")
    say.raised(lambda: resolve(store, True, AgentInit(snapshot_id=s1.snapshot_id, session_id="someone-else")))
    say.say("a snapshot id of the failed turn (R9):")
    say.raised(lambda: resolve(store, True, AgentInit(snapshot_id=s3.snapshot_id)))

    say.heading("The session's snapshot tree")
    tree = list(store.list_snapshots(session.id)) if isinstance(store, SupportsList) else [s1, s2, s3, s4]
    for line in render_tree(tree, leaf_id=leaf.snapshot_id if leaf else None):
        print(f"   {line}", file=out)
    if isinstance(store, SupportsSessions):
        _service_demo(store, say)
    return tree


def _texts(messages: Sequence[Message]) -> str:
    return " | ".join(m.text if len(m.text) <= 24 else m.text[:21] + "..." for m in messages)


def _service_demo(store: SupportsSessions, say: _Narrator) -> None:
    """Sessions as records: create with a principal, look up, a refused stale append, compaction, a fork."""
    service = SessionService(store)
    say.heading("The session service: a session as a record, with a principal")
    record = service.create(metadata={"principal": "ana"})
    say.say(f"created session {record.id[:8]} for principal ana (version {record.version}, no snapshots yet)")
    for question, answer in [
        ("Where to eat?", "Try Taberna da Rua das Flores."),
        ("And dessert?", "Pasteis de Belem."),
        ("A viewpoint?", "Miradouro da Senhora do Monte."),
        ("Fado tonight?", "A Tasca do Chico, from 21:00."),
    ]:
        last = service.append(record.id, [Message.of_text("user", question), Message.of_text("model", answer)])
    found = service.find_by_metadata("principal", "ana")
    say.say(f"ana's sessions: {[r.id[:8] for r in found.records]} (a lookup by principal, oldest first)")

    say.heading("An append on a stale version writes nothing (compare-and-set)")
    behind = last.version - 1
    stale = service.append(record.id, [Message.of_text("user", "late")], expected_version=behind)
    say.say(f"append expecting version {behind}: ok={stale.ok}; the session is at version {stale.version}, unchanged")

    say.heading("Compaction: the model sees a summary; the full history keeps everything")
    compacted = service.compact(
        record.id,
        MessageCountTrigger(6),
        KeepLastStrategy(2, lambda covered: f"Ana asked {len(covered) // 2} questions about Lisbon food and views."),
    )
    say.say(f"covered {compacted.covered} messages, kept {compacted.kept}")
    say.say(
        f"active view ({len(service.get_active_messages(record.id))}): {_texts(service.get_active_messages(record.id))}"
    )
    everything = service.get_messages(record.id)
    say.say(f"full history ({len(everything)}): {_texts(everything)}")

    say.heading("A fork: a new session from the compacted one, with its full history")
    current = service.find_by_id(record.id)
    assert current is not None and current.leaf_id is not None
    fork = service.fork(current.leaf_id, metadata={"principal": "ana"})
    say.say(f"forked into session {fork.id[:8]}: {len(service.get_messages(fork.id))} messages in its full history")
    service.delete(record.id)
    say.say(f"after deleting the source, the fork still has {len(service.get_messages(fork.id))}")
