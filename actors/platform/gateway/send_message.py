"""``send_message``: the model sends a message to a chat on a connected messaging platform.

A side effect across platforms, so it is never callable from ``execute_code`` and never offered to a
cron run or a subagent (it must not happen unsupervised: docs/DECISIONS.md#d-script-tool-audit); with
``approvals.send_message`` every send asks first, like a dangerous command. ``MEDIA:/path`` lines attach
files, each only if the session's own sandbox policy lets its tools read it.
"""

from __future__ import annotations

from typing import Any

import trio

from markup import extract_media
from actors.platform.outbound import (
    DeliveryFailed,
    Destination,
    OutboundRegistry,
    PlatformNotConnected,
    UnknownDestination,
)
from config.terminal import ApprovalsConfig
from tools.context import ToolContext
from tools.errors import ToolError
from tools.jail.attachments import check_files
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.side_effects import approve_side_effect

__all__ = ["TOOLSET", "TOOL_NAME", "register_send_message"]

TOOL_NAME = "send_message"
TOOLSET = "messaging"
#: The longest message the tool takes (a platform splits what it must).
MAX_MESSAGE = 20_000

_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Send a message to a chat on a connected messaging platform, or list where you can send. 'target' is "
        "'platform' (its home channel), 'platform:chat_id' or 'platform:chat_id:thread_id' (for example "
        "'telegram:-1001234567890' or 'discord'). Use it only when the user asked for a message to go "
        "somewhere; your reply to the user reaches them without it. A line 'MEDIA:/absolute/path' attaches "
        "that file."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["send", "list"], "description": "send (the default) or list"},
            "target": {"type": "string", "description": "platform, platform:chat_id or platform:chat_id:thread_id"},
            "message": {"type": "string", "description": "The text to send (Markdown)."},
        },
        "required": [],
    },
}


def register_send_message(registry: ToolRegistry, outbound: OutboundRegistry, approvals: ApprovalsConfig) -> None:
    """Register ``send_message`` (toolset ``messaging``) over the daemon's connected platforms."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await _run(args, ctx, outbound, approvals)

    registry.register(TOOL_NAME, TOOLSET, _SCHEMA, handler, emoji="📨")


async def _run(args: dict[str, Any], ctx: ToolContext, outbound: OutboundRegistry, approvals: ApprovalsConfig) -> ToolResult:
    action = args.get("action") or "send"
    if action == "list":
        return ToolResult({"connected": outbound.connected(), "targets": "platform, platform:chat_id or platform:chat_id:thread_id"})
    if action != "send":
        raise ToolError("'action' must be 'send' or 'list'.")
    target, message = args.get("target"), args.get("message")
    if not isinstance(target, str) or not target.strip():
        raise ToolError("'send' needs 'target' (see action 'list').")
    if not isinstance(message, str) or not message.strip():
        raise ToolError("'send' needs 'message', a non-empty string.")
    if len(message) > MAX_MESSAGE:
        raise ToolError(f"'message' is {len(message):,} characters; the most is {MAX_MESSAGE:,}.")
    try:
        destination = Destination.parse(target)
    except UnknownDestination as exc:
        raise ToolError(str(exc)) from exc
    if destination.platform not in outbound.connected():
        raise ToolError(f"{destination.platform!r} is not connected; connected now: {', '.join(outbound.connected()) or 'none'}.")
    body, media = extract_media(message)
    checks = await trio.to_thread.run_sync(check_files, ctx.jail.policy, media)
    refused = [f"{check.path} ({check.refusal})" for check in checks if check.host_path is None]
    if refused:
        raise ToolError(f"Not sent: these files cannot be attached: {'; '.join(refused)}.")
    if approvals.send_message:
        await approve_side_effect(
            ctx, tool=TOOL_NAME, what=f"send to {destination}: {body[:300]}", description="send a message to a chat",
            timeout=approvals.timeout, refused="Not sent: sending",
        )
    try:
        await outbound.deliver(destination, body, [check.host_path for check in checks if check.host_path])
    except (PlatformNotConnected, UnknownDestination, DeliveryFailed) as exc:
        raise ToolError(f"Not sent: {exc}") from exc
    return ToolResult({"ok": True, "target": str(destination), "attachments": len(checks)})

