"""Sessions as records (contract section 6): the session service, its async twin, and compaction."""

from genkit_sessions.service.chat_memory import AsyncChatMemoryStore, ChatMemoryStore
from genkit_sessions.service.compaction import (
    Compaction,
    CompactionStrategy,
    CompactionTrigger,
    KeepLastStrategy,
    MessageCountTrigger,
    Summarizer,
    TokenCountTrigger,
    approximate_tokens,
    safe_boundary,
)
from genkit_sessions.service.service import AppendResult, AsyncSessionService, CompactionResult, SessionService

__all__ = [
    "AsyncChatMemoryStore",
    "ChatMemoryStore",
    "AppendResult",
    "AsyncSessionService",
    "Compaction",
    "CompactionResult",
    "CompactionStrategy",
    "CompactionTrigger",
    "KeepLastStrategy",
    "MessageCountTrigger",
    "SessionService",
    "Summarizer",
    "TokenCountTrigger",
    "approximate_tokens",
    "safe_boundary",
]
