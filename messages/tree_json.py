"""The ``hermes-actors tree --json`` schema: an actor snapshot and a subtree as plain JSON.

Both the CLI (``tree --json``, ``inspect --json``) and the web dashboard show the tree in this one
form. The functions take the wire dicts (``TreeNode`` as ``{"snapshot": {...}, "children": [...]}``,
as :mod:`messages.codec` unstructures it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["budget_of", "node_json", "snapshot_json"]

Wire = dict[str, Any]


def snapshot_json(snapshot: Wire, now: float) -> dict[str, Any]:
    """One actor (a wire ``ActorSnapshot``) as the ``--json`` schema shows it."""
    error = snapshot.get("last_error")
    return {
        "path": snapshot["path"],
        "name": snapshot["path"].rsplit("/", 1)[-1],
        "kind": snapshot["kind"],
        "state": snapshot["state"],
        "activity": snapshot["activity"],
        "mailbox_used": snapshot["mailbox_used"],
        "mailbox_capacity": snapshot["mailbox_capacity"],
        "restarts": snapshot["restarts"],
        "age_seconds": round(max(0.0, now - snapshot["started_at"]), 3),
        "budget": budget_of(snapshot.get("details") or {}),
        "cancel_reason": snapshot.get("cancel_reason"),
        "last_error": (
            {
                "type": error["type"],
                "message": error["message"],
                "traceback": error["traceback"],
                "age_seconds": round(max(0.0, now - error["at"]), 3),
            }
            if error
            else None
        ),
        "details": snapshot.get("details") or {},
    }


def node_json(node: Wire, now: float) -> dict[str, Any]:
    """A subtree (a wire ``TreeNode``) as the ``tree --json`` schema shows it."""
    out = snapshot_json(node["snapshot"], now)
    out["children"] = [node_json(child, now) for child in node["children"]]
    return out


def budget_of(details: dict[str, Any]) -> dict[str, Any] | None:
    """The iteration budget an actor reports (a turn's ``iterations: "used/total"``), if any."""
    budget = details.get("budget")
    if isinstance(budget, dict) and "used" in budget and "total" in budget:
        return {"used": budget["used"], "total": budget["total"]}
    used, sep, total = str(details.get("iterations", "")).partition("/")
    if sep and used.isdigit() and total.isdigit():
        return {"used": int(used), "total": int(total)}
    return None
