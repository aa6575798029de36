"""genkit_sessions: agent sessions as trees of snapshots, and the rules that resolve them.

Start here::

    from genkit_sessions import AgentInit, InMemorySessionStore, SessionResolver

    store = InMemorySessionStore()
    resolution = SessionResolver.resolve(store, True, AgentInit())
    session = resolution.session
    ...
    session.save(finish_reason="stop")
"""

from genkit_sessions.errors import GenkitError, Reason, Status
from genkit_sessions.model import (
    TERMINAL_STATUSES,
    AgentInit,
    Artifact,
    CustomPart,
    DataPart,
    ErrorInfo,
    FinishReason,
    FrozenDict,
    Media,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    Resource,
    ResourcePart,
    Role,
    SessionSnapshot,
    SessionState,
    SnapshotStatus,
    TextPart,
    ToolRequest,
    ToolRequestPart,
    ToolResponse,
    ToolResponsePart,
    UnknownPart,
    from_wire,
    mint_id,
    thaw,
    to_wire,
)
from genkit_sessions.resolver import (
    Resolution,
    ResolutionSource,
    ResumePolicy,
    Session,
    SessionResolver,
    SessionStoreOptions,
)
from genkit_sessions.stores import (
    AsyncInMemorySessionStore,
    AsyncSessionStore,
    InMemorySessionStore,
    OffloadedAsyncStore,
    SessionRecord,
    SessionStore,
)

__version__ = "0.1.0"

__all__ = [
    "TERMINAL_STATUSES",
    "AgentInit",
    "Artifact",
    "AsyncInMemorySessionStore",
    "AsyncSessionStore",
    "CustomPart",
    "DataPart",
    "ErrorInfo",
    "FinishReason",
    "FrozenDict",
    "GenkitError",
    "InMemorySessionStore",
    "Media",
    "MediaPart",
    "Message",
    "OffloadedAsyncStore",
    "Part",
    "Reason",
    "ReasoningPart",
    "Resolution",
    "ResolutionSource",
    "Resource",
    "ResourcePart",
    "ResumePolicy",
    "Role",
    "Session",
    "SessionRecord",
    "SessionResolver",
    "SessionSnapshot",
    "SessionState",
    "SessionStore",
    "SessionStoreOptions",
    "SnapshotStatus",
    "Status",
    "TextPart",
    "ToolRequest",
    "ToolRequestPart",
    "ToolResponse",
    "ToolResponsePart",
    "UnknownPart",
    "from_wire",
    "mint_id",
    "thaw",
    "to_wire",
]
