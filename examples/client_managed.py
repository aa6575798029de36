"""A client-managed agent: no store on the server; the client sends its state back every turn.

Run it: ``python examples/client_managed.py``. The client's request is the JSON it actually sends
(``{"state": {...}}``, Genkit's ``AgentInit``), decoded with ``from_wire``; the reply carries the new
state as wire JSON for the client to keep. A client that names a ``sessionId`` or ``snapshotId`` to an
agent without a store gets FAILED_PRECONDITION (R2), and a typo in a key gets INVALID_ARGUMENT.
"""

from __future__ import annotations

import json

from genkit_sessions import AgentInit, GenkitError, JsonObject, Message, SessionResolver, from_wire, to_wire


def handle(request_body: str, user_text: str) -> JsonObject:
    """One turn of a client-managed agent: the HTTP body in, the agent's output out."""
    client_json = json.loads(request_body)
    init = from_wire(AgentInit, client_json)  # a dict, or JSON text; strict about unknown keys
    resolution = SessionResolver.resolve(None, False, init)  # R3 with state, R4 without
    if not resolution.ok:
        return {"finishReason": "failed", "error": to_wire(resolution.error)}
    session = resolution.session
    session.add_messages(Message.of_text("user", user_text))
    session.add_messages(Message.of_text("model", f"({len(session.messages)} messages so far)"))
    return {"sessionId": session.id, "state": to_wire(session.final_state()), "finishReason": "stop"}


def main() -> None:
    first = handle("{}", "hello")  # a new conversation: a fresh session under a new UUID (R4)
    print("first turn, session", first["sessionId"])
    body = json.dumps({"state": first["state"]})  # what the client sends back next turn
    second = handle(body, "and again")
    state = second["state"]
    assert isinstance(state, dict) and isinstance(state["messages"], list)
    print("second turn keeps the session:", second["sessionId"] == first["sessionId"], len(state["messages"]))

    for bad in ('{"sessionId": "chat-1"}', '{"stat": {}}'):
        try:
            handle(bad, "hi")
        except GenkitError as error:  # API misuse raises: map it to an HTTP answer
            print(f"{bad} -> HTTP {error.http_code} {error.status}: {error.message[:70]}...")


if __name__ == "__main__":
    main()
