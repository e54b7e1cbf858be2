"""Errors raised by the tool layer.

The tree::

    ToolError (Exception)                     base of everything below
    ├── RegistrationError (ValueError)        a bad ``register`` call
    │   └── ToolShadowingError                name already owned by another toolset
    ├── ToolsetError (ValueError)             a toolset definition that cannot be resolved
    │   ├── UnknownToolsetError (+ KeyError)  a name no toolset carries
    │   └── ToolsetCycleError                 ``includes`` loop back on themselves
    ├── ArgumentValidationError (ValueError)  arguments not matching a tool's JSON schema
    ├── ToolInputError (ValueError)           a call that cannot be done as asked (file missing, ...)
    ├── ClarifyUnavailable (RuntimeError)     nobody can answer a clarify question
    └── CapabilityUnavailable (RuntimeError)  delegate / sandbox not offered by this context

A handler that cannot do what it was asked raises ``ToolError`` (or a subclass)
with the message the model sees; ``tools.dispatch.dispatch`` turns it, and any
other failure, into a ``{"error": ...}`` result, never a traceback.
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A tool call failed; ``str()`` is the message the model sees.

    Base class of every error raised by the tool layer.

    Args:
        message: what went wrong and, where possible, what to do instead.
        **details: JSON values the result shows after the message
            (``{"error": message, **details}``), e.g. the search backend that failed.
    """

    def __init__(self, message: str = "", **details: Any) -> None:
        super().__init__(message)
        self.details = details


class RegistrationError(ToolError, ValueError):
    """A tool registration was refused (bad name, schema or options)."""


class ToolShadowingError(RegistrationError):
    """Registering would silently replace a tool owned by a different toolset."""


class ToolsetError(ToolError, ValueError):
    """A toolset definition could not be resolved."""


class UnknownToolsetError(ToolsetError, KeyError):
    """A toolset name was referenced that no registered toolset carries."""

    def __str__(self) -> str:
        # KeyError quotes its argument; keep the message readable instead.
        return str(self.args[0]) if self.args else ""


class ToolsetCycleError(ToolsetError):
    """Toolset ``includes`` form a cycle."""


class ArgumentValidationError(ToolError, ValueError):
    """Tool arguments do not match the tool's JSON schema; the message is for the model."""


class ToolInputError(ToolError, ValueError):
    """A tool call that cannot be carried out as asked; the message tells the model what to do instead."""


class ClarifyUnavailable(ToolError, RuntimeError):
    """No one attached to the session can answer a clarifying question."""


class ClarifyTimedOut(RuntimeError):
    """A clarifying question was asked and nobody answered before its deadline (``clarify.timeout`` or ``agent.clarify_timeout``)."""


class CapabilityUnavailable(ToolError, RuntimeError):
    """The execution context does not offer this capability (delegation, sandbox, background)."""
