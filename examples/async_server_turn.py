"""An async framework's turn on a server-managed session: resolve, run the model, save.

Run it: ``python examples/async_server_turn.py``. It plays three turns of one chat on the in-memory
store's async face (swap in ``DynamoDBSessionStore(...).aio`` for DynamoDB), then shows a turn whose
model times out being saved as failed, and the next turn refusing to resume from it (R13).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from genkit_sessions import (
    AgentInit,
    AsyncSessionStore,
    GenkitError,
    InMemorySessionStore,
    JsonObject,
    Message,
    SessionResolver,
    SessionStoreOptions,
    from_wire,
)


async def model(messages: Sequence[Message]) -> str:
    """Stands in for a model call: answers with how many messages it was shown."""
    await asyncio.sleep(0)
    return f"I have seen {len(messages)} message(s)"


async def run_turn(store: AsyncSessionStore, init_json: JsonObject, user_text: str, tenant: str) -> JsonObject:
    """One turn: the agent's output as the JSON a client receives."""
    init = from_wire(AgentInit, init_json)
    opts = SessionStoreOptions(context={"tenant": tenant})
    resolution = await SessionResolver.aresolve(store, True, init, opts)
    if not resolution.ok:  # R15-R17: the store or the data failed; finish the turn as failed
        return {
            "finishReason": "failed",
            "error": {"status": resolution.error.status, "message": resolution.error.message},
        }
    session = resolution.session
    session.add_messages(Message.of_text("user", user_text))
    try:
        reply = await asyncio.wait_for(model(session.messages), timeout=5)
    except asyncio.TimeoutError:
        error = GenkitError("DEADLINE_EXCEEDED", "the model did not answer within 5 s; send the turn again")
        failed = await session.asave("failed", finish_reason="failed", error=error)
        return {"sessionId": session.id, "snapshotId": failed.snapshot_id, "finishReason": "failed"}
    session.add_messages(Message.of_text("model", reply))
    saved = await session.asave(finish_reason="stop")
    return {"sessionId": session.id, "snapshotId": saved.snapshot_id, "finishReason": "stop", "reply": reply}


async def main() -> None:
    store = InMemorySessionStore().aio
    first = await run_turn(store, {}, "hello", tenant="acme")
    print("turn 1:", first)
    session_id = first["sessionId"]
    assert isinstance(session_id, str)  # JSON values are JsonValue: narrow before use
    for text in ("and again", "once more"):
        print("next turn:", await run_turn(store, {"sessionId": session_id}, text, tenant="acme"))

    # A failed turn is stored, and a session whose leaf failed is not resumed silently (R13).
    resolution = await SessionResolver.aresolve(
        store, True, AgentInit(session_id=session_id), SessionStoreOptions(context={"tenant": "acme"})
    )
    assert resolution.ok
    timed_out = GenkitError("DEADLINE_EXCEEDED", "the model timed out")
    await resolution.session.asave("failed", finish_reason="failed", error=timed_out)
    try:
        await run_turn(store, {"sessionId": session_id}, "are you there?", tenant="acme")
    except GenkitError as error:
        print(f"after a failed turn: {error.status} {error.reason} (HTTP {error.http_code})")


if __name__ == "__main__":
    asyncio.run(main())
