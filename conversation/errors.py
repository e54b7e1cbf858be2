"""Errors raised by the conversation's libraries (the session actor's own are in ``actors.session.errors``).

    SessionLibraryError (Exception)
    ├── HistoryInvariantError (ValueError)   a history breaks the role/tool-call rules
    ├── EmptySteerError (ValueError)         a steer with no text after stripping
    ├── ToolCallValidationError (ValueError) a tool call that cannot be repaired (reported to the model, never raised past the turn)
    └── CompressionError (RuntimeError)      compression cannot run on this history (e.g. nothing to compress)
"""

from __future__ import annotations


class SessionLibraryError(Exception):
    """Base of every error the session libraries raise."""


class HistoryInvariantError(SessionLibraryError, ValueError):
    """A message history violates alternation or tool-call pairing.

    ``index`` is the position of the first offending message (``-1`` when the problem is the end of the history).
    """

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class EmptySteerError(SessionLibraryError, ValueError):
    """A steer was empty or only whitespace."""


class ToolCallValidationError(SessionLibraryError, ValueError):
    """A tool call could not be validated or repaired."""


class CompressionError(SessionLibraryError, RuntimeError):
    """Compression could not run on the given history."""
