"""execute_code: a child Python process whose tool calls come back through a Unix-socket RPC server.

Public surface: :class:`Sandbox` (one run), :class:`SandboxJob` / :class:`RpcServer` / :class:`RpcCallJob`
(the run, its RPC server actor and its calls in the actor tree), :class:`SandboxResult` and
:class:`SandboxToolCall` (what it produced), :func:`register_execute_code` (the tool), and the errors.
"""

from __future__ import annotations

from actors.sandbox.errors import (
    RpcAuthError,
    RpcCallStopped,
    RpcError,
    RpcRefused,
    SandboxError,
    SandboxSetupError,
    SandboxUnavailable,
)
from actors.sandbox.result import SandboxResult, SandboxStatus, SandboxToolCall
from actors.sandbox.calls import CallTool, RpcCallJob
from actors.sandbox.jobs import SandboxJob
from actors.sandbox.runner import Sandbox, SandboxState, SandboxStatistics
from actors.sandbox.gate import SerialGate, ToolGate
from actors.sandbox.server import RpcServer, RpcServerStatistics
from actors.sandbox.spare import SpareInterpreters
from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, SANDBOX_EXCLUDED_TOOLS, generate_stub_module, sandbox_tools
from actors.sandbox.tool import execute_code_description, execute_code_schema, register_execute_code

__all__ = [
    "SANDBOX_ALLOWED_TOOLS",
    "SANDBOX_EXCLUDED_TOOLS",
    "CallTool",
    "RpcAuthError",
    "RpcCallJob",
    "RpcCallStopped",
    "RpcError",
    "RpcRefused",
    "RpcServer",
    "RpcServerStatistics",
    "Sandbox",
    "SandboxError",
    "SandboxJob",
    "SandboxResult",
    "SandboxSetupError",
    "SandboxState",
    "SandboxStatistics",
    "SandboxStatus",
    "SandboxToolCall",
    "SandboxUnavailable",
    "SerialGate",
    "SpareInterpreters",
    "ToolGate",
    "execute_code_description",
    "execute_code_schema",
    "generate_stub_module",
    "register_execute_code",
    "sandbox_tools",
]
