"""Tools: what the model can do, and the one path every call takes.

The public surface of the tool layer (handlers live in their own modules):

- ``ToolRegistry`` / ``ToolEntry`` (``tools.registry``): registered tools, definitions for the model.
- ``ToolsetCatalog`` / ``Toolset`` (``tools.toolsets``): which tools a session sees.
- ``dispatch`` (``tools.dispatch``): lookup, validation, handler, cap — for the agent loop and the sandbox.
- ``ToolResult`` / ``ToolReply`` / ``error_text`` (``tools.results``): what a handler returns, what a call
  hands back (text and ``ok``), and the one writer of the ``{"error": ...}`` text.
- ``can_run_in_parallel`` / ``ToolConcurrencyGate`` (``tools.parallel``): when calls may overlap.
- ``ToolContext`` and friends (``tools.context``): the session as handlers see it.
- ``redact_secrets`` / ``find_threats``: secret redaction and prompt-injection scanning.
- ``register_core_tools`` (``tools.builtin``): files, search, memory, todo, clarify.
"""

from __future__ import annotations

from tools.context import ApprovalDecision, ApprovalRequest, SessionSearchStore, ShellState, ToolContext
from tools.dispatch import dispatch
from tools.errors import (
    ArgumentValidationError,
    CapabilityUnavailable,
    ClarifyUnavailable,
    RegistrationError,
    ToolError,
    ToolInputError,
    ToolsetCycleError,
    ToolsetError,
    ToolShadowingError,
    UnknownToolsetError,
)
from tools.parallel import GateStatistics, ToolConcurrencyGate, can_run_in_parallel
from tools.redact import redact_secrets
from tools.registry import ToolEntry, ToolRegistry
from tools.results import ToolReply, ToolResult, error_text
from tools.threats import find_threats
from tools.toolsets import CORE_TOOLSETS, Toolset, ToolsetCatalog

__all__ = [
    "CORE_TOOLSETS",
    "ApprovalDecision",
    "ApprovalRequest",
    "ArgumentValidationError",
    "CapabilityUnavailable",
    "ClarifyUnavailable",
    "GateStatistics",
    "RegistrationError",
    "SessionSearchStore",
    "ShellState",
    "ToolConcurrencyGate",
    "ToolContext",
    "ToolEntry",
    "ToolError",
    "ToolInputError",
    "ToolRegistry",
    "ToolReply",
    "ToolResult",
    "ToolShadowingError",
    "Toolset",
    "ToolsetCatalog",
    "ToolsetCycleError",
    "ToolsetError",
    "UnknownToolsetError",
    "can_run_in_parallel",
    "dispatch",
    "error_text",
    "find_threats",
    "redact_secrets",
]
