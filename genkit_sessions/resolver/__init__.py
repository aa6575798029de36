"""The resolver: rules R1-R17 (``rules``), their sync and async drivers, and the turn's session."""

from genkit_sessions.resolver.options import ResumePolicy, SessionStoreOptions, StateValidator
from genkit_sessions.resolver.resolver import Resolution, ResolutionFailure, ResolvedSession, SessionResolver
from genkit_sessions.resolver.rules import ResolutionSource
from genkit_sessions.resolver.session import Session

__all__ = [
    "Resolution",
    "ResolutionFailure",
    "ResolvedSession",
    "ResolutionSource",
    "ResumePolicy",
    "Session",
    "SessionResolver",
    "SessionStoreOptions",
    "StateValidator",
]
