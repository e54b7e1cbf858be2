"""execute_code: a child Python process whose tool calls come back through a Unix-socket RPC server.

Public surface: :class:`Sandbox` / :func:`run_sandbox` (one run), :class:`SandboxResult` and
:class:`SandboxToolCall` (what it produced), :func:`register_execute_code` (the tool), and the errors.
"""

from __future__ import annotations

from actors.sandbox.errors import (
    RpcAuthError,
    RpcError,
    RpcRefused,
    SandboxError,
    SandboxSetupError,
    SandboxUnavailable,
)
from actors.sandbox.result import SandboxResult, SandboxStatus, SandboxToolCall
from actors.sandbox.runner import Sandbox, SandboxState, SandboxStatistics, run_sandbox
from actors.sandbox.server import RpcServer, RpcServerStatistics, SerialGate, ToolGate
from actors.sandbox.stubs import SANDBOX_ALLOWED_TOOLS, SANDBOX_EXCLUDED_TOOLS, generate_stub_module, sandbox_tools
from actors.sandbox.tool import execute_code_schema, register_execute_code

__all__ = [
    "SANDBOX_ALLOWED_TOOLS",
    "SANDBOX_EXCLUDED_TOOLS",
    "RpcAuthError",
    "RpcError",
    "RpcRefused",
    "RpcServer",
    "RpcServerStatistics",
    "Sandbox",
    "SandboxError",
    "SandboxResult",
    "SandboxSetupError",
    "SandboxState",
    "SandboxStatistics",
    "SandboxStatus",
    "SandboxToolCall",
    "SandboxUnavailable",
    "SerialGate",
    "ToolGate",
    "execute_code_schema",
    "generate_stub_module",
    "register_execute_code",
    "run_sandbox",
    "sandbox_tools",
]
