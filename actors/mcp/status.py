"""The MCP servers' states as the control socket reports them, read from the live tree."""

from __future__ import annotations

from messages.control import McpServerStatus
from messages.supervision import TreeNode

__all__ = ["mcp_statuses"]


def mcp_statuses(mcp: TreeNode | None) -> list[McpServerStatus]:
    """Each configured server from the ``mcp`` subtree: its children, then the disabled entries."""
    if mcp is None:
        return []
    statuses = []
    for node in mcp.children:
        details = node.snapshot.details
        statuses.append(
            McpServerStatus(
                name=details.get("server", node.snapshot.path.rsplit(":", 1)[-1]),
                state=details.get("state", node.snapshot.state.value),
                transport=details.get("transport", ""),
                tools=details.get("tools", 0),
                error=details.get("error"),
                attempts=details.get("attempts", 0),
            )
        )
    for name in mcp.snapshot.details.get("starting", []):
        statuses.append(McpServerStatus(name=name, state="connecting"))
    for name in mcp.snapshot.details.get("disabled", []):
        statuses.append(McpServerStatus(name=name, state="disabled"))
    return statuses

