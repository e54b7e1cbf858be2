"""Plain-text and JSON forms of the daemon's replies, for the CLI (no Trio, no rich).

Tree and snapshot functions take the wire dicts as received (``TreeNode`` as
``{"snapshot": {...}, "children": [...]}``), so ``tree --json`` never builds
typed messages. The JSON forms are the stable schema documented in
``cli/README.md``; the text forms are for people and may change.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from messages.session_records import SessionSummary
from messages.tree_json import budget_of, node_json, snapshot_json

__all__ = ["format_inspect", "format_ps", "format_sessions", "format_tree", "node_json", "ps_rows", "snapshot_json", "walk"]


Wire = dict[str, Any]

#: The text tree shows this much of an actor's activity (the JSON form has all of it).
_ACTIVITY_CHARS = 72


def walk(node: Wire) -> list[Wire]:
    """Every wire snapshot of a subtree, depth first."""
    out: list[Wire] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current["snapshot"])
        stack.extend(reversed(current["children"]))
    return out


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _line(snapshot: Wire, now: float) -> str:
    name = snapshot["path"].rsplit("/", 1)[-1] or "(root)"
    parts = [f"{name} [{snapshot['kind']}]", snapshot["state"]]
    budget = budget_of(snapshot.get("details") or {})
    if budget is not None:
        parts.append(f"budget {budget['used']}/{budget['total']}")
    if snapshot["mailbox_used"]:
        parts.append(f"mailbox {snapshot['mailbox_used']}/{snapshot['mailbox_capacity']}")
    if snapshot["restarts"]:
        parts.append(f"restarts {snapshot['restarts']}")
    parts.append(_age(now - snapshot["started_at"]))
    if snapshot["activity"]:
        activity = " ".join(str(snapshot["activity"]).split())
        parts.append(f"- {activity[:_ACTIVITY_CHARS]}{'…' if len(activity) > _ACTIVITY_CHARS else ''}")
    return "  ".join(parts)


def format_tree(node: Wire, now: float) -> str:
    """The tree, one actor a line, drawn with box characters."""
    lines = [_line(node["snapshot"], now)]

    def draw(children: list[Wire], prefix: str) -> None:
        for index, child in enumerate(children):
            last = index == len(children) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{_line(child['snapshot'], now)}")
            draw(child["children"], prefix + ("    " if last else "│   "))

    draw(node["children"], "")
    return "\n".join(lines)


#: The kind of every session actor, subagents included (a subagent is a session named ``subagent:<n>``).
_SESSION_KIND = "session"


def ps_rows(tree: Wire, now: float) -> list[dict[str, Any]]:
    """One row per session (subagents included): what it is running now."""
    rows: list[dict[str, Any]] = []

    def own_work(node: Wire, row: dict[str, Any]) -> None:
        # Everything below a session up to (not into) nested sessions belongs to it.
        for child in node["children"]:
            kind = child["snapshot"]["kind"]
            if kind == _SESSION_KIND:
                row["subagents"] += 1
                visit(child, nested=True)
                continue
            if kind == "turn":
                row["turn_running"] = True
            elif kind == "tool":
                row["tools"].append(child["snapshot"]["path"])
            elif kind == "process":
                row["processes"].append(child["snapshot"]["path"])
            own_work(child, row)

    def visit(node: Wire, nested: bool = False) -> None:
        snapshot = node["snapshot"]
        if snapshot["kind"] != _SESSION_KIND:
            for child in node["children"]:
                visit(child, nested)
            return
        details = snapshot.get("details") or {}
        row: dict[str, Any] = {
            "session_id": str(details.get("session_id") or snapshot["path"].rsplit(":", 1)[-1]),
            "path": snapshot["path"],
            # A session inside another session is that session's subagent (the schema's "subagent").
            "kind": "subagent" if nested else "session",
            "state": snapshot["state"],
            "activity": snapshot["activity"],
            "age_seconds": round(max(0.0, now - snapshot["started_at"]), 3),
            "turn_running": False,
            "tools": [],
            "processes": [],
            "subagents": 0,
        }
        rows.append(row)
        own_work(node, row)

    visit(tree)
    return rows


#: Width of ``ps``'s session column; longer paths lose their middle (``--json`` has them whole).
_PS_PATH_CHARS = 28


def _ellipsize_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: its start and end kept, an ellipsis between."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return f"{text[:head]}…{text[len(text) - (width - 1 - head):]}"


def format_ps(rows: list[dict[str, Any]]) -> str:
    """The ``ps`` table; a subagent's row is indented under its parent's."""
    if not rows:
        return "no live sessions"
    lines = [f"{'SESSION':<{_PS_PATH_CHARS}} {'STATE':<9} {'AGE':>7}  {'TURN':<4} {'TOOLS':>5} {'PROCS':>5} {'SUBS':>4}  ACTIVITY"]
    for row in rows:
        if row["kind"] == "subagent":
            name = "  " + _ellipsize_middle(row["path"].rsplit("/", 1)[-1], _PS_PATH_CHARS - 2)
        else:
            name = _ellipsize_middle(row["path"].removeprefix("sessions/"), _PS_PATH_CHARS)
        activity = " ".join(str(row["activity"]).split())
        lines.append(
            f"{name:<{_PS_PATH_CHARS}} {row['state']:<9} {_age(row['age_seconds']):>7}  "
            f"{'yes' if row['turn_running'] else '-':<4} {len(row['tools']):>5} {len(row['processes']):>5} "
            f"{row['subagents']:>4}  {_ellipsize_middle(activity, _ACTIVITY_CHARS)}"
        )
    return "\n".join(lines)


def format_inspect(snapshot: Wire, now: float) -> str:
    """One actor's snapshot, field by field, with its last error's traceback."""
    data = snapshot_json(snapshot, now)
    lines = [f"{key}: {data[key]}" for key in ("path", "kind", "state", "activity", "age_seconds", "restarts", "cancel_reason")]
    lines.append(f"mailbox: {data['mailbox_used']}/{data['mailbox_capacity']}")
    for key, value in sorted(data["details"].items()):
        lines.append(f"{key}: {value}")
    error = data["last_error"]
    if error is not None:
        lines.append(f"last error: {error['type']}: {error['message']}")
        lines.append(error["traceback"].rstrip())
    return "\n".join(lines)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def format_sessions(sessions: list[SessionSummary], *, flat: bool = False, width: int | None = None) -> str:
    """The ``sessions list`` table; unless ``flat``, a session's subagents are a count after its title.

    With ``width`` (a terminal's columns) each row is cut to fit, the cut marked, rather than wrapped
    under the first column; without it (a pipe) rows are whole.
    """
    if not sessions:
        return "no sessions"
    ids = max(len("ID"), *(len(info.id) for info in sessions))
    lines = [f"{'ID':<{ids}} {'STARTED':<16} {'MSGS':>5} {'COST':>8} {'LIVE':<4} {'SOURCE':<8} TITLE / PREVIEW"]
    for info in sessions:
        label = info.title or info.preview.replace("\n", " ")[:60]
        if info.subagents and not flat:
            label = f"{label} [+{info.subagents} subagent{'s' if info.subagents > 1 else ''}]"
        ended = f" (ended: {info.end_reason})" if info.ended_at else ""
        lines.append(
            f"{info.id:<{ids}} {_when(info.started_at):<16} {info.message_count:>5} {_cost(info):>8} "
            f"{'yes' if info.live else '-':<4} "
            f"{info.source:<8} {label}{ended}"
        )
    if width is not None:
        lines = [line if len(line) <= width else line[: width - 1] + "…" for line in lines]
    return "\n".join(lines)


def _cost(info: SessionSummary) -> str:
    """The estimated cost; "n/a" when tokens were spent on a model without a known price (never $0)."""
    if info.cost > 0:
        return f"${info.cost:.4f}" if info.cost < 1 else f"${info.cost:.2f}"
    return "n/a" if info.tokens_in or info.tokens_out else "$0"
