"""The page as text: Chromium's accessibility tree, one line per node, with refs the model acts by.

Each line is ``- role "name"`` indented by depth, as agent-browser (Hermes's browser) writes it; an element
the model can act on, or a heading, gets ``[ref=eN]``, which ``browser_click`` and ``browser_type`` take as
``@eN``. A ref names the element's ``backendDOMNodeId``: it holds until the next snapshot numbers them
again. The compact view leaves out what only structures the page (unnamed generic containers, inline text
boxes); the full one keeps every node Chromium does not mark ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["Snapshot", "render_snapshot"]

# Roles a model clicks or types into; each gets a ref.
_ACTIONABLE = frozenset({
    "button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "menuitem", "menuitemcheckbox",
    "menuitemradio", "tab", "switch", "slider", "spinbutton", "option", "listbox", "treeitem", "textField",
})  # fmt: skip
_REFERENCED = _ACTIONABLE | {"heading"}
# Roles that only structure the page: left out of the compact view unless named.
_STRUCTURE = frozenset({"generic", "none", "presentation", "group", "GenericContainer", "LayoutTable", "Section"})
_ALWAYS_SKIPPED = frozenset({"InlineTextBox", "LineBreak"})
# Properties worth showing beside a node, in this order.
_SHOWN = ("level", "checked", "selected", "expanded", "disabled", "required", "readonly")
_MAX_NAME = 200


@attrs.frozen
class Snapshot:
    """One rendering of a page.

    Attributes:
        text: the lines.
        refs: each ref (``e1``) and the backend DOM node it names.
    """

    text: str
    refs: Mapping[str, int]


def _value(field: Any) -> Any:
    return field.get("value") if isinstance(field, dict) else None


def _properties(node: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for prop in node.get("properties") or ():
        name = prop.get("name")
        if name in _SHOWN:
            found[name] = _value(prop.get("value"))
    return found


def _line(node: Mapping[str, Any], role: str, ref: str | None) -> str:
    name = str(_value(node.get("name")) or "").replace("\n", " ").strip()
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME] + "…"
    parts = [f"- {role}"]
    if name:
        parts.append(f'"{name}"')
    if ref is not None:
        parts.append(f"[ref={ref}]")
    for key, value in _properties(node).items():
        if value is None or value is False or value == "false":
            continue
        parts.append(f"[{key}]" if value is True or value == "true" else f"[{key}={value}]")
    field_value = _value(node.get("value"))
    if role in _ACTIONABLE and field_value not in (None, ""):
        parts.append(f': "{str(field_value)[:_MAX_NAME]}"')
    return " ".join(parts)


def render_snapshot(nodes: Sequence[Mapping[str, Any]], *, full: bool) -> Snapshot:
    """The snapshot of ``Accessibility.getFullAXTree``'s ``nodes`` (the root first)."""
    by_id = {node["nodeId"]: node for node in nodes if "nodeId" in node}
    lines: list[str] = []
    refs: dict[str, int] = {}
    if not nodes:
        return Snapshot("(empty page)", refs)
    # Depth-first with an explicit stack: a deep page must not exhaust Python's recursion limit.
    stack: list[tuple[str, int]] = [(nodes[0]["nodeId"], 0)]
    seen: set[str] = set()
    while stack:
        node_id, depth = stack.pop()
        node = by_id.get(node_id)
        if node is None or node_id in seen:
            continue
        seen.add(node_id)
        role = str(_value(node.get("role")) or "")
        name = _value(node.get("name"))
        shown = not node.get("ignored") and role not in _ALWAYS_SKIPPED and role != "RootWebArea"
        if shown and not full and role in _STRUCTURE and not name:
            shown = False
        if shown and role == "StaticText":
            # Text whose parent already says it (a link's or a button's name) is said once.
            parent = by_id.get(node.get("parentId", ""))
            if parent is not None and _value(parent.get("name")) == name:
                shown = False
            role = "text"
        child_depth = depth
        if shown:
            ref = None
            backend = node.get("backendDOMNodeId")
            if role in _REFERENCED and isinstance(backend, int):
                ref = f"e{len(refs) + 1}"
                refs[ref] = backend
            lines.append("  " * depth + _line(node, role, ref))
            child_depth = depth + 1
        stack.extend((child, child_depth) for child in reversed(node.get("childIds") or ()))
    return Snapshot("\n".join(lines) or "(empty page)", refs)
