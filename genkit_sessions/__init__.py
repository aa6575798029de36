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
    Messages,
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
from genkit_sessions.service import (
    AppendResult,
    AsyncChatMemoryStore,
    AsyncSessionService,
    ChatMemoryStore,
    Compaction,
    CompactionResult,
    CompactionStrategy,
    CompactionTrigger,
    KeepLastStrategy,
    MessageCountTrigger,
    SessionService,
    TokenCountTrigger,
)
from genkit_sessions.stores import (
    AsyncInMemorySessionStore,
    AsyncSessionStore,
    InMemorySessionStore,
    OffloadedAsyncStore,
    SessionRecord,
    SessionStore,
)
from genkit_sessions.stores.protocol import CallOptions, HistoryWindow, SessionPage

__version__ = "0.1.0"

__all__ = [
    "TERMINAL_STATUSES",
    "AgentInit",
    "AppendResult",
    "Artifact",
    "AsyncChatMemoryStore",
    "AsyncInMemorySessionStore",
    "AsyncSessionService",
    "AsyncSessionStore",
    "CallOptions",
    "ChatMemoryStore",
    "Compaction",
    "CompactionResult",
    "CompactionStrategy",
    "CompactionTrigger",
    "CustomPart",
    "DataPart",
    "ErrorInfo",
    "FinishReason",
    "FrozenDict",
    "GenkitError",
    "HistoryWindow",
    "InMemorySessionStore",
    "KeepLastStrategy",
    "Media",
    "MediaPart",
    "Message",
    "Messages",
    "MessageCountTrigger",
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
    "SessionPage",
    "SessionRecord",
    "SessionResolver",
    "SessionService",
    "SessionSnapshot",
    "SessionState",
    "SessionStore",
    "SessionStoreOptions",
    "SnapshotStatus",
    "Status",
    "TextPart",
    "TokenCountTrigger",
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
