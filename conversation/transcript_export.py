"""A stored session rendered for people: Markdown and a self-contained HTML page, beside the JSON lines.

Both are made from the store's own export (``SessionStore.export_jsonl``: a ``session`` line, the
messages, the transcript records), so every format shows the same conversation. A transcript is hostile
input: in HTML every piece of it is escaped, and the page's content security policy forbids scripts and
every network fetch, so even a mistake in the escaping could neither run code nor call home. Every text
passes the secret redaction once more on its way out (it is idempotent: what the store redacted stays as
it was), since a rendered export is made to be shared.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, Final

from messages.session_records import EXPORT_FORMATS
from tools.redact import redact_secrets

__all__ = ["EXPORT_FORMATS", "ExportFormatError", "render_export"]

# No script, no fetch of any kind: styles inline, images only as data: URLs.
_CSP: Final = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_STYLE: Final = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
header{border-bottom:1px solid #ccc;margin-bottom:1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}dt{color:#666}dd{margin:0}
.message{border-left:4px solid #bbb;padding:.2rem .8rem;margin:1rem 0}
.user{border-color:#2b6cb0}.assistant{border-color:#2f855a}.tool{border-color:#b7791f}.system{border-color:#718096}
.role{font-weight:600;text-transform:capitalize}.time{color:#888;font-size:.85em;margin-left:.5rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f5;padding:.5rem;margin:.3rem 0}
.text{white-space:pre-wrap}summary{cursor:pointer;color:#444}
"""


class ExportFormatError(ValueError):
    """An export format that is none of :data:`EXPORT_FORMATS`, or an export that is not the store's JSON lines."""


def render_export(jsonl: str, fmt: str) -> str:
    """The store's JSON-lines export of one session, in ``fmt``.

    Args:
        jsonl: what ``SessionStore.export_jsonl`` returned.
        fmt: ``jsonl`` (returned as it is), ``md`` or ``html``.

    Raises:
        ExportFormatError: an unknown format, or a line that is not a JSON object.
    """
    if fmt == "jsonl":
        return jsonl
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise ExportFormatError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    session, messages = _read(jsonl)
    return renderer(session, messages)


def _read(jsonl: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session line and the stored messages, oldest first (transcript records are not shown)."""
    session: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    for number, line in enumerate(jsonl.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ExportFormatError(f"export line {number} is not JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise ExportFormatError(f"export line {number} is not a JSON object")
        if record.get("type") == "session":
            session = record
        elif record.get("type") == "message" and isinstance(record.get("message"), dict):
            messages.append(record)
    return session, messages


def _when(value: Any) -> str:
    """A stored time (seconds since the epoch) as UTC ISO 8601, '' when there is none."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _text(content: Any) -> str:
    """A message's content as text: a string as it is, the text parts of a list, anything else as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and str(part.get("type", "")).startswith("image"):
                parts.append("[image]")
            else:
                parts.append(json.dumps(part, ensure_ascii=False))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, indent=2)


def _arguments(call: dict[str, Any]) -> str:
    """A tool call's arguments, pretty-printed when they are JSON."""
    raw = (call.get("function") or {}).get("arguments", "")
    try:
        return json.dumps(json.loads(raw), ensure_ascii=False, indent=2) if isinstance(raw, str) else json.dumps(raw)
    except ValueError:
        return str(raw)


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _tool_names(messages: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Tool-call id -> tool name, from the assistant messages (a tool result names only its call)."""
    names: dict[str, str] = {}
    for stored in messages:
        for call in _calls(stored["message"]):
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name", "?"))
    return names


def _tool_name(message: dict[str, Any], names: dict[str, str]) -> str:
    """The tool a result answers: its call's name, else the result's own ``name``."""
    return names.get(str(message.get("tool_call_id"))) or str(message.get("name") or "?")


def _facts(session: dict[str, Any]) -> list[tuple[str, str]]:
    """The session's row as label/value pairs for the export's head."""
    facts = [
        ("id", session.get("id")),
        ("source", session.get("source")),
        ("model", session.get("model")),
        ("directory", session.get("cwd")),
        ("started", _when(session.get("started_at"))),
        ("last active", _when(session.get("last_active"))),
        ("ended", _when(session.get("ended_at")) + (f" ({session['end_reason']})" if session.get("end_reason") else "")),
        ("messages", session.get("message_count")),
        ("tokens", f"{session.get('tokens_in', 0):,} in, {session.get('tokens_out', 0):,} out"),
    ]
    return [(label, redact_secrets(str(value))) for label, value in facts if value not in (None, "")]


def _fence(text: str) -> str:
    """A Markdown code fence longer than any run of backticks in ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _fenced(text: str, language: str = "") -> str:
    fence = _fence(text)
    return f"{fence}{language}\n{text}\n{fence}"


def _markdown(session: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    title = redact_secrets(str(session.get("title") or session.get("id") or "session"))
    out = [f"# {title}", ""]
    out += [f"- **{label}**: {value}" for label, value in _facts(session)]
    names = _tool_names(messages)
    for stored in messages:
        message = stored["message"]
        role = str(message.get("role", "message"))
        heading = f"tool result: {_tool_name(message, names)}" if role == "tool" else role
        when = _when(stored.get("created_at"))
        out += ["", f"## {heading}" + (f" · {when}" if when else ""), ""]
        text = redact_secrets(_text(message.get("content")))
        if role == "tool":
            out.append(_fenced(text))
        elif text:
            out.append(text)
        for call in _calls(message):
            name = (call.get("function") or {}).get("name", "?")
            out += ["", f"**tool call** `{name}` ({call.get('id', '')})", "", _fenced(redact_secrets(_arguments(call)), "json")]
    return "\n".join(out) + "\n"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html(session: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    title = redact_secrets(str(session.get("title") or session.get("id") or "session"))
    names = _tool_names(messages)
    body = [f"<header><h1>{_e(title)}</h1><dl>"]
    body += [f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in _facts(session)]
    body.append("</dl></header><main>")
    for stored in messages:
        message = stored["message"]
        role = str(message.get("role", "message"))
        css = role if role in ("user", "assistant", "tool", "system") else "other"
        when = _when(stored.get("created_at"))
        text = redact_secrets(_text(message.get("content")))
        body.append(f'<section class="message {css}"><div><span class="role">{_e(role)}</span>')
        if when:
            body.append(f'<span class="time">{_e(when)}</span>')
        body.append("</div>")
        if role == "tool":
            name = _tool_name(message, names)
            lines = text.count("\n") + 1 if text else 0
            body.append(f"<details><summary>result of {_e(name)} ({lines} lines)</summary><pre>{_e(text)}</pre></details>")
        elif text:
            body.append(f'<div class="text">{_e(text)}</div>')
        for call in _calls(message):
            name = (call.get("function") or {}).get("name", "?")
            arguments = redact_secrets(_arguments(call))
            body.append(f"<details><summary>tool call: {_e(name)}</summary><pre>{_e(arguments)}</pre></details>")
        body.append("</section>")
    body.append("</main>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


_RENDERERS: Final[dict[str, Callable[[dict[str, Any], list[dict[str, Any]]], str]]] = {"md": _markdown, "html": _html}
